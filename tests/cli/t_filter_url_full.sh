#!/usr/bin/env bash
# url with `rules: datatrove` and UT1's whole list (datatrove's 18 MB tar.gz, 4.56 M
# domains, from the shared data folder: SLUICE_DATA, else ../shared/data beside the
# sources): every decision and reason equal datatrove's on the URLs of
# tests/fixtures/filter/url. The list is not in the repository; without it nothing runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
U="$FIX/filter/url"
TGZ=${SLUICE_DATA:-$ROOT/../shared/data}/lexicons/url-filter/url_filterblacklistsv0_3_0.tar.gz
if [ ! -f "$TGZ" ]; then
    echo "$(basename "$0"): no $TGZ (set SLUICE_DATA to the shared data folder): not run"
    finish
    exit 0
fi

case_ "the whole list from its tar.gz: datatrove's decisions on every URL"
cat > "$T/full.yaml" <<EOF2
filters:
  - url:
      rules: datatrove
      blocklist: $TGZ
      extra_domains: ["@$U/psl-domains.txt"]
EOF2
run "$SLUICE" filter --annotate --config "$T/full.yaml" --out "$T/a" "$U/urls.jsonl.gz"
expect_rc 0
zstdcat "$T"/a/part-*.zst | "$PY" -c '
import json, sys
for l in sys.stdin:
    print(json.loads(l).get("filter_reason", "keep"))' > "$T/got"
zcat "$U/expected.txt.gz" > "$T/want"
cmp -s "$T/got" "$T/want" && ok || fail "$(diff "$T/want" "$T/got" | grep -c '^>') URLs decided otherwise than datatrove"

finish
