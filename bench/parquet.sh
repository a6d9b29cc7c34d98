#!/usr/bin/env bash
# Reading Parquet, per core: a FineWeb-shaped file (text, id, dump, url, date, language,
# language_score, token_count; snappy, row groups of 2048 rows, as pyarrow writes it) read
# by `sluice stats` (every document read and measured: characters, words, lines), against
#   - the same rows as .jsonl.zst (zstd -3) through the same command, and
#   - pyarrow: pq.read_table(use_threads=False) alone, and with .to_pylist() (rows as
#     Python dicts: what a per-document Python stage starts from).
# CPU seconds (user + system) of one process on one thread, median of RUNS (default 5).
#
# Input: the text of the 697 Common Crawl documents of ../shared/data/jsonl-corpora/dolma
# repeated REPEAT times (default 30, ~95 MB of text), with FineWeb's metadata columns made
# from each document's own (url, date) and its position.
# Usage: bench/parquet.sh [SLUICE]    (pyarrow from .venv-bench, else the test venv .venv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
data=${SLUICE_DATA:-$(cd "$root/.." && pwd)/shared/data}
repeat=${REPEAT:-30}
runs=${RUNS:-5}
py=${PYTHON:-}
for cand in "$root/.venv-bench/bin/python" "$root/.venv/bin/python"; do
    [ -z "$py" ] && [ -x "$cand" ] && "$cand" -c "import pyarrow" 2>/dev/null && py=$cand
done
[ -n "$py" ] || { echo "bench/parquet.sh: no Python with pyarrow (.venv-bench or .venv)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

"$py" - "$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz" \
    "$repeat" "$work" <<'PY'
import gzip, json, sys, uuid
import pyarrow as pa, pyarrow.parquet as pq
src, repeat, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
docs = [json.loads(l) for l in gzip.open(src, "rt", encoding="utf-8")]
rows = []
for r in range(repeat):
    for i, d in enumerate(docs):
        m = d.get("metadata", {})
        rows.append({
            "text": d["text"],
            "id": "<urn:uuid:%s>" % uuid.UUID(int=(r << 32) | i),
            "dump": "CC-MAIN-2019-30",
            "url": m.get("warc_url") or m.get("url") or "",
            "date": m.get("warc_date") or d.get("created") or "",
            "language": "en",
            "language_score": 0.5 + (i % 500) / 1000.0,
            "token_count": len(d["text"].split()),
        })
table = pa.Table.from_pylist(rows)
pq.write_table(table, work + "/fw.parquet", compression="snappy", row_group_size=2048)
with open(work + "/fw.jsonl", "w", encoding="utf-8") as f:
    for r in rows:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
print("input: %d rows, %.1f MB of text, %d row groups" % (
    len(rows), sum(len(r["text"].encode()) for r in rows) / 1e6,
    pq.ParquetFile(work + "/fw.parquet").metadata.num_row_groups))
PY
zstd -q -3 "$work/fw.jsonl" -o "$work/fw.jsonl.zst"
ls -l "$work/fw.parquet" "$work/fw.jsonl" "$work/fw.jsonl.zst" | awk '{printf "%s %.1f MB\n", $NF, $5/1e6}'

cpu_cmd() { # median CPU seconds (user + system) of a command, $runs runs after one warm-up
    "$py" - "$runs" "$@" <<'PY'
import resource, statistics, subprocess, sys
runs, cmd = int(sys.argv[1]), sys.argv[2]
ts = []
for i in range(runs + 1):
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    if i:
        ts.append(b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime)
print("%.3f" % statistics.median(ts))
PY
}

export OMP_NUM_THREADS=1
t_pq=$(cpu_cmd "rm -rf $work/s && $sluice -q stats --out $work/s $work/fw.parquet")
t_zst=$(cpu_cmd "rm -rf $work/s && $sluice -q stats --out $work/s $work/fw.jsonl.zst")
t_plain=$(cpu_cmd "rm -rf $work/s && $sluice -q stats --out $work/s $work/fw.jsonl")
read -r t_arrow t_pylist < <("$py" - "$work/fw.parquet" "$runs" <<'PY'
import statistics, sys, time
import pyarrow as pa, pyarrow.parquet as pq
pa.set_cpu_count(1)
pa.set_io_thread_count(1)
path, runs = sys.argv[1], int(sys.argv[2])
def cpu(fn):
    ts = []
    for i in range(runs + 1):
        t = time.process_time()
        fn()
        if i:
            ts.append(time.process_time() - t)
    return statistics.median(ts)
a = cpu(lambda: pq.read_table(path, use_threads=False))
b = cpu(lambda: pq.read_table(path, use_threads=False).to_pylist())
print("%.3f %.3f" % (a, b))
PY
)
mb=$(python3 -c "import os; print(os.path.getsize('$work/fw.jsonl') / 1e6)")
python3 - "$mb" "$t_pq" "$t_zst" "$t_plain" "$t_arrow" "$t_pylist" <<'PY'
import sys
mb, pq_, zst, plain, arrow, pylist = map(float, sys.argv[1:])
print("CPU seconds, one thread (MB/s of the rows as JSONL, %.1f MB):" % mb)
print("  sluice stats, .parquet              %6.3f s  %6.1f MB/s" % (pq_, mb / pq_))
print("  sluice stats, .jsonl.zst            %6.3f s  %6.1f MB/s  parquet/zst = %.2fx the time" % (zst, mb / zst, pq_ / zst))
print("  sluice stats, .jsonl                %6.3f s  %6.1f MB/s" % (plain, mb / plain))
print("  pyarrow read_table                  %6.3f s" % arrow)
print("  pyarrow read_table + to_pylist      %6.3f s  sluice stats / this = %.2f" % (pylist, pq_ / pylist))
PY
