#!/usr/bin/env bash
# Filtering speed, documents per CPU-second on one core: sluice's nemo-en cascade against
# NeMo Curator 1.4.0's own filter classes (same 28 filters, order and thresholds), and the
# FineWeb recipe (configs/filters/fineweb.yaml with the fastText lid.176 model) against
# datatrove 0.10.0 (same filters in its own pipeline), also without language ID, on the
# same documents: the 697 Common Crawl documents of shared/data/jsonl-corpora/dolma.
# Single process each, pinned to one core, RUNS paired runs (default 5); medians. Writes
# bench/results/filter-speed.md.
# Usage: bench/filter-speed.sh [SLUICE]     (peers installed into .venv-bench)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$root/.." && pwd)/shared/data}
venv=${VENV_BENCH:-$root/.venv-bench}
runs=${RUNS:-5}
cpu=${BENCH_CPU:-0}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
# NeMo Curator's filters are plain Python; its dependency tree (Ray, RAPIDS, ...) is not
# needed for them, so the package goes in without it (what they import is in requirements.txt)
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps nemo-curator==1.4.0
py="$venv/bin/python"
lid=$data/models/fasttext-lid/lid.176.ftz
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-fspeed-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$py" "$here/filter_corpus.py" "$data" "$work/all.jsonl"
grep '"id": "CC-MAIN' "$work/all.jsonl" > "$work/cc.jsonl"
docs=$(wc -l < "$work/cc.jsonl")

# Same decisions first: the kept counts of both sides.
"$sluice" -q filter --config "$root/configs/filters/nemo-en.yaml" --out "$work/o1" "$work/cc.jsonl"
"$sluice" -q filter --config "$root/configs/filters/fineweb.yaml" --set "filters.language.model=$lid" \
    --out "$work/o2" "$work/cc.jsonl"
kept() { zstdcat "$1"/*.zst | wc -l; }
echo "kept: nemo-en sluice $(kept "$work/o1"), NeMo Curator $("$py" "$here/filter_peer.py" nemo "$work/cc.jsonl" "$work/p1" 2>"$work/p1.log");" \
     "fineweb sluice $(kept "$work/o2"), datatrove $("$py" "$here/filter_peer.py" fineweb "$work/cc.jsonl" "$work/p2" "$lid" 2>"$work/p2.log")" >&2

{
    echo "| recipe (peer) | documents | sluice docs/s/core | peer docs/s/core | ratio (median) | pairs (range) |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
    "$py" "$here/filter_speed.py" "nemo-en (NeMo Curator 1.4.0)" "$docs" "$runs" "$cpu" -- \
        "$sluice" -q filter --config "$root/configs/filters/nemo-en.yaml" --out "$work/o1" "$work/cc.jsonl" -- \
        "$py" "$here/filter_peer.py" nemo "$work/cc.jsonl" "$work/p1"
    "$py" "$here/filter_speed.py" "FineWeb (datatrove 0.10.0)" "$docs" "$runs" "$cpu" -- \
        "$sluice" -q filter --config "$root/configs/filters/fineweb.yaml" --set "filters.language.model=$lid" \
        --out "$work/o2" "$work/cc.jsonl" -- \
        "$py" "$here/filter_peer.py" fineweb "$work/cc.jsonl" "$work/p2" "$lid"
    "$py" "$here/filter_speed.py" "FineWeb without language ID (datatrove 0.10.0)" "$docs" "$runs" "$cpu" -- \
        "$sluice" -q filter --config "$root/configs/filters/fineweb-heuristics.yaml" --out "$work/o3" "$work/cc.jsonl" -- \
        "$py" "$here/filter_peer.py" fineweb-heuristics "$work/cc.jsonl" "$work/p3"
} | tee "$here/results/filter-speed.md"
