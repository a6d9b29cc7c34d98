#!/usr/bin/env bash
# Megatron-LM's own preprocessing scripts against `sluice tokenize`, whole processes, one
# core, on the 8x multilingual Common Crawl corpus (26.6 MB of JSONL), GPT-2 BPE with
# <|endoftext|> after each document:
#   tools/preprocess_data.py --workers 1        (HF GPT-2 tokenizer)
#   tools/preprocess_data_fast.py --use-gigatoken (gigatoken's encode_files)
#   sluice tokenize -j 1 --append-eod
# The .bin/.idx of each script are compared with sluice's byte for byte, and sequence by
# sequence where the bytes differ. CPU seconds (user + sys) and wall seconds of each
# process, medians of ROUNDS rounds; the Python start-up (importing Megatron and PyTorch)
# is timed alone, so that the scripts' work can be told from it.
#
# Needs a Megatron-LM checkout and a Python of the version its main branch wants (3.12):
#   git clone https://github.com/NVIDIA/Megatron-LM
#   MEGATRON_LM=Megatron-LM PYTHON=python3.12 bench/tokenize_megatron.sh [ROUNDS]
# The script creates .venv-megatron (torch, numpy, transformers, gigatoken, awkward: about
# 6 GB with PyTorch's CUDA libraries). Megatron's GPT2BPETokenizer fetches "gpt2" from the
# Hugging Face hub; offline, the same vocabulary is given as a local tokenizer directory
# (vocab.json and merges.txt of ../shared/data/gpt2-bpe). Nothing here is a runtime
# dependency of sluice; `make bench` skips it unless MEGATRON_LM is set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-3}
meg=${MEGATRON_LM:?set MEGATRON_LM to a Megatron-LM checkout}
meg=$(cd "$meg" && pwd)
py=${PYTHON:-python3}
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/gpt2-bpe" ] || data=/work/shared/data
venv=.venv-megatron
if ! $venv/bin/python -c "import torch, transformers, gigatoken, awkward" 2>/dev/null; then
    "$py" -m venv $venv
    $venv/bin/pip install -q --disable-pip-version-check torch numpy transformers \
        gigatoken==0.10.0 awkward
fi
make -s build/sluice
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
web="$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst"
for _ in 1 2 3 4 5 6 7 8; do zstd -dc "$web"; done > "$work/corpus.jsonl"
tok="$work/gpt2-hf"
mkdir -p "$tok"
cp "$data/gpt2-bpe/encoder.json" "$tok/vocab.json"
cp "$data/gpt2-bpe/vocab.bpe" "$tok/merges.txt"
echo '{"tokenizer_class": "GPT2Tokenizer", "model_max_length": 1000000000000, "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>", "add_prefix_space": false}' \
    > "$tok/tokenizer_config.json"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
cpu() { /usr/bin/time -f "%U %S %e" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2, $3}'; }
median() { python3 -c "import sys, statistics; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
py_meg="$root/$venv/bin/python"
targs=(--tokenizer-type HuggingFaceTokenizer --tokenizer-model "$tok" --append-eod)
s_cpu=() s_wall=() m_cpu=() m_wall=() f_cpu=() f_wall=() i_cpu=()
for r in $(seq "$rounds"); do
    rm -rf "$work"/out_*
    a=$(cpu build/sluice -q tokenize -j 1 --append-eod --tokenizer "gpt2:$data/gpt2-bpe" \
        --out "$work/out_sluice" "$work/corpus.jsonl")
    m=$(cd "$meg" && cpu "$py_meg" tools/preprocess_data.py --input "$work/corpus.jsonl" \
        --output-prefix "$work/out_meg" "${targs[@]}" --workers 1)
    f=$(cd "$meg" && cpu "$py_meg" tools/preprocess_data_fast.py --input "$work/corpus.jsonl" \
        --output-prefix "$work/out_fast" "${targs[@]}" --use-gigatoken)
    i=$(cd "$meg" && cpu "$py_meg" -c "import sys; sys.path.insert(0, '.')
from megatron.core.datasets import indexed_dataset
from megatron.core.tokenizers.utils.build_tokenizer import build_tokenizer
from megatron.training.arguments import _add_tokenizer_args")
    s_cpu+=("${a% *}") s_wall+=("${a#* }") m_cpu+=("${m% *}") m_wall+=("${m#* }")
    f_cpu+=("${f% *}") f_wall+=("${f#* }") i_cpu+=("${i% *}")
done
same() { cmp -s "$work/out_sluice_text_document.$2" "$work/$1_text_document.$2"; }
echo "sluice tokenize -j 1: $(median "${s_cpu[@]}") CPU s, $(median "${s_wall[@]}") s wall"
echo "preprocess_data.py --workers 1: $(median "${m_cpu[@]}") CPU s, $(median "${m_wall[@]}") s wall;" \
     "Python start-up alone $(median "${i_cpu[@]}") CPU s;" \
     "$(same out_meg bin && same out_meg idx && echo 'byte-identical to sluice' || echo 'DIFFERS from sluice')"
echo "preprocess_data_fast.py (gigatoken): $(median "${f_cpu[@]}") CPU s, $(median "${f_wall[@]}") s wall;" \
     "$(same out_fast bin && same out_fast idx && echo 'byte-identical to sluice' || echo 'differs from sluice:')"
if ! { same out_fast bin && same out_fast idx; }; then
    # tell the kind of difference: the ids of each document, and empty documents
    "$py_meg" - "$work/out_sluice_text_document" "$work/out_fast_text_document" <<'EOF'
import struct, sys
import numpy as np
def seqs(prefix):
    b = open(prefix + ".idx", "rb").read()
    n, = struct.unpack("<Q", b[18:26])
    sizes = np.frombuffer(b, np.int32, n, 34)
    ptr = np.frombuffer(b, np.int64, n, 34 + 4 * n)
    data = np.fromfile(prefix + ".bin", dtype=np.uint16)
    return [data[p // 2:p // 2 + s] for p, s in zip(ptr, sizes)]
a, b = seqs(sys.argv[1]), seqs(sys.argv[2])
eod_only = [s for s in b if len(s) == 1 and s[0] == 50256]
rest = [s for s in b if not (len(s) == 1 and s[0] == 50256)]
same = len(rest) == len(a) and all(len(x) == len(y) and (x == y).all() for x, y in zip(a, rest))
print("  %d sequences against sluice's %d: %d of them hold only <|endoftext|> (empty documents,"
      " which preprocess_data.py and sluice leave out); the other %d are %s" %
      (len(b), len(a), len(eod_only), len(rest), "identical" if same else "NOT identical"))
EOF
fi
