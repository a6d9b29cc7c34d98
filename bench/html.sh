#!/usr/bin/env bash
# HTML main-text extraction: pages/s on one core and F1 on the article-extraction-benchmark,
# sluice vs trafilatura and resiliparse (peers from bench/requirements.txt, installed into
# .venv-bench). Every tool runs on the same pages, already in memory, in the same run;
# each timing is the median of ROUNDS passes over all pages (default 5), tools alternated.
# F1 is the benchmark's own scoring (bench/html_score.py).
# Usage: bench/html.sh [SLUICE_BUILD_DIR] ; SLUICE_DATA=path/to/shared/data to override.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
build=$(cd "$build" && pwd)
if [ -z "${SLUICE_DATA:-}" ]; then
    for d in "$root/../shared/data" "$root/../../shared/data"; do
        [ -d "$d" ] && SLUICE_DATA=$(cd "$d" && pwd) && break
    done
fi
data=${SLUICE_DATA:?set SLUICE_DATA to the shared data folder}
aeb="$data/html-extraction/article-extraction-benchmark"
rounds=${ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-html-XXXXXX")
trap 'rm -rf "$work"' EXIT

# peers
venv="$root/.venv-bench"
want=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "setting up $venv (bench/requirements.txt)" >&2
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
    echo "$want" > "$venv/.requirements.sha256"
fi

# our driver, linked against the library just built
cc -O2 -I"$root" -D_GNU_SOURCE $(pkg-config --cflags libxml-2.0) "$here/html_bench.c" \
    "$build/libsluice.a" -o "$work/html_bench" \
    $(pkg-config --libs libxml-2.0 libzstd zlib libxxhash json-c yaml-0.1 libdeflate) -lbz2 -lm -fopenmp -lpthread

SCORER="$here/html_score.py" "$venv/bin/python" - "$aeb" "$work" "$rounds" <<'PY'
import glob, json, os, statistics, subprocess, sys, time, gzip
aeb, work, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
import trafilatura
from resiliparse.extract.html2text import extract_plain_text

files = sorted(glob.glob(os.path.join(aeb, "html", "*.html.gz")))
if not files:
    sys.exit("html.sh: no pages under %s/html" % aeb)
ids = [os.path.basename(f)[:-len(".html.gz")] for f in files]
raw = [gzip.open(f).read() for f in files]
# the peers get str (their usual input after a WARC reader's decoding); we get bytes
docs = [r.decode("utf-8", "replace") for r in raw]
mb = sum(len(r) for r in raw) / 1e6

def ours(rnd):
    path = os.path.join(work, "sluice.json")
    args = [os.path.join(work, "html_bench"), "-r", "1"] + (["-o", path] if rnd == 0 else []) + files
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    kv = dict(x.split("=") for x in out.split())
    return float(kv["median_s"]), path

def peer(name, fn, rnd):
    t = time.perf_counter()
    out = [fn(d) for d in docs]
    dt = time.perf_counter() - t
    path = os.path.join(work, name + ".json")
    if rnd == 0:
        json.dump({i: {"articleBody": o or ""} for i, o in zip(ids, out)}, open(path, "w"))
    return dt, path

tools = {
    "sluice": ours,
    "trafilatura": lambda r: peer("trafilatura", lambda d: trafilatura.extract(d), r),
    "resiliparse": lambda r: peer("resiliparse", lambda d: extract_plain_text(d, main_content=True), r),
}
times = {k: [] for k in tools}
paths = {}
for r in range(rounds):  # tools alternate within each round: the ratios are paired
    for name, fn in tools.items():
        t, paths[name] = fn(r)
        times[name].append(t)
n = len(files)
print("pages: %d (%.1f MB), rounds: %d, one core; pages/s = median over rounds, "
      "speedup = median of per-round ratios" % (n, mb, rounds))
print("%-12s %9s %8s %9s %8s %7s %14s" % ("tool", "pages/s", "MB/s", "precision", "recall",
                                          "F1", "vs trafilatura"))
for name in tools:
    t = statistics.median(times[name])
    ratio = statistics.median(a / b for a, b in zip(times["trafilatura"], times[name]))
    s = json.loads(subprocess.run([sys.executable, os.environ["SCORER"], "--json",
                                   "--n-bootstrap", "200", os.path.join(aeb, "ground-truth.json"),
                                   paths[name]], check=True, capture_output=True, text=True).stdout)
    print("%-12s %9.1f %8.1f %9.3f %8.3f %7.3f %13.1fx" % (name, n / t, mb / t, s["precision"],
          s["recall"], s["f1"], ratio))
PY

# The command end to end (reading and decompressing the files, extraction, zstd shards, the
# manifest; one rank) against the in-memory extraction of the same pages, alternated in
# each round: pages/s of each and the command's share of the in-memory speed. The pages are
# linked COPIES times (default 8: 1016 pages) so that the fixed costs of a run (start, plan,
# manifest, fsyncs) weigh as they do on a directory of crawled pages.
python3 - "$work" "$build/sluice" "$aeb/html" "$rounds" "${COPIES:-8}" <<'PY'
import glob, os, resource, shutil, statistics, subprocess, sys, time
work, sluice, html, rounds, copies = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
pages = os.path.join(work, "pages")
os.makedirs(pages, exist_ok=True)
for k in range(copies):
    for f in sorted(glob.glob(os.path.join(html, "*.html.gz"))):
        os.symlink(f, os.path.join(pages, "c%d-%s" % (k, os.path.basename(f))))
files = sorted(glob.glob(os.path.join(pages, "*.html.gz")))
mem, cmd, cpu = [], [], []
for r in range(rounds):
    out = subprocess.run([os.path.join(work, "html_bench"), "-r", "1"] + files, check=True,
                         capture_output=True, text=True).stdout
    mem.append(float(dict(x.split("=") for x in out.split())["median_s"]))
    d = os.path.join(work, "extract-out")
    shutil.rmtree(d, ignore_errors=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sluice, "extract", "-q", "--format", "html", "--out", d, pages], check=True)
    cmd.append(time.perf_counter() - t)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
