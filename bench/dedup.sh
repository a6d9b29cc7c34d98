#!/usr/bin/env bash
# Deduplication benchmarks (docs/benchmarks.md, section "Deduplication").
#
#   bench/dedup.sh [SLUICE]            all three parts
#   PART=minhash|redis|e2e bench/dedup.sh  one of them
#
# minhash: MinHash signatures per core, sluice vs rensa and datasketch (bench/dedup_peers.py),
#          same word 5-gram shingles, same permutation count (112 = datatrove's 14x8), on the
#          697 Common Crawl documents of ../shared/data/jsonl-corpora/dolma.
# redis:   LSH inserts + queries per second: sluice --backend redis on a 3-master loopback
#          Redis Cluster vs datasketch MinHashLSH with Redis storage (one redis-server),
#          14x8 bands, on a generated near-duplicate corpus.
# e2e:     sluice dedup fuzzy end to end, docs/s and peak memory per rank, memory vs Redis
#          backend, and memory per rank for mpirun -np 1/2/4.
# Peers run from .venv-bench (bench/requirements.txt), created here when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
data=${SLUICE_DATA:-$root/../shared/data}
[ -d "$data" ] || data=$root/../../shared/data
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-dedup-XXXXXX")
venv=$root/.venv-bench
part=${PART:-all}
source "$root/tests/cli/redis_cluster.sh"
trap 'rc_stop; rm -rf "$work"' EXIT
PIN=(taskset -c 0)
command -v taskset >/dev/null || PIN=()

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/bench/requirements.txt"
fi
PY=$venv/bin/python
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $($PY -c 'import datasketch, rensa, importlib.metadata as m; print("datasketch", m.version("datasketch"), "rensa", m.version("rensa"))')"

if [ "$part" = all ] || [ "$part" = minhash ]; then
    cc=$(command -v mpicc || echo cc)
    libs=$(pkg-config --libs libzstd zlib yaml-0.1 json-c libxxhash hiredis)
    $cc -O2 -std=gnu11 -D_GNU_SOURCE -I"$root" -I"$root/build/gen" "$root/bench/dedup_minhash.c" \
        "$root/build/libsluice.a" $libs -lbz2 -lm -lstdc++ -fopenmp -o "$work/dedup_minhash"
    zcat "$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz" > "$work/cc.jsonl"
    rep=${REPEAT:-5}
    ours=$("${PIN[@]}" "$work/dedup_minhash" "$work/cc.jsonl" words:5 112 "$rep" "$work/h")
    ours32=$(MH_FAMILY=multiply32 "${PIN[@]}" "$work/dedup_minhash" "$work/cc.jsonl" words:5 112 "$rep")
    peers=$(RAYON_NUM_THREADS=1 "${PIN[@]}" "$PY" "$root/bench/dedup_peers.py" "$work/cc.jsonl" 5 112 3 "$work/h")
    "$PY" - "$ours" "$peers" "$rep" "$ours32" <<'PY'
import json, sys
o, p, rep, o32 = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
docs, mb = o["documents"], o["text_bytes"] / 1e6
ours_text = o["seconds_text_to_signature"] / rep
ours_sign = o["seconds_sign_only"] / rep
def row(name, s, base):
    print("%-44s %9.1f MB/s %10.0f docs/s   sluice is %6.1fx" % (name, mb / s, docs / s, s / base))
print("MinHash signatures, one core, %d documents, %.1f MB of text, words:5, 112 permutations" % (docs, mb))
row("sluice text -> signature", ours_text, ours_text)
row("sluice --hash multiply32 text -> signature", o32["seconds_text_to_signature"] / rep, ours_text)
row("rensa RMinHash text -> signature", p["rensa_text_to_signature"], ours_text)
row("datasketch MinHash text -> signature", p["datasketch_text_to_signature"], ours_text)
row("sluice signature from shingle hashes", ours_sign, ours_sign)
row("sluice --hash multiply32 from shingle hashes", o32["seconds_sign_only"] / rep, ours_sign)
row("rensa signature from shingle strings", p["rensa_from_shingles"], ours_sign)
if "rensa_batch_from_sluice_hashes" in p:
    row("rensa batch API from sluice's hashes", p["rensa_batch_from_sluice_hashes"], ours_sign)
row("datasketch signature from shingle bytes", p["datasketch_from_shingles"], ours_sign)
PY
fi

