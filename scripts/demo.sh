#!/usr/bin/env bash
# make demo: run sluice end to end on the bundled samples in examples/ and summarise.
set -euo pipefail
sluice=${1:-build/sluice}
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo-out}
rm -rf "$out"
mkdir -p "$out"
echo "== sluice demo: reshard the bundled JSONL samples (examples/jsonl) into balanced shards"
"$sluice" reshard --out "$out/reshard" --shards 4 examples/jsonl
python3 - "$out/reshard/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
c = m["counts"]
print()
print("stage    inputs  documents in  documents out  MB in   MB out (zstd)")
print("reshard  %6d  %12d  %13d  %5.1f  %6.1f" % (len(m["inputs"]), c["documents_in"],
      c["documents_out"], c["bytes_in"] / 1e6, c["bytes_out"] / 1e6))
skipped = {k: v for k, v in c.items() if k.startswith("skipped_")}
if skipped:
    print("skipped lines:", skipped)
print()
print("shards:", ", ".join("%s (%d docs)" % (o["path"], o["documents"]) for o in m["outputs"]))
print("manifest: %s" % sys.argv[1])
PY
