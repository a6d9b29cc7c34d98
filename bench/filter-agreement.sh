#!/usr/bin/env bash
# Keep/drop agreement of sluice's filters with the peers that define them, document by
# document: datatrove 0.10.0 (gopher, c4 and fineweb filters and configs; the oracle) and
# NeMo Curator 1.4.0 (nemo-en.yaml), on every document of shared/data/jsonl-corpora, the
# UDHR texts and the Brown samples. Language ID uses the same fastText lid.176.ftz on both
# sides. Writes the table to bench/results/filter-agreement.md (and stdout). The peers'
# decisions are cached in $SLUICE_BENCH_CACHE (default ~/.cache/sluice-bench), per document
# text: reruns only run sluice (and the peers on new documents).
# Usage: bench/filter-agreement.sh [SLUICE]     (peers installed into .venv-bench)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$here/../.." && pwd)/shared/data}
venv=${VENV_BENCH:-$here/../.venv-bench}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
# NeMo Curator's filters are plain Python: the package without its distributed runtime
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps nemo-curator==1.4.0
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-agree-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" "$here/filter_corpus.py" "$data" "$work/corpus.jsonl"
"$venv/bin/python" "$here/filter_agreement.py" "$sluice" "$work/corpus.jsonl" "$work" \
    "${SLUICE_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice-bench}" \
    "$data/models/fasttext-lid/lid.176.ftz" | tee "$here/results/filter-agreement.md"