n = len(files)
shards = len(glob.glob(os.path.join(d, "part-*.jsonl.zst")))
print("\nsluice extract --format html, the command end to end (%d pages -> %d shards, one rank) "
      "vs the in-memory extractor; median over %d rounds, alternated" % (n, shards, rounds))
print("%-36s %9s %9s" % ("", "pages/s", "best"))
print("%-36s %9.1f %9.1f" % ("in memory (html_extract)", n / statistics.median(mem), n / min(mem)))
print("%-36s %9.1f %9.1f" % ("sluice extract --format html", n / statistics.median(cmd), n / min(cmd)))
print("%-36s %8.0f%% %8.0f%%" % ("command / in memory (paired median)",
                                 100 * statistics.median(m / c for m, c in zip(mem, cmd)),
                                 100 * min(mem) / min(cmd)))
# the command's CPU time (both threads) per page: what it costs whatever else runs
print("%-36s %9.1f %9.1f" % ("sluice extract, pages per CPU second", n / statistics.median(cpu),
                             n / min(cpu)))
PY

# worst cases: pages of one unclosed element repeated (each used to be searched for its end
# tag to the end of the page, once per start tag: quadratic), timed at two sizes; linear
# extraction takes twice the time for twice the page
echo
echo "worst-case pages (sluice alone): seconds at 1M and 2M repetitions, and their ratio"
printf '%-14s %9s %9s %6s\n' "page" "1M" "2M" "ratio"
for unit in '<svg>' '<template>' '<math>' '<select>' '<object>' '<x' '<svg><p>x</p>'; do
    secs=()
    for n in 1000000 2000000; do
        python3 -c "import sys; sys.stdout.write(sys.argv[1] * int(sys.argv[2]))" "$unit" $n > "$work/worst.html"
        secs+=("$("$work/html_bench" -r 3 "$work/worst.html" | tr ' ' '\n' | sed -n 's/^median_s=//p')")
    done
    printf '%-14s %9.3f %9.3f %6.1f\n' "'$unit'" "${secs[0]}" "${secs[1]}" \
        "$(python3 -c "import sys; print(float(sys.argv[2]) / max(float(sys.argv[1]), 1e-6))" "${secs[@]}")"
done
