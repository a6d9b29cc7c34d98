#!/usr/bin/env bash
# Tokenization benchmarks, one core each, side by side in alternating rounds (medians of
# per-round ratios, so that a machine whose speed drifts still gives fair ratios):
#   1. Byte-level BPE encode (GPT-2, cl100k_base, o200k_base, Llama 3, Llama 4): sluice vs
#      gigatoken (and, for GPT-2, tiktoken and HF tokenizers), on tinyshakespeare (one
#      string) and on Common Crawl JSONL text, multilingual and English (document by
#      document); CPU seconds of the encoding thread, the ids of all compared through a hash.
#  1b. The whole `sluice tokenize -j 1` process against gigatoken's encode alone.
#   2. SentencePiece encode: sluice's own encoder vs spm_encode and vs the library through
#      sluice (spm-lib:), three models, English and multilingual text line by line.
#   3. End to end, JSONL.zst -> .bin/.idx with <|endoftext|>: `sluice tokenize -j 1` vs
#      the same work in Python (tiktoken in a loop writing numpy arrays). The two outputs
#      are compared byte for byte. Megatron-LM's own two scripts: bench/tokenize_megatron.sh.
#   4. Peak memory of `sluice tokenize` on 1x and 8x the corpus.
#   5. Scaling (-j N threads over one file, and mpirun -np N ranks over the corpus as files;
#      wall seconds) and the floor: zstd -dc, cat and memcpy of the same bytes.
# Usage: bench/tokenize.sh [ROUNDS]   (peers are installed into .venv-bench)
#        SECTIONS="1 1b 5" bench/tokenize.sh 3   runs only those sections
#        VOCABS="o200k llama4" ...                those vocabularies in sections 1 and 1b
# Section 5 on a machine with more cores (sections 4 and 5 need no peers, nor a compiler when
# SLUICE_BIN names a built binary):
#        SECTIONS=5 JOBS="1 2 4 8 16" RANKS="1 2 4 8 16" SCALE_COPIES=64 bench/tokenize.sh 3
#   JOBS, RANKS   the thread and rank counts (default "1 2"); SCALE_COPIES: copies of the
#   multilingual file in section 5's corpus and files (default 8, at least the largest rank)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-5}
vocabs=${VOCABS:-gpt2 cl100k o200k llama3 llama4}  # of sections 1 and 1b
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/gpt2-bpe" ] || data=/work/shared/data
only() { [ -z "${SECTIONS:-}" ] || [[ " $SECTIONS " == *" $1 "* ]]; }
venv=.venv-bench
PY=python3  # sections 4 and 5 need only numpy (for the memcpy floor)
[ -x $venv/bin/python ] && PY=$venv/bin/python
if only 1 || only 1b || only 2 || only 3; then
    if [ ! -x $venv/bin/python ] || ! $venv/bin/python -c "import tiktoken, tokenizers, numpy, gigatoken" 2>/dev/null; then
        python3 -m venv $venv
        $venv/bin/pip install -q --disable-pip-version-check -r bench/requirements.txt
    fi
    # Meta's Llama 3 and Llama 4 rank files (tokenizer.model) and reference tokenizer come
    # with llama_models; its own dependencies are for its other parts, not needed here
    $venv/bin/python -c "import llama_models" 2>/dev/null ||
        $venv/bin/pip install -q --disable-pip-version-check --no-deps llama-models==0.3.0
    PY=$venv/bin/python
    llama=$($PY -c "import llama_models, os; print(os.path.dirname(llama_models.__file__))")
fi
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1
sluice=build/sluice
if [ -n "${SLUICE_BIN:-}" ]; then
    sluice=$(realpath "$SLUICE_BIN")
else
    make -s build/sluice build/bench_encode
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT

