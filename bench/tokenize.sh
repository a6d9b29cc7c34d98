#!/usr/bin/env bash
# Tokenization benchmarks, one core each, side by side in alternating rounds (medians of
# per-round ratios, so that a machine whose speed drifts still gives fair ratios):
#   1. GPT-2 BPE encode: sluice vs tiktoken vs HF tokenizers vs gigatoken, on tinyshakespeare (one
#      string) and on Common Crawl JSONL text, multilingual and English (document by
#      document); CPU seconds of the encoding thread, the ids of all three compared
#      through a hash.
#   2. SentencePiece encode: sluice's own encoder vs spm_encode and vs the library through
#      sluice (spm-lib:), three models, English and multilingual text line by line.
#   3. End to end, JSONL.zst -> .bin/.idx with <|endoftext|>: `sluice tokenize -j 1` vs
#      the same work in Python (tiktoken in a loop writing numpy arrays; Megatron's
#      preprocess_data.py needs PyTorch and Megatron-LM, not installable here). The two
#      outputs are compared byte for byte.
#   4. Peak memory of `sluice tokenize` on 1x and 8x the corpus.
# Usage: bench/tokenize.sh [ROUNDS]   (peers are installed into .venv-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-5}
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/gpt2-bpe" ] || data=/work/shared/data
venv=.venv-bench
if [ ! -x $venv/bin/python ] || ! $venv/bin/python -c "import tiktoken, tokenizers, numpy, gigatoken" 2>/dev/null; then
    python3 -m venv $venv
    $venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
fi
PY=$venv/bin/python
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
make -s build/sluice build/bench_encode
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

