#!/usr/bin/env bash
# WARC reading throughput, one core: sluice's reader against FastWARC and warcio (pip, in
# .venv-bench from bench/requirements.txt) on the same files. Each tool reads every record
# and parses the HTTP head of every response (FastWARC: parse_http=True; warcio: its
# ArchiveIterator default; sluice: bench/warc_read.c, which also copies each response
# block into memory). CPU time of the whole process (user + system; the machine may be
# shared, wall time is noisy), median of 5 runs after a warm-up.
#
# Input: the Common Crawl samples in ../shared/data/warc (fastwarc/warcfile.warc.gz, 50
# records of CC-MAIN-2020-34, and whirlwind/whirlwind.warc.gz, 4 records of CC-MAIN-2024-22),
# concatenated REPEAT times (default 300; .warc.gz stays one gzip member per record) so
# that start-up does not dominate; also decompressed (.warc).
# Also: `sluice extract --format warc` end to end (HTML main text included) on the .warc.gz.
# Usage: bench/warc.sh [SLUICE]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
build=$(dirname "$sluice")
data=${SLUICE_DATA:-$root/../shared/data}
[ -d "$data/warc" ] || data=$(cd "$root/../.." && pwd)/shared/data
repeat=${REPEAT:-300}
runs=${RUNS:-5}
venv=${VENV:-$root/.venv-bench}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

# the peers
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import fastwarc, warcio" 2>/dev/null; then
    echo "setting up $venv (bench/requirements.txt)" >&2
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/bench/requirements.txt"
fi
py="$venv/bin/python"

# our reader, linked like the sluice binary
libs="$(pkg-config --libs libzstd zlib yaml-0.1 json-c libxxhash libcurl libcrypto libarchive libxml-2.0 libdeflate) -lbz2"
mpilibs=$(mpicc --showme:link 2>/dev/null || true)
cc -O2 -std=gnu11 -D_GNU_SOURCE -I"$root" -I"$build/gen" "$root/bench/warc_read.c" -o "$work/warc_read" \
    "$build/libsluice.a" $libs -lstdc++ -lm -lpthread -fopenmp $mpilibs

for _ in $(seq "$repeat"); do
    cat "$data/warc/fastwarc/warcfile.warc.gz" "$data/warc/whirlwind/whirlwind.warc.gz"
done > "$work/cc.warc.gz"
zcat "$work/cc.warc.gz" > "$work/cc.warc"

cat > "$work/fastwarc_read.py" <<'PY'
import sys
from fastwarc.warc import ArchiveIterator
n = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f, parse_http=True):
            n += 1
print(n)
PY
cat > "$work/warcio_read.py" <<'PY'
import sys
from warcio.archiveiterator import ArchiveIterator
n = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            n += 1
print(n)
PY

time_cmd() { # median CPU seconds (user + system of the process) of $runs runs after a warm-up
    python3 - "$runs" "$@" <<'PY'
import resource, subprocess, sys, statistics
runs, cmd = int(sys.argv[1]), sys.argv[2]
ts = []
for i in range(runs + 1):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ts.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
print("%.4f" % statistics.median(ts[1:]))
PY
}

records=$("$work/warc_read" "$work/cc.warc.gz" | cut -d' ' -f1)
[ "$("$py" "$work/fastwarc_read.py" "$work/cc.warc.gz")" = "$records" ] || echo "warning: FastWARC counts a different number of records" >&2
mb_gz=$(stat -c %s "$work/cc.warc.gz"); mb_raw=$(stat -c %s "$work/cc.warc")
echo "input: $records records, $((mb_gz / 1000000)) MB .warc.gz, $((mb_raw / 1000000)) MB uncompressed (x$repeat)"
for f in cc.warc.gz cc.warc; do
    t_s=$(time_cmd "$work/warc_read $work/$f")
    t_f=$(time_cmd "$py $work/fastwarc_read.py $work/$f")
    t_w=$(time_cmd "$py $work/warcio_read.py $work/$f")
    python3 - "$f" "$records" "$mb_raw" "$t_s" "$t_f" "$t_w" <<'PY'
import sys
f, rec, raw = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1e6
s, fw, wi = map(float, sys.argv[4:7])
for name, t in (("sluice", s), ("FastWARC", fw), ("warcio", wi)):
    print("%-11s %-9s %9.0f records/s %7.1f MB/s (uncompressed, per CPU second)" % (f, name, rec / t, raw / t))
print("%-11s sluice/FastWARC = %.2fx   sluice/warcio = %.2fx" % (f, fw / s, wi / s))
PY
done
t_x=$(time_cmd "rm -rf $work/out && $sluice -q extract --format warc --out $work/out $work/cc.warc.gz")
python3 -c "import sys; print('sluice extract --format warc (records -> documents, main text): %.0f records/s, %.1f MB/s' % ($records / $t_x, $mb_raw / 1e6 / $t_x))"