gpt2="$data/gpt2-bpe"
r50k="$data/tiktoken-ranks/r50k_base.tiktoken"
shakes="$data/text/tinyshakespeare/input.txt"
web="$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst"
field() { sed -n "s|.*$1 \([^ ]*\).*|\1|p"; }
# gigatoken 0.10 panics loading Llama 3's tokenizer.model; bench/tokenize_peers.py then gives
# it the same vocabulary as a tokenizer.json (every split of a token a merge, at the token's
# rank, as tiktoken merges), written once into $PEER_CACHE (GIGA_JSON=1). Said in the output.
giga_note() {
    local why
    unset GIGA_JSON
    if ! why=$($PY bench/tokenize_peers.py loads "$1" 2>/dev/null); then
        echo "   gigatoken cannot load $1 ($why): it reads the same vocabulary as a tokenizer.json"
        export GIGA_JSON=1
    fi
}
export PEER_CACHE="$work"
# the rank file of a vocabulary: OpenAI's from the data folder, Meta's from llama_models
ranks_of() {
    case $1 in
    gpt2) echo "$r50k" ;;
    llama3 | llama4) echo "$llama/$1/tokenizer.model" ;;
    *) echo "$data/tiktoken-ranks/${1}_base.tiktoken" ;;
    esac
}
# CPU seconds (user + sys) and wall seconds of a whole process, to the microsecond (the
# 10 ms steps of /usr/bin/time were coarse for runs of a tenth of a second)
cpu() {
    python3 -c '
import resource, subprocess, sys, time
def used():  # of the children waited for (the interpreter may have run some of its own)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
u = used()
t = time.perf_counter()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
w = time.perf_counter() - t
print("%.4f %.4f" % (used() - u, w))' "$@"
}
median() { python3 -c "import sys, statistics; print('%.3f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

# English-only Common Crawl text too (the web file above is multilingual)
ccen="$work/cc_en.jsonl"
zcat "$data/jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz" "$data/jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz" > "$ccen"

# 8 copies of the multilingual file (sections 3-5)
for _ in 1 2 3 4 5 6 7 8; do zstd -dc "$web"; done | zstd -q -3 -o "$work/corpus.jsonl.zst"

if only 1; then
echo "== 1. byte-level BPE encode, one core (MB/s of CPU time; ratios are medians over $rounds rounds)"
# GPT-2 (also against tiktoken and HF tokenizers), cl100k_base, o200k_base and Meta's Llama 3
# and Llama 4 rank files (tokenizer.model; their ids also checked against Meta's reference
# tokenizer in the first round) against gigatoken.
# sluice "cold": every round starts with an empty piece cache; "warm": the rounds share one
# encoder. gigatoken's piece cache persists between calls: "best" is its best of 3 calls
# (warm), "first" its first call on the text (after a one-line warm-up).
for vocab in $vocabs; do
    ranks=$(ranks_of $vocab)
    if [ $vocab = gpt2 ]; then spec="gpt2:$gpt2"; else spec="tiktoken:$ranks"; fi
    giga_note "$ranks"
    for input in shakes web ccen; do
        f=${!input}; mode=""; env=""
        [ $input != shakes ] && mode=jsonl && env="JSONL=1"
        ours=() warm=() tt=() hf=() gt=() gf=() r_tt=() r_hf=() r_gt=() r_gf=(); t=""; h=""
        for r in $(seq "$rounds"); do
            o=$(env $env build/bench_encode "$spec" "$f" 3)
            w=$(env $env WARM=1 build/bench_encode "$spec" "$f" 3)
            g=$($PY bench/tokenize_peers.py encode gigatoken "$gpt2" "$ranks" "$f" "$mode" 3)
            if [ "$vocab $r" = "llama3 1" ] || [ "$vocab $r" = "llama4 1" ]; then
                t=$($PY bench/tokenize_peers.py encode tiktoken "$gpt2" "$ranks" "$f" "$mode" 1)
            fi
            if [ $vocab = gpt2 ]; then
                t=$($PY bench/tokenize_peers.py encode tiktoken "$gpt2" "$r50k" "$f" "$mode" 3)
                h=$($PY bench/tokenize_peers.py encode hf "$gpt2" "$r50k" "$f" "$mode" 1)
                tt+=("$(echo "$t" | field MB/s)"); hf+=("$(echo "$h" | field MB/s)")
                r_tt+=("$(python3 -c "print($(echo "$o" | field MB/s) / ${tt[-1]})")")
                r_hf+=("$(python3 -c "print($(echo "$o" | field MB/s) / ${hf[-1]})")")
            fi
            for x in "$g" "$w" ${t:+"$t"} ${h:+"$h"}; do
                [ "$(echo "$x" | field fnv)" = "$(echo "$o" | field fnv)" ] || { echo "ids differ: $o / $x"; exit 1; }
            done
            ours+=("$(echo "$o" | field MB/s)"); warm+=("$(echo "$w" | field MB/s)")
            gt+=("$(echo "$g" | field MB/s)"); gf+=("$(echo "$g" | field first)")
            r_gt+=("$(python3 -c "print(${warm[-1]} / ${gt[-1]})")"); r_gf+=("$(python3 -c "print(${ours[-1]} / ${gf[-1]})")")
        done
        extra=""
        [ $vocab = gpt2 ] && extra="; tiktoken $(median "${tt[@]}"), HF tokenizers $(median "${hf[@]}"), sluice cold/tiktoken $(median "${r_tt[@]}")x, sluice cold/HF $(median "${r_hf[@]}")x"
        [ -n "$t" ] && [ $vocab != gpt2 ] && extra="; the same ids as Meta's reference tokenizer"
        echo "$vocab $input: sluice cold $(median "${ours[@]}") MB/s, warm $(median "${warm[@]}");" \
             "gigatoken first $(median "${gf[@]}"), best $(median "${gt[@]}");" \
             "cold/first $(median "${r_gf[@]}")x, warm/best $(median "${r_gt[@]}")x$extra; same ids ($(echo "$o" | field tokens) tokens)"
        t=""; h=""
    done
done
fi

if only 1b; then
echo "== 1b. Whole command against gigatoken's encode, one core: sluice tokenize -j 1 (CPU s of the"
echo "   process: start-up, loading, zstd, JSON, encoding, writing) vs the CPU s of one gigatoken"
echo "   encode_batch_list call alone (after a one-line warm-up); sluice's encoder alone (a fresh"
echo "   encoder, CPU s of its thread) for the share of the rest. Inputs: the 8x corpus (after its"
echo "   first copy, the pieces are in both tools' caches) and the multilingual file once (every"
echo "   piece new: where start-up and loading weigh most)"
# The compiled-vocabulary cache (docs/formats/bpe-cache.md) is filled by an untimed first
# run, as it is after a user's first run; "no cache" is a run with the cache off.
export SLUICE_CACHE_DIR="$work/vocab-cache"
for input in corpus once; do
    if [ $input = corpus ]; then f="$work/corpus.jsonl.zst"; else f="$web"; fi
    for vocab in $vocabs; do
        ranks=$(ranks_of $vocab)
        if [ $vocab = gpt2 ]; then spec="gpt2:$gpt2"; else spec="tiktoken:$ranks"; fi
        "$sluice" -q tokenize -j 1 --tokenizer "$spec" --out "$work/w" "$f"
        giga_note "$ranks"
        ours=() off=() enc=() gs=() ratio=() roff=()
        for r in $(seq "$rounds"); do
            a=$(cpu "$sluice" -q tokenize -j 1 --tokenizer "$spec" --out "$work/w" "$f")
            n=$(SLUICE_CACHE_DIR= cpu "$sluice" -q tokenize -j 1 --tokenizer "$spec" --out "$work/w" "$f")
            e=$(JSONL=1 build/bench_encode "$spec" "$f" 1 | field seconds)
            g=$($PY bench/tokenize_peers.py encode gigatoken "$gpt2" "$ranks" "$f" jsonl 1)
            gsec=$(echo "$g" | field seconds)
            ours+=("${a% *}"); off+=("${n% *}"); enc+=("$e"); gs+=("$gsec")
            ratio+=("$(python3 -c "print($gsec / ${a% *})")")
            roff+=("$(python3 -c "print($gsec / ${n% *})")")
        done
        echo "$input $vocab: sluice tokenize -j 1 $(median "${ours[@]}") CPU s ($(median "${off[@]}") without the" \
             "vocabulary cache; its encoder alone $(median "${enc[@]}")), gigatoken encode $(median "${gs[@]}") CPU s;" \
             "sluice's whole command is $(median "${ratio[@]}")x as fast as gigatoken's encode" \
             "($(median "${roff[@]}")x without the cache)"
    done
done
unset SLUICE_CACHE_DIR
fi

if only 2; then
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
fi

if only 3; then
echo "== 3. End to end JSONL.zst -> .bin/.idx, one core"
mb=$(zstd -dc "$work/corpus.jsonl.zst" | wc -c | python3 -c "import sys; print(int(sys.stdin.read()) / 1e6)")
ours=() theirs=() ratio=() wall=()
for r in $(seq "$rounds"); do
    a=$(cpu "$sluice" -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --append-eod --out "$work/s" "$work/corpus.jsonl.zst")
    b=$(cpu $PY bench/tokenize_peers.py preprocess "$r50k" "$work/corpus.jsonl.zst" "$work/p")
    ours+=("${a% *}"); theirs+=("${b% *}")
    ratio+=("$(python3 -c "print(${b% *} / ${a% *})")"); wall+=("$(python3 -c "print(${b#* } / ${a#* })")")
done
cmp -s "$work/s_text_document.bin" "$work/p_text_document.bin" && cmp -s "$work/s_text_document.idx" "$work/p_text_document.idx" \
    && same="byte-identical outputs" || same="OUTPUTS DIFFER"
echo "$mb MB of JSONL: sluice tokenize -j 1 $(median "${ours[@]}") CPU s, Python+tiktoken $(median "${theirs[@]}") CPU s;" \
     "per core $(median "${ratio[@]}")x (wall $(median "${wall[@]}")x); $same"
fi

if only 4; then
echo "== 4. Peak memory of sluice tokenize -j 1"
for _ in 1 2 3 4 5 6 7 8; do zstd -dc "$work/corpus.jsonl.zst"; done | zstd -q -3 -o "$work/corpus8.jsonl.zst"  # 8x
for c in corpus corpus8; do
    kb=$( { /usr/bin/time -f "%M" "$sluice" -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --out "$work/m" "$work/$c.jsonl.zst"; } 2>&1 | tail -1)
    echo "$c: $(zstd -dc "$work/$c.jsonl.zst" | wc -c) bytes of JSONL, peak RSS $kb KB"
done
fi

if only 5; then
JOBS=${JOBS:-1 2}
RANKS=${RANKS:-1 2}
copies=${SCALE_COPIES:-8}
for n in $RANKS; do [ "$n" -le "$copies" ] || copies=$n; done
# the corpus as one file (threads) and as $copies files (ranks split the input files)
mkdir -p "$work/parts"
for i in $(seq "$copies"); do cp "$web" "$work/parts/part-$i.jsonl.zst"; done
for i in $(seq "$copies"); do zstd -dc "$web"; done > "$work/scale.jsonl"
zstd -q -3 -T0 "$work/scale.jsonl" -o "$work/scale.jsonl.zst"
echo "== 5. Scaling and the floor: wall seconds on $copies copies ($(wc -c < "$work/scale.jsonl") bytes of JSONL; nproc $(nproc))"
# wall seconds of a command (bash's own timer: machines without /usr/bin/time run this too)
wall() { local TIMEFORMAT=%R; { time "$@" > /dev/null 2>&1; } 2>&1 | tail -1; }
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
have_mpirun=$(command -v mpirun >/dev/null && echo 1 || true)
mkdir -p "$work/tiny" && printf '{"text":"a"}\n' > "$work/tiny/one.jsonl"
export SLUICE_CACHE_DIR="$work/vocab-cache"
"$sluice" -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --out "$work/j0" "$work/scale.jsonl.zst"
declare -A tj tn
n0=() z=() c=()
for r in $(seq "$rounds"); do
    for n in $JOBS; do
        tj[$n]+=" $(wall "$sluice" -q tokenize -j "$n" --tokenizer "gpt2:$gpt2" --out "$work/j$n" "$work/scale.jsonl.zst")"
    done
    if [ -n "$have_mpirun" ]; then
        for n in $RANKS; do
            tn[$n]+=" $(wall "${MPIRUN[@]}" -np "$n" "$sluice" -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --out "$work/n$n" "$work/parts")"
        done
        # the fixed cost: mpirun, MPI_Init's wire-up (0.36 s for one rank on a 2-core VM) and
        # loading the vocabulary, on a one-document input (--version would skip MPI_Init)
        n0+=("$(wall "${MPIRUN[@]}" -np "${RANKS##* }" "$sluice" -q tokenize -j 1 --tokenizer "gpt2:$gpt2" --out "$work/n0" "$work/tiny")")
    fi
    z+=("$(wall sh -c "zstd -dc '$work/scale.jsonl.zst' > /dev/null")")
    c+=("$(wall sh -c "cat '$work/scale.jsonl' > /dev/null")")
done
# the reading thread's own rate (decompressing and splitting lines, less what it wrote while
# it would otherwise have waited): what -j N on one file cannot pass on this machine
reader=$("$sluice" -v tokenize -j "${JOBS##* }" --tokenizer "gpt2:$gpt2" --out "$work/jr" "$work/scale.jsonl.zst" 2>&1 |
    sed -n 's/.*the reading thread took \([0-9.]*\) CPU s.*(\([0-9]*\) MB\/s without).*/\1 CPU s, \2 MB\/s/p')
unset SLUICE_CACHE_DIR
for n in $JOBS; do
    cmp -s "$work/j0_text_document.bin" "$work/j${n}_text_document.bin" || echo "-j $n output differs from -j 1"
done
first=""
for n in $RANKS; do
    [ -n "$have_mpirun" ] || break
    [ -z "$first" ] && first=$n
    cmp -s "$work/n${first}_text_document.bin" "$work/n${n}_text_document.bin" || echo "-np $n output differs from -np $first"
done
mc=$($PY -c "
import numpy as np, time
a = np.frombuffer(open('$work/scale.jsonl', 'rb').read(), dtype=np.uint8); b = np.empty_like(a)
best = 1e9
for _ in range(5):
    t0 = time.perf_counter(); np.copyto(b, a); best = min(best, time.perf_counter() - t0)
print('%.4f' % best)" 2>/dev/null || echo "n/a (no numpy)")
mb=$(python3 -c "print($(wc -c < "$work/scale.jsonl") / 1e6)")
rate() { python3 -c "print('%.0f MB/s' % ($mb / max($1, 1e-3)))"; }
line="GPT-2, threads, wall s:"
for n in $JOBS; do
    # shellcheck disable=SC2086
    m=$(median ${tj[$n]}); line+=" -j $n $m ($(rate "$m"));"
done
echo "$line load $(cut -d' ' -f1 /proc/loadavg)"
echo "one rank's reading thread at -j ${JOBS##* }: $reader (the most one file gives -j N here)"
if [ -n "$have_mpirun" ]; then
    line="GPT-2, MPI ranks over $copies files, -j 1 a rank, wall s:"
    for n in $RANKS; do
        # shellcheck disable=SC2086
        m=$(median ${tn[$n]}); line+=" -np $n $m ($(rate "$m"));"
    done
    echo "$line the fixed cost (mpirun -np ${RANKS##* }, MPI_Init, the vocabulary) on a one-document input $(median "${n0[@]}") s"
else
    echo "MPI: skipped (no mpirun)"
fi
echo "floor: zstd -dc $(median "${z[@]}") s ($(rate "$(median "${z[@]}")")), cat of the JSONL $(median "${c[@]}") s, memcpy of its bytes $mc s"
fi

