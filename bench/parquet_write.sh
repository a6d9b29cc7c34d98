#!/usr/bin/env bash
# Writing documents as Parquet, one core: `sluice reshard --out-format parquet` against
# pyarrow (`pyarrow.json.read_json` then `pq.write_table(..., compression="zstd")`), from the
# same plain JSONL file, with the same row groups (1000 rows) and zstd level (3).
#
# What is timed, wall clock, median of 5 runs after one warm-up:
#   sluice    the whole command: start, its measuring pass over the input (reshard reads
#             its input twice), JSON parsing, the Parquet encoding and zstd, the file
#             written and renamed, the manifest
#   pyarrow   a Python process that imports pyarrow, reads the JSONL with pyarrow's C++
#             JSON reader (use_threads=False, pa.set_cpu_count(1)) and writes the table
#             with pq.write_table(compression="zstd", compression_level=3,
#             row_group_size=1000): the same start-to-end span
#   sluice jsonl.zst  the same reshard writing .jsonl.zst, for scale
# pyarrow's reader infers nested columns for the documents' objects (struct columns) where
# sluice writes their JSON text (docs/formats/parquet-out.md): not the same columns, the
# same documents.
#
# Input: the 697 Common Crawl documents of ../shared/data/jsonl-corpora/dolma repeated
# REPEAT times (default 30, about 100 MB).
# Usage: bench/parquet_write.sh [SLUICE] [PYTHON with pyarrow; default .venv-bench's or .venv's]
set -euo pipefail
sluice=$(realpath "${1:-build/sluice}")
root=$(cd "$(dirname "$0")/.." && pwd)
py=${2:-}
if [ -z "$py" ]; then # the peers' venv (bench/run.sh), else the tests' (pyarrow is a test oracle)
    for p in "$root/.venv-bench/bin/python" "$root/.venv/bin/python"; do
        if [ -x "$p" ] && "$p" -c "import pyarrow" 2>/dev/null; then py=$p; break; fi
    done
fi
data=${SLUICE_DATA:-$root/../shared/data}
repeat=${REPEAT:-30}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

src="$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz"
for _ in $(seq "$repeat"); do zcat "$src"; done > "$work/corpus.jsonl"
mb=$(python3 -c "import os; print(os.path.getsize('$work/corpus.jsonl') / 1e6)")
docs=$(wc -l < "$work/corpus.jsonl")
echo "input: $docs documents, $mb MB of JSONL; pyarrow $("$py" -c 'import pyarrow; print(pyarrow.__version__)')"

cat > "$work/pa.py" <<'PY'
import sys
import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq
pa.set_cpu_count(1)
pa.set_io_thread_count(1)
t = pj.read_json(sys.argv[1], read_options=pj.ReadOptions(use_threads=False, block_size=64 << 20))
pq.write_table(t, sys.argv[2], compression="zstd", compression_level=3, row_group_size=1000)
PY

time_cmd() { # median wall seconds of 5 runs after a warm-up
    python3 - "$@" <<'PY'
import subprocess, sys, time, statistics
ts = []
for i in range(6):
    t = time.perf_counter()
    subprocess.run(sys.argv[1], shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts.append(time.perf_counter() - t)
print("%.3f" % statistics.median(ts[1:]))
PY
}

t_pq=$(time_cmd "rm -rf $work/o && $sluice -q reshard --out $work/o --shards 1 --out-format parquet $work/corpus.jsonl")
t_js=$(time_cmd "rm -rf $work/j && $sluice -q reshard --out $work/j --shards 1 $work/corpus.jsonl")
t_pa=$(time_cmd "$py $work/pa.py $work/corpus.jsonl $work/pa.parquet")
s_pq=$(stat -c %s "$work/o/part-00000.parquet")
s_pa=$(stat -c %s "$work/pa.parquet")
s_js=$(stat -c %s "$work/j/part-00000.jsonl.zst")
printf '%-34s %8s %10s %12s\n' "writer (one core)" "seconds" "MB/s in" "output MB"
for r in "sluice --out-format parquet:$t_pq:$s_pq" "pyarrow read_json + write_table:$t_pa:$s_pa" \
         "sluice jsonl.zst:$t_js:$s_js"; do
    IFS=: read -r name t s <<<"$r"
    printf '%-34s %8s %10.1f %12.1f\n' "$name" "$t" "$(python3 -c "print($mb / $t)")" "$(python3 -c "print($s / 1e6)")"
done
