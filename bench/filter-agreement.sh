#!/usr/bin/env bash
# Keep/drop agreement of sluice's gopher, c4 and fineweb filters with datatrove 0.10.0 (the
# oracle, pip) on the Common Crawl, CCNet, UDHR and Brown documents of shared/data.
# Writes the table to bench/results/filter-agreement.md (and stdout).
# Usage: bench/filter-agreement.sh [SLUICE]     (peers from bench/requirements.txt, .venv-bench)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$here/../.." && pwd)/shared/data}
venv=${VENV_BENCH:-$here/../.venv-bench}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-agree-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" "$here/filter_corpus.py" "$data" "$work/corpus.jsonl"
"$venv/bin/python" "$here/filter_agreement.py" "$sluice" "$work/corpus.jsonl" "$work" | tee "$here/results/filter-agreement.md"
