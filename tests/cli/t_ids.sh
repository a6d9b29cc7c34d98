#!/usr/bin/env bash
# Document ids of merged corpora (NeMo's AddId): two corpora whose per-file ids repeat stop
# exact dedup; --id-prefix and --reassign-ids on reshard and extract make them unique, the
# same for any number of MPI ranks.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/a" "$T/b"
python3 - "$T" <<'PY'
import json, sys
t = sys.argv[1]
for d in ("a", "b"):
    with open("%s/%s/part-00000.jsonl" % (t, d), "w") as f:
        for i in range(40):
            f.write(json.dumps({"text": "same text %d" % i if i % 4 == 0 else "text of %s number %d" % (d, i)}) + "\n")
PY

case_ "per-file ids repeat across two corpora: exact dedup stops, the hint names the options"
run "$SLUICE" reshard --out "$T/ra" "$T/a"; expect_rc 0
run "$SLUICE" reshard --out "$T/rb" "$T/b"; expect_rc 0
run "$SLUICE" dedup exact --out "$T/d0" "$T/ra" "$T/rb"
expect_rc 1; expect_err "duplicate document id"; expect_err "--id-prefix"; expect_err "--reassign-ids"

case_ "reshard --id-prefix: every id gets the prefix; exact dedup of both corpora works"
run "$SLUICE" reshard --id-prefix web --out "$T/pa" "$T/a"; expect_rc 0
run "$SLUICE" reshard --id-prefix books --out "$T/pb" "$T/b"; expect_rc 0
expect_eq "$(zstdcat "$T/pa/part-00000.jsonl.zst" | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')" "web:part-00000:1"
run "$SLUICE" dedup exact --out "$T/d1" "$T/pa" "$T/pb"
expect_rc 0
expect_eq "$(json "$T/d1/manifest.json" "m['counts']['documents_out']")" 70
expect_eq "$(json "$T/pa/manifest.json" "m['settings']['id_prefix']")" web

case_ "reshard --reassign-ids: <shard>:<position> ids, unique, the same for -np 1 and 2"
run "$SLUICE" reshard --reassign-ids --shards 3 --out "$T/r1" "$T/a" "$T/b"; expect_rc 0
ids=$(zstdcat "$T"/r1/part-*.jsonl.zst | python3 -c 'import json,sys; ids=[json.loads(l)["id"] for l in sys.stdin]; print(len(ids), len(set(ids)), ids[0], ids[-1])')
expect_eq "$ids" "80 80 part-00000:0 part-00002:25"
run "$SLUICE" dedup exact --out "$T/d2" "$T/r1"; expect_rc 0
expect_eq "$(json "$T/d2/manifest.json" "m['counts']['documents_out']")" 70
if have_mpi; then
    run "${MPIRUN[@]}" -np 2 "$SLUICE" reshard --reassign-ids --shards 3 --out "$T/r2" "$T/a" "$T/b"
    expect_rc 0
    for f in part-00000 part-00001 part-00002; do
        cmp -s "$T/r1/$f.jsonl.zst" "$T/r2/$f.jsonl.zst" && ok || fail "$f differs between -np 1 and 2"
    done
fi
# a rerun with another prefix is another plan
run "$SLUICE" reshard --id-prefix other --out "$T/pa" "$T/a"
expect_rc 1; expect_err "--force"

case_ "extract --id-prefix / --reassign-ids"
run "$SLUICE" extract --format jsonl --id-prefix a --out "$T/ea" "$T/a"; expect_rc 0
expect_eq "$(zstdcat "$T/ea/part-00000.jsonl.zst" | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')" "a:part-00000:1"
run "$SLUICE" extract --format jsonl --id-prefix b --reassign-ids --out "$T/eb" "$T/b"; expect_rc 0
expect_eq "$(zstdcat "$T/eb/part-00000.jsonl.zst" | sed -n 2p | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["id"])')" "b:part-00000:1"
run "$SLUICE" dedup exact --out "$T/d3" "$T/ea" "$T/eb"; expect_rc 0
expect_eq "$(json "$T/d3/manifest.json" "m['counts']['documents_out']")" 70

finish
