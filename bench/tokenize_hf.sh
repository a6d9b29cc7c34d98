#!/usr/bin/env bash
# Hugging Face tokenizer.json encoding, one core: `sluice` (hf:FILE, build/bench_encode)
# against the `tokenizers` library itself (bench/tokenize_hf_peer.py, one thread), on the
# tokenizer.json files of tests/fixtures/hf (EleutherAI's GPT-NeoX-20B file, the Llama 3
# and Qwen2 layouts, bert-base-uncased WordPiece), document by document over Common Crawl
# JSONL (multilingual and English) and the UDHR in 107 language versions. CPU seconds of the
# encoding; the ids of both are compared through a hash. Ratios are medians over ROUNDS
# rounds that alternate the two.
# Usage: bench/tokenize_hf.sh [ROUNDS]   (the peer is installed into .venv-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-5}
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/gpt2-bpe" ] || data=/work/shared/data
venv=${SLUICE_BENCH_VENV:-.venv-bench}
if [ ! -x $venv/bin/python ] || ! $venv/bin/python -c "import tokenizers" 2>/dev/null; then
    python3 -m venv $venv
    $venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
fi
PY=$venv/bin/python
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
make -s build/bench_encode
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
field() { sed -n "s|.*$1 \([^ ]*\).*|\1|p"; }
median() { python3 -c "import sys, statistics; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

zstd -q -dc "$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst" > "$work/web.jsonl"
zcat "$data/jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz" "$data/jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz" > "$work/ccen.jsonl"
cp "$data/text/udhr/udhr.jsonl" "$work/udhr.jsonl"

echo "== tokenizer.json encode, one core (MB/s of CPU time; ratios are medians over $rounds rounds)"
for tok in gpt_neox_20b llama3_style qwen2_style bert_base_uncased; do
    zstd -q -dc "tests/fixtures/hf/$tok.json.zst" > "$work/$tok.json"
    for input in web ccen udhr; do
        f="$work/$input.jsonl"
        ours=() hf=() ratio=()
        for r in $(seq "$rounds"); do
            o=$(JSONL=1 build/bench_encode "hf:$work/$tok.json" "$f" 3)
            h=$($PY bench/tokenize_hf_peer.py "$work/$tok.json" "$f" 1)
            [ "$(echo "$h" | field fnv)" = "$(echo "$o" | field fnv)" ] || { echo "ids differ: $tok $input: $o / $h"; exit 1; }
            ours+=("$(echo "$o" | field MB/s)"); hf+=("$(echo "$h" | field MB/s)")
            ratio+=("$(python3 -c "print(${ours[-1]} / ${hf[-1]})")")
        done
        echo "$tok, $input ($(wc -c < "$f") bytes): sluice $(median "${ours[@]}") MB/s, tokenizers $(median "${hf[@]}") MB/s;" \
             "sluice/tokenizers $(median "${ratio[@]}")x; same ids ($(echo "$o" | field tokens) tokens)"
    done
done
