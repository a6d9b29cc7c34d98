#!/usr/bin/env bash
# Paragraph dedup per core: sluice dedup paragraphs (exact and Bloom index) against Dolma's
# Rust paragraph deduper (docs/benchmarks.md, "Paragraph dedup").
#
#   bench/dedup_paragraphs.sh [SLUICE]      DOLMA_VENV=/path/to/venv (default /tmp/dolmavenv)
#
# Dolma: `pip install --no-deps dolma` (1.2.1) into DOLMA_VENV; its compiled module's
# deduper_entrypoint is called with the JSON config of Dolma's own paragraph test
# (tests/config/dedupe-paragraphs.json), processes 1, without the Python CLI (whose
# dependencies need not be installed for it). Corpus: the 697 Common Crawl documents of
# ../shared/data/jsonl-corpora/dolma, 8 copies; in copies 1..7 every even-numbered paragraph
# gets a suffix " vK", so about half of their paragraphs are new (one gzip JSONL file, both
# tools read it). Both pinned to CPU 0; the median of RUNS runs (default 3) is reported.
# Dolma writes only its attribute file (spans); sluice also writes the documents with the
# paragraphs removed (a second read and zstd).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=$(realpath "${1:-$root/build/sluice}")
data=${SLUICE_DATA:-$root/../shared/data}
venv=${DOLMA_VENV:-/tmp/dolmavenv}
runs=${RUNS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-paradedup-XXXXXX")
trap 'rm -rf "$work"' EXIT
PIN=(taskset -c 0)
command -v taskset >/dev/null || PIN=()
so=$(ls "$venv"/lib/python3*/site-packages/dolma/dolma.cpython-*.so)

mkdir -p "$work/documents"
python3 - "$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz" \
    "$work/documents/000.json.gz" <<'PY'
import gzip, json, sys
docs = [json.loads(l) for l in gzip.open(sys.argv[1], "rt")]
with gzip.open(sys.argv[2], "wt", compresslevel=1) as o:
    for k in range(8):
        for d in docs:
            paras = d["text"].split("\n")
            if k:
                paras = [p + " v%d" % k if i % 2 == 0 else p for i, p in enumerate(paras)]
            o.write(json.dumps({"id": "%s#%d" % (d["id"], k), "text": "\n".join(paras)}) + "\n")
PY
n_par=$(zcat "$work/documents/000.json.gz" | python3 -c "
import json, sys
print(sum(len(json.loads(l)['text'].split('\n')) for l in sys.stdin))")
mb=$(zcat "$work/documents/000.json.gz" | wc -c | awk '{printf "%.1f", $1 / 1e6}')
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "corpus: 5576 documents, $n_par paragraphs, $mb MB of JSONL"

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
# seconds of one run of "$@"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }

cat > "$work/cfg.json" <<JSON
{"documents": ["$work/documents/*.json.gz"],
 "work_dir": {"input": "$work/wi", "output": "$work/wo"},
 "dedupe": {"name": "dups", "paragraphs": {"attribute_name": "bff_duplicate_paragraph_spans"}},
 "bloom_filter": {"file": "$work/bf.bin", "size_in_bytes": 0, "read_only": false,
                  "estimated_doc_count": $n_par, "desired_false_positive_rate": 0.001},
 "processes": 1}
JSON
dolma() {
    rm -rf "$work/attributes" "$work/bf.bin" "$work/wi" "$work/wo"
    "${PIN[@]}" "$venv/bin/python" -c "
import importlib.util, sys
spec = importlib.util.spec_from_file_location('dolma.dolma', sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
m.deduper_entrypoint(open(sys.argv[2]).read())" "$so" "$work/cfg.json"
}
sl() {
    rm -rf "$work/out"
    "${PIN[@]}" "$sluice" dedup paragraphs -q "$@" --out "$work/out" "$work/documents/000.json.gz"
}
row() { # NAME CMD...
    local t
    t=$(for _ in $(seq "$runs"); do secs "${@:2}"; done | median)
    printf '%-40s %8.2f s %10.0f paragraphs/s\n' "$1" "$t" "$(echo "$n_par / $t" | bc -l)"
}
row "dolma 1.2.1 (Bloom, p=0.001)" dolma
row "sluice --index bloom (p=0.001)" sl --index bloom --false-positive-rate 0.001
row "sluice --index exact" sl --index exact
sl --index exact
dolma
echo "removed: sluice exact $(python3 -c "import json; print(json.load(open('$work/out/manifest.json'))['counts']['units_removed'])"), dolma $(zcat "$work"/attributes/dups/000.json.gz | python3 -c "
import json, sys
print(sum(len(json.loads(l)['attributes'].get('bff_duplicate_paragraph_spans', [])) for l in sys.stdin))")"
