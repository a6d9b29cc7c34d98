#!/usr/bin/env bash
# PII redaction: agreement with datatrove's PIIFormatter (e-mails and IPv4, the kinds it
# covers) document by document, and speed on one core, on the filter-agreement corpus
# (shared/data: Common Crawl, CCNet, UDHR, Brown; bench/filter_corpus.py) plus the labelled
# sample tests/fixtures/pii/labelled.txt. Writes bench/results/pii.md (and stdout).
# Usage: bench/pii.sh [SLUICE]     (datatrove installed into .venv-bench, no dependencies
# beyond what PIIFormatter imports)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sluice=$(realpath "${1:-build/sluice}")
data=${SLUICE_DATA:-$(cd "$here/../.." && pwd)/shared/data}
venv=${VENV_BENCH:-$here/../.venv-bench}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c "import datatrove" 2>/dev/null || {
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps datatrove==0.10.0
    "$venv/bin/pip" install -q --disable-pip-version-check loguru regex numpy fsspec huggingface_hub \
        tokenizers humanize dill multiprocess
}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-pii-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" "$here/filter_corpus.py" "$data" "$work/corpus.jsonl"
# the labelled sample, marks removed, one document a line
"$venv/bin/python" - "$here/../tests/fixtures/pii/labelled.txt" >> "$work/corpus.jsonl" <<'PY'
import json, re, sys
for i, l in enumerate(open(sys.argv[1], encoding="utf-8")):
    if l.strip() and not l.startswith("#"):
        print(json.dumps({"id": "labelled:%d" % i, "text": re.sub(r"\{\{\w+\|(.*?)\}\}", r"\1", l.rstrip("\n"))}))
PY
# the scanner alone, linked against the library just built
build=$(dirname "$sluice")
cc -O2 -I"$here/.." -D_GNU_SOURCE "$here/pii_speed.c" -Wl,--whole-archive "$build/libsluice.a" \
    -Wl,--no-whole-archive -o "$work/pii_speed" \
    $(pkg-config --libs libzstd zlib yaml-0.1 json-c libxxhash libpcre2-8 libutf8proc libxml-2.0 \
        libarchive libdeflate libcurl libcrypto hiredis sentencepiece) \
    -lfasttext -lsentencepiece_train -lbz2 -lcld2 -lstdc++ -lm -lpthread -fopenmp -ldl \
    $(pkg-config --libs ompi 2>/dev/null || echo -lmpi)
"$venv/bin/python" "$here/pii_bench.py" "$sluice" "$work/corpus.jsonl" "$work" "$work/pii_speed" | tee "$here/results/pii.md"