if [ "$part" = all ] || [ "$part" = redis ]; then
    n=${REDIS_CLUSTERS:-8000}
    mkdir -p "$work/rgen"
    python3 "$root/tests/cli/dedup_gen.py" "$work/rgen" 7 "$n" 1
    docs=$(wc -l < "$work/rgen/part-0.jsonl")
    base=${BENCH_PORT:-$(rc_free_base 10)}
    rc_start "$work/rc" "$base" 3 0 >/dev/null
    rc_server "$work/single" --port $((base + 9))
    best=""
    for _ in 1 2 3; do
        rm -rf "$work/rout"
        t=$("$sluice" -v -v dedup fuzzy --backend redis --redis "127.0.0.1:$base" --out "$work/rout" \
            "$work/rgen" 2>&1 | sed -n 's/.*lsh stage \([0-9.]*\) s.*/\1/p')
        best=$(python3 -c "import sys; a=[float(x) for x in sys.argv[1:] if x]; print(min(a))" $t $best)
    done
    peer=$("$PY" "$root/bench/dedup_redis_peer.py" "$work/rgen/part-0.jsonl" --port $((base + 9)))
    python3 - "$docs" "$best" "$peer" <<'PY'
import json, sys
docs, ours, p = int(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3])
theirs = p["seconds_insert"] + p["seconds_query"]
print("LSH in Redis, %d documents, 14x8 bands, insert + query (sluice also deletes its keys)" % docs)
print("  sluice, 3-master Redis Cluster, 1 rank   %9.0f docs/s" % (docs / ours))
print("  datasketch MinHashLSH, one redis-server  %9.0f docs/s (insert %.0f/s, query %.0f/s)"
      % (docs / theirs, docs / p["seconds_insert"], docs / p["seconds_query"]))
print("  sluice / datasketch = %.1fx" % (theirs / ours))
PY
    rc_stop
fi

if [ "$part" = all ] || [ "$part" = e2e ]; then
    n=${E2E_CLUSTERS:-40000}
    mkdir -p "$work/egen"
    python3 "$root/tests/cli/dedup_gen.py" "$work/egen" 9 "$n" 4
    docs=$(cat "$work"/egen/*.jsonl | wc -l)
    mb=$(du -cm "$work"/egen/*.jsonl | tail -1 | cut -f1)
    echo "end to end: sluice dedup fuzzy (datatrove preset), $docs documents, $mb MB"
    echo "  (per million documents: peak memory above that of a 20-document run of the same kind)"
    mkdir -p "$work/tiny"
    head -20 "$work/egen/part-0.jsonl" > "$work/tiny/t.jsonl"
    stats() { # LABEL CMD...: wall time and the peak memory per rank that sluice reports
        local label=$1 t0 t1 out base
        shift
        rm -rf "$work/eout"
        base=$("${@/$work\/egen/$work/tiny}" 2>&1 | sed -n 's/.*peak memory per rank: max \([0-9.]*\) MB.*/\1/p')
        rm -rf "$work/eout"
        t0=$(date +%s.%N)
        out=$("$@" 2>&1)
        t1=$(date +%s.%N)
        python3 - "$label" "$docs" "$t0" "$t1" "$out" "$base" <<'PY'
import re, sys
label, docs, t0, t1, out, base = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], float(sys.argv[6] or "nan")
m = re.search(r"peak memory per rank: max ([0-9.]+) MB, mean ([0-9.]+) MB", out)
mx, mean = (float(m.group(1)), float(m.group(2))) if m else (float("nan"),) * 2
print("  %-36s %7.0f docs/s  peak/rank %6.1f MB (empty-run base %5.1f)  => %5.0f MB per million docs per rank"
      % (label, docs / (t1 - t0), mx, base, (mx - base) * 1e6 / docs))
PY
    }
    stats "memory, 1 process" "$sluice" -v -v dedup fuzzy --out "$work/eout" "$work/egen"
    stats "memory, --verify, 1 process" "$sluice" -v -v dedup fuzzy --verify --out "$work/eout" "$work/egen"
    base=${BENCH_PORT:-$(rc_free_base 10)}
    rc_start "$work/erc" "$base" 3 0 >/dev/null
    stats "redis cluster (3 masters), 1 process" "$sluice" -v -v dedup fuzzy --backend redis \
        --redis "127.0.0.1:$base" --out "$work/eout" "$work/egen"
    rc_stop
    if command -v mpirun >/dev/null; then
        M=(mpirun --oversubscribe); [ "$(id -u)" -eq 0 ] && M+=(--allow-run-as-root)
        for np in 1 2 4; do
            stats "memory, mpirun -np $np" "${M[@]}" -np $np "$sluice" -v -v dedup fuzzy \
                --out "$work/eout" "$work/egen"
        done
    fi
fi
