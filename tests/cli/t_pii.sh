#!/usr/bin/env bash
# sluice filter with configs/filters/pii.yaml: redacted text, per-kind counts in the
# manifest, --annotate spans, placeholders from --set, a bad kind named with file:line.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROOTDIR=$(cd "$(dirname "$0")/../.." && pwd)
CFG=$ROOTDIR/configs/filters/pii.yaml

python3 - "$T/in.jsonl" <<'PY'
import json, sys
docs = ["Mail john.doe@example.com or +44 20 7946 0958, card 4111 1111 1111 1111.",
        "Version 1.2.3 of 2024-01-15, ISBN 978-3-16-148410-0, logo@2x.png.",
        "From 8.8.8.8 and 2001:db8::1: SSN 078-05-1121, IBAN GB29NWBK60161331926819."]
with open(sys.argv[1], "w") as f:
    for i, d in enumerate(docs):
        f.write(json.dumps({"id": str(i), "text": d}) + "\n")
PY

case_ "pii.yaml redacts and counts per kind"
run "$SLUICE" filter --config "$CFG" --out "$T/o" "$T/in.jsonl"
expect_rc 0
zstdcat "$T/o/part-00000.jsonl.zst" > "$T/o.jsonl"
python3 - "$T/o.jsonl" <<'PY' && ok || fail "redacted texts differ"
import json, sys
t = [json.loads(l)["text"] for l in open(sys.argv[1])]
assert t[0] == "Mail <EMAIL> or <PHONE_NUMBER>, card <CREDIT_CARD>.", t[0]
assert t[1] == "Version 1.2.3 of 2024-01-15, ISBN 978-3-16-148410-0, logo@2x.png.", t[1]
assert t[2] == "From <IP_ADDRESS> and <IP_ADDRESS>: SSN <US_SSN>, IBAN <IBAN>.", t[2]
PY
for kv in email=1 phone=1 card=1 ip=2 ssn=1 iban=1; do
    expect_eq "$(json "$T/o/manifest.json" "m['counts']['pii_${kv%=*}']")" "${kv#*=}" "(pii_${kv%=*})"
done
expect_eq "$(json "$T/o/manifest.json" "m['counts']['edited_documents']")" 2

case_ "--annotate writes the spans with code-point offsets and the original value"
run "$SLUICE" filter --config "$CFG" --annotate --out "$T/a" "$T/in.jsonl"
expect_rc 0
zstdcat "$T/a/part-00000.jsonl.zst" | python3 -c "
import json,sys
d=[json.loads(l) for l in sys.stdin]
assert d[0]['pii_spans'][0]==['email',5,25,'john.doe@example.com'], d[0]['pii_spans']
assert 'pii_spans' not in d[1]
assert [s[0] for s in d[2]['pii_spans']]==['ip','ip','ssn','iban']" && ok || fail "spans wrong"

case_ "placeholders and kinds from --set; unknown kind is an error with file:line"
run "$SLUICE" filter --config "$CFG" --set filters.0.pii.placeholders.email=MAIL --set filters.0.pii.kinds=email --out "$T/s" "$T/in.jsonl"
expect_rc 0
expect_eq "$(zstdcat "$T/s/part-00000.jsonl.zst" | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["text"])')" \
    "Mail MAIL or +44 20 7946 0958, card 4111 1111 1111 1111."
run "$SLUICE" filter --config "$CFG" --set filters.0.pii.kinds=email,passport --out "$T/e" "$T/in.jsonl"
expect_rc 1; expect_err "unknown kind 'passport'"; expect_err "pii.yaml"
finish
