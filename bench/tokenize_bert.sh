#!/usr/bin/env bash
# BERT WordPiece from a vocab.txt, one core: `sluice` (bert-lower:vocab.txt,
# build/bench_encode) against the `tokenizers` library's BertWordPieceTokenizer (Rust, one
# thread) and against Megatron-LM's own Python tokenizer (FullTokenizer of
# bert_tokenization.py, what BertWordPieceLowerCase runs), on Google's bert-base-uncased
# vocabulary (tests/fixtures/hf/bert_base_uncased.json.zst as vocab.txt), document by
# document over Common Crawl JSONL (multilingual and English) and the UDHR in 107 language
# versions. CPU seconds of the encoding; the ids are compared through a hash (Megatron's
# must equal sluice's; the Rust library's may differ where its BERT normalizer does). Ratios
# are medians over ROUNDS rounds that alternate sluice and tokenizers; Megatron's Python
# runs once per input.
# Usage: bench/tokenize_bert.sh [ROUNDS]   (tokenizers is installed into .venv-bench)
#   MEGATRON_LM=DIR   a Megatron-LM checkout of core 0.16 or older (or BERT_TOKENIZATION=
#                     its megatron/training/tokenizer/bert_tokenization.py); without it the
#                     Python port tests/oracle/megatron_bert.py stands in
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-3}
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/gpt2-bpe" ] || data=/work/shared/data
venv=${SLUICE_BENCH_VENV:-.venv-bench}
if [ ! -x $venv/bin/python ] || ! $venv/bin/python -c "import tokenizers" 2>/dev/null; then
    python3 -m venv $venv
    $venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
fi
PY=$venv/bin/python
bt=${BERT_TOKENIZATION:-${MEGATRON_LM:+$MEGATRON_LM/megatron/training/tokenizer/bert_tokenization.py}}
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
make -s build/bench_encode
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
field() { sed -n "s|.*$1 \([^ ]*\).*|\1|p"; }
median() { python3 -c "import sys, statistics; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

zstd -q -dc "$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst" > "$work/web.jsonl"
zcat "$data/jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz" "$data/jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz" > "$work/ccen.jsonl"
cp "$data/text/udhr/udhr.jsonl" "$work/udhr.jsonl"
$PY tests/oracle/bert_cases.py vocab tests/fixtures/hf/bert_base_uncased.json.zst "$work/vocab.txt"
if [ -n "$bt" ]; then meg=(megatron "$bt"); else meg=(port); echo "(MEGATRON_LM not set: the Python port stands in for Megatron's code)"; fi

echo "== bert-lower: encode, one core (MB/s of CPU time; ratios: medians over $rounds rounds)"
for input in web ccen udhr; do
    f="$work/$input.jsonl"
    ours=() hf=() ratio=()
    for r in $(seq "$rounds"); do
        o=$(JSONL=1 build/bench_encode "bert-lower:$work/vocab.txt" "$f" 3)
        h=$($PY bench/tokenize_bert_peer.py tokenizers "$work/vocab.txt" lower "$f" 1)
        ours+=("$(echo "$o" | field MB/s)"); hf+=("$(echo "$h" | field MB/s)")
        ratio+=("$(python3 -c "print(${ours[-1]} / ${hf[-1]})")")
    done
    m=$($PY bench/tokenize_bert_peer.py "${meg[@]}" "$work/vocab.txt" lower "$f")
    same_m=$([ "$(echo "$m" | field fnv)" = "$(echo "$o" | field fnv)" ] && echo "same ids" || echo "OTHER IDS")
    same_h=$([ "$(echo "$h" | field fnv)" = "$(echo "$o" | field fnv)" ] && echo "same ids" || echo "other ids")
    echo "$input ($(wc -c < "$f") bytes, $(echo "$o" | field tokens) tokens): sluice $(median "${ours[@]}") MB/s;" \
         "tokenizers $(median "${hf[@]}") MB/s, sluice/tokenizers $(median "${ratio[@]}")x ($same_h);" \
         "${meg[0]} $(echo "$m" | field MB/s) MB/s, sluice/${meg[0]} $(python3 -c "print('%.0f' % ($(median "${ours[@]}") / $(echo "$m" | field MB/s)))")x ($same_m)"
    [ "$same_m" = "same ids" ] || exit 1
done
