#!/usr/bin/env bash
# Sentence splitting and Punkt training, one core: sluice's Punkt (build/bench_punkt;
# `sluice tokenizer punkt-train`) against NLTK's (bench/punkt_peer.py: PunktTokenizer,
# PunktTrainer), with the same model (sluice's English, configs/punkt/english) on the same
# documents: Wikipedia articles (the gensim enwiki excerpt, extracted by sluice), Common
# Crawl web text (multilingual, and English) and the UDHR in 107 language versions. CPU
# seconds of the splitting alone (reading excluded); the sentences of both are compared
# through a hash, and the trained parameters file by file. Ratios are medians over ROUNDS.
# Usage: bench/punkt.sh [ROUNDS]   (NLTK from .venv-bench, else .venv; PY=... to choose)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-3}
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/gpt2-bpe" ] || data=/work/shared/data
PY=${PY:-}
for p in .venv-bench/bin/python .venv/bin/python; do
    [ -z "$PY" ] && [ -x "$p" ] && "$p" -c "import nltk" 2>/dev/null && PY=$p
done
[ -n "$PY" ] || { echo "bench/punkt.sh: no Python with NLTK (pip install -r bench/requirements.txt)" >&2; exit 2; }
make -s build/sluice build/bench_punkt
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
field() { sed -n "s|.*$1 \([^ ]*\).*|\1|p"; }
median() { python3 -c "import sys, statistics; print('%.0f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
ratio_median() { python3 -c "import sys, statistics; print('%.1f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

build/sluice -q extract --format wiki --out "$work/wiki" \
    "$data/wikipedia-xml/gensim/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
zstd -q -dc "$work"/wiki/part-*.jsonl.zst > "$work/wiki.jsonl"
zstd -q -dc "$data/jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst" > "$work/web.jsonl"
zcat "$data/jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz" "$data/jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz" > "$work/ccen.jsonl"
cp "$data/text/udhr/udhr.jsonl" "$work/udhr.jsonl"
model=configs/punkt/english
export NLTK_DATA="$work/nltk_data"
mkdir -p "$NLTK_DATA/tokenizers/punkt_tab"
cp -r "$model" "$NLTK_DATA/tokenizers/punkt_tab/bench"

echo "== sentence splitting, one core (sentences/s of CPU time; ratios are medians over $rounds rounds)"
for mode in default keepnl; do
    for input in wiki web ccen udhr; do
        f="$work/$input.jsonl"
        ours=() nltk=() ratio=()
        for r in $(seq "$rounds"); do
            o=$(env $([ $mode = keepnl ] && echo KEEPNL=1) build/bench_punkt "$model" "$f" 3)
            n=$($PY bench/punkt_peer.py split bench "$f" 1 $([ $mode = keepnl ] && echo keepnl))
            [ "$(echo "$n" | field fnv)" = "$(echo "$o" | field fnv)" ] || { echo "sentences differ: $mode $input: $o / $n"; exit 1; }
            ours+=("$(echo "$o" | field sentences/s)"); nltk+=("$(echo "$n" | field sentences/s)")
            ratio+=("$(python3 -c "print(${ours[-1]} / ${nltk[-1]})")")
        done
        echo "$mode, $input ($(wc -c < "$f") bytes, $(echo "$o" | field sentences) sentences, the same): sluice" \
             "$(median "${ours[@]}") sentences/s ($(echo "$o" | field MB/s) MB/s), NLTK $(median "${nltk[@]}") sentences/s;" \
             "sluice/NLTK $(ratio_median "${ratio[@]}")x"
    done
done

echo "== Punkt training on all four (one round)"
cat "$work"/{wiki,web,ccen,udhr}.jsonl > "$work/all.jsonl"
t0=$(python3 -c "import time; print(time.time())")
/usr/bin/time -f "%U %S" -o "$work/time" build/sluice -q tokenizer punkt-train --out "$work/ours" "$work/all.jsonl"
ours=$(awk '{ print $1 + $2 }' "$work/time")
theirs=$($PY bench/punkt_peer.py train "$work/all.jsonl" "$work/theirs" | field seconds)
same=yes
for f in abbrev_types.txt collocations.tab sent_starters.txt ortho_context.tab; do
    cmp -s "$work/ours/$f" "$work/theirs/$f" || same=no
done
echo "punkt-train, $(wc -c < "$work/all.jsonl") bytes of JSONL: sluice ${ours} CPU s (whole process)," \
     "PunktTrainer ${theirs} CPU s (training alone); sluice/NLTK $(python3 -c "print('%.0f' % ($theirs / $ours))")x;" \
     "same parameters: $same"
