#!/usr/bin/env bash
# Decompression + JSONL parse throughput of `sluice reshard`, one rank (one core), against
# `zstdcat FILE | wc -l` (decompression only) as the floor, on the same file.
#
# Input: the 697 Common Crawl documents of ../shared/data/jsonl-corpora/dolma repeated
# REPEAT times (default 30, ~100 MB) so that start-up does not dominate; compressed as
# .jsonl.zst (zstd -3) and .jsonl.gz (gzip -6).
# Usage: bench/reshard.sh [SLUICE] ; needs hyperfine (Debian package) or falls back to time.
set -euo pipefail
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}
repeat=${REPEAT:-30}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

src="$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
for _ in $(seq "$repeat"); do zcat "$src"; done > "$work/corpus.jsonl"
zstd -q -3 "$work/corpus.jsonl" -o "$work/corpus.jsonl.zst"
gzip -6 -c "$work/corpus.jsonl" > "$work/corpus.jsonl.gz"
mb=$(python3 -c "import os; print(os.path.getsize('$work/corpus.jsonl') / 1e6)")
docs=$(wc -l < "$work/corpus.jsonl")
echo "input: $docs documents, $mb MB uncompressed"

time_cmd() { # median wall seconds of 5 runs
    python3 - "$@" <<'PY'
import subprocess, sys, time, statistics
ts = []
for i in range(6):
    t = time.perf_counter()
    subprocess.run(sys.argv[1], shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts.append(time.perf_counter() - t)
print("%.4f" % statistics.median(ts[1:]))
PY
}

for ext in zst gz; do
    f="$work/corpus.jsonl.$ext"
    cat_cmd=$([ $ext = zst ] && echo zstdcat || echo zcat)
    t_floor=$(time_cmd "$cat_cmd $f | wc -l")
    t_ours=$(time_cmd "rm -rf $work/out && $sluice -q reshard --out $work/out --shards 4 $f")
    python3 - "$ext" "$mb" "$t_floor" "$t_ours" <<'PY'
import sys
ext, mb, floor, ours = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
print("%-4s  floor (%s | wc -l): %7.1f MB/s   sluice reshard: %7.1f MB/s   reshard/floor = %.2f"
      % (ext, "zstdcat" if ext == "zst" else "zcat", mb / floor, mb / ours, floor / ours))
PY
done
