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
    peers=$(RAYON_NUM_THREADS=1 "${PIN[@]}" "$PY" "$root/bench/dedup_peers.py" "$work/cc.jsonl" 5 112 3 "$work/h")
    "$PY" - "$ours" "$peers" "$rep" <<'PY'
import json, sys
o, p, rep = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
docs, mb = o["documents"], o["text_bytes"] / 1e6
ours_text = o["seconds_text_to_signature"] / rep
ours_sign = o["seconds_sign_only"] / rep
def row(name, s, base):
    print("%-44s %9.1f MB/s %10.0f docs/s   sluice is %6.1fx" % (name, mb / s, docs / s, s / base))
print("MinHash signatures, one core, %d documents, %.1f MB of text, words:5, 112 permutations" % (docs, mb))
row("sluice text -> signature", ours_text, ours_text)
row("rensa RMinHash text -> signature", p["rensa_text_to_signature"], ours_text)
row("datasketch MinHash text -> signature", p["datasketch_text_to_signature"], ours_text)
row("sluice signature from shingle hashes", ours_sign, ours_sign)
row("rensa signature from shingle strings", p["rensa_from_shingles"], ours_sign)
if "rensa_batch_from_sluice_hashes" in p:
    row("rensa batch API from sluice's hashes", p["rensa_batch_from_sluice_hashes"], ours_sign)
row("datasketch signature from shingle bytes", p["datasketch_from_shingles"], ours_sign)
PY
fi