gpt2="$data/gpt2-bpe"
r50k="$data/tiktoken-ranks/r50k_base.tiktoken"
shakes="$data/text/tinyshakespeare/input.txt"
web="$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst"
field() { sed -n "s|.*$1 \([^ ]*\).*|\1|p"; }
# CPU seconds (user + sys) and wall seconds of a whole process
cpu() { /usr/bin/time -f "%U %S %e" "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2, $3}'; }
median() { python3 -c "import sys, statistics; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

# English-only Common Crawl text too (the web file above is multilingual)
ccen="$work/cc_en.jsonl"
zcat "$data/jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz" "$data/jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz" > "$ccen"

echo "== 1. GPT-2 BPE encode, one core (MB/s of CPU time; ratios are medians over $rounds rounds)"
for input in shakes web ccen; do
    f=${!input}; mode=""; env=""
    [ $input != shakes ] && mode=jsonl && env="JSONL=1"
    ours=() tt=() hf=() gt=() r_tt=() r_hf=() r_gt=()
    for r in $(seq "$rounds"); do
        o=$(env $env build/bench_encode "gpt2:$gpt2" "$f" 3)
        t=$($PY bench/tokenize_peers.py encode tiktoken "$gpt2" "$r50k" "$f" "$mode" 3)
        h=$($PY bench/tokenize_peers.py encode hf "$gpt2" "$r50k" "$f" "$mode" 1)
        g=$($PY bench/tokenize_peers.py encode gigatoken "$gpt2" "$r50k" "$f" "$mode" 3)
        for x in "$t" "$h" "$g"; do
            [ "$(echo "$x" | field fnv)" = "$(echo "$o" | field fnv)" ] || { echo "ids differ: $o / $x"; exit 1; }
        done
        ours+=("$(echo "$o" | field MB/s)"); tt+=("$(echo "$t" | field MB/s)"); hf+=("$(echo "$h" | field MB/s)")
        gt+=("$(echo "$g" | field MB/s)")
        r_tt+=("$(python3 -c "print(${ours[-1]} / ${tt[-1]})")"); r_hf+=("$(python3 -c "print(${ours[-1]} / ${hf[-1]})")")
        r_gt+=("$(python3 -c "print(${ours[-1]} / ${gt[-1]})")")
    done
    echo "$input: sluice $(median "${ours[@]}") MB/s, tiktoken $(median "${tt[@]}"), HF tokenizers $(median "${hf[@]}")," \
         "gigatoken $(median "${gt[@]}"); sluice/tiktoken $(median "${r_tt[@]}")x, sluice/HF $(median "${r_hf[@]}")x," \
         "sluice/gigatoken $(median "${r_gt[@]}")x; same ids ($(echo "$o" | field tokens) tokens)"
done

echo "== 2. SentencePiece encode: sluice's own encoder vs spm_encode (and the library through sluice), line by line, one core"
# whole processes, CPU seconds; inputs: botchan.txt x16 (English) and the lines of the
# multilingual Common Crawl file; the ids of all three are compared through a hash
for _ in $(seq 16); do cat "$data/sentencepiece/botchan.txt"; done > "$work/botchan16.txt"
zstd -dc "$web" | python3 -c "
import json, sys
for line in sys.stdin:
    for l in json.loads(line)['text'].split('\n'):
        if l.strip(): print(l)" > "$work/web_lines.txt"
for model in c4_en_301_5Mexp2_spm test_model test_ja_model; do
    m="$data/sentencepiece/$model.model"
    for input in botchan16 web_lines; do
        f="$work/$input.txt"
        ours=() lib=() theirs=() ratio=() rlib=()
        for r in $(seq "$rounds"); do
            a=$(LINES=1 cpu build/bench_encode "spm:$m" "$f" 1)
            l=$(LINES=1 cpu build/bench_encode "spm-lib:$m" "$f" 1)
            b=$(cpu sh -c "spm_encode --model '$m' --output_format=id < '$f'")
            ours+=("${a% *}"); lib+=("${l% *}"); theirs+=("${b% *}")
            ratio+=("$(python3 -c "print(${b% *} / max(${a% *}, 0.005))")")
            rlib+=("$(python3 -c "print(${l% *} / max(${a% *}, 0.005))")")
        done
        h1=$(LINES=1 build/bench_encode "spm:$m" "$f" 1 | field fnv); h2=$(LINES=1 build/bench_encode "spm-lib:$m" "$f" 1 | field fnv)
        h3=$(spm_encode --model "$m" --output_format=id < "$f" | python3 -c "
import sys
h = 1469598103934665603
for line in sys.stdin:
    for t in line.split():
        h = ((h ^ int(t)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
print('%016x' % h)")
        [ "$h1" = "$h2" ] && [ "$h1" = "$h3" ] && same="same ids" || same="IDS DIFFER ($h1 $h2 $h3)"
        giga=""
        if [ $model = c4_en_301_5Mexp2_spm ]; then  # gigatoken reads SentencePiece BPE with byte fallback only
            gs=() rg=()
            for r in $(seq "$rounds"); do
                a=$(LINES=1 build/bench_encode "spm:$m" "$f" 1)
                g=$($PY bench/tokenize_peers.py encode gigatoken "$gpt2" "$m" "$f" lines 1)
                gs+=("$(echo "$g" | field MB/s)"); rg+=("$(python3 -c "print($(echo "$a" | field MB/s) / $(echo "$g" | field MB/s))")")
            done
            [ "$(echo "$g" | field fnv)" = "$h1" ] && gsame="same ids" || gsame="gigatoken's ids differ from spm_encode's"
            giga="; encoding thread: gigatoken $(median "${gs[@]}") MB/s, sluice/gigatoken $(median "${rg[@]}")x ($gsame)"
        fi
        echo "$model, $input ($(wc -c < "$f") bytes): CPU s sluice $(median "${ours[@]}"), library via sluice $(median "${lib[@]}")," \
             "spm_encode $(median "${theirs[@]}"); spm_encode/sluice $(median "${ratio[@]}")x, library/sluice $(median "${rlib[@]}")x; $same$giga"
    done
done

echo "== 3. End to end JSONL.zst -> .bin/.idx, one core"
for _ in 1 2 3 4 5 6 7 8; do zstd -dc "$web"; done | zstd -q -3 -o "$work/corpus.jsonl.zst"
mb=$(zstd -dc "$work/corpus.jsonl.zst" | wc -c | python3 -c "import sys; print(int(sys.stdin.read()) / 1e6)")
ours=() theirs=() ratio=() wall=()
for r in $(seq "$rounds"); do
    a=$(cpu build/sluice -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --append-eod --out "$work/s" "$work/corpus.jsonl.zst")
    b=$(cpu $PY bench/tokenize_peers.py preprocess "$r50k" "$work/corpus.jsonl.zst" "$work/p")
    ours+=("${a% *}"); theirs+=("${b% *}")
    ratio+=("$(python3 -c "print(${b% *} / ${a% *})")"); wall+=("$(python3 -c "print(${b#* } / ${a#* })")")
done
cmp -s "$work/s_text_document.bin" "$work/p_text_document.bin" && cmp -s "$work/s_text_document.idx" "$work/p_text_document.idx" \
    && same="byte-identical outputs" || same="OUTPUTS DIFFER"
echo "$mb MB of JSONL: sluice tokenize -j 1 $(median "${ours[@]}") CPU s, Python+tiktoken $(median "${theirs[@]}") CPU s;" \
     "per core $(median "${ratio[@]}")x (wall $(median "${wall[@]}")x); $same"

echo "== 4. Peak memory of sluice tokenize -j 1"
for _ in 1 2 3 4 5 6 7 8; do zstd -dc "$work/corpus.jsonl.zst"; done | zstd -q -3 -o "$work/corpus8.jsonl.zst"  # 8x
for c in corpus corpus8; do
    kb=$( { /usr/bin/time -f "%M" build/sluice -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --out "$work/m" "$work/$c.jsonl.zst"; } 2>&1 | tail -1)
    echo "$c: $(zstd -dc "$work/$c.jsonl.zst" | wc -c) bytes of JSONL, peak RSS $kb KB"
done
