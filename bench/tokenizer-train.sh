#!/usr/bin/env bash
# Byte-level BPE training: `sluice tokenizer train --model-type byte-bpe` vs the `tokenizers`
# library's BpeTrainer (ByteLevel pre-tokenizer, same special token, same vocabulary size)
# on the same JSONL corpus (Common Crawl web text, English Common Crawl and tinyshakespeare
# paragraphs, every 10th document held out):
#   - wall seconds of the whole process and peak RSS (/usr/bin/time), medians of ROUNDS;
#     for BpeTrainer also the seconds of the training call alone (its Python start and
#     JSONL read left out; sluice's time includes reading), and with RAYON_NUM_THREADS=1
#     (sluice trains on one thread); speedups are against the training call alone
#   - bytes per token of the held-out documents, both tokenizer.json files encoded by the
#     tokenizers library
#   - whether the two tokenizer.json files are byte for byte the same
# Usage: bench/tokenizer-train.sh [ROUNDS]   (tokenizers is installed into .venv-bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=${1:-3}
data=${SLUICE_DATA:-$(cd "$root/../.." 2>/dev/null && pwd)/shared/data}
[ -d "$data/jsonl-corpora" ] || data=/work/shared/data
venv=.venv-bench
if [ ! -x $venv/bin/python ] || ! $venv/bin/python -c "import tokenizers" 2>/dev/null; then
    python3 -m venv $venv
    $venv/bin/pip install -q --disable-pip-version-check "$(grep '^tokenizers==' bench/requirements.txt)"
fi
PY=$venv/bin/python
make -s build/sluice
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { python3 -c "import sys, statistics; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

python3 - "$data" "$work" <<'PYEOF'
import gzip, json, sys
data, work = sys.argv[1], sys.argv[2]
docs = []
for f in ["jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.gz",
          "jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz", "jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz"]:
    docs += [json.loads(l)["text"] for l in gzip.open(f"{data}/{f}", "rt", encoding="utf-8")]
docs += open(f"{data}/text/tinyshakespeare/input.txt", encoding="utf-8").read().split("\n\n")
with open(f"{work}/train.jsonl", "w") as tr, open(f"{work}/held.jsonl", "w") as ho:
    for i, d in enumerate(docs):
        (ho if i % 10 == 9 else tr).write(json.dumps({"text": d}) + "\n")
n = sum(len(json.loads(l)["text"].encode()) for l in open(f"{work}/train.jsonl"))
print(f"corpus: {len(docs)} documents; training {n / 1e6:.2f} MB, held out every 10th")
PYEOF

echo "pattern vocab | sluice: s, peak MB | BpeTrainer: process s, peak MB, train call s | 1 thread: train call s | speedup (train call), 1 thread | bytes/token sluice, HF | same file"
for pat in gpt2 cl100k o200k; do
    for vocab in 8192 32768; do
        s=() sm=() h=() hm=() ht=() h1=()
        for r in $(seq "$rounds"); do
            x=$(/usr/bin/time -f "%e %M" build/sluice tokenizer train -q --model-type byte-bpe --pattern $pat \
                --vocab-size $vocab --out "$work/s" "$work/train.jsonl" 2>&1 | tail -1)
            s+=("${x% *}"); sm+=("$(( ${x#* } / 1024 ))")
            x=$(/usr/bin/time -f "%e %M" $PY bench/tokenizer_train_peer.py train $vocab $pat "$work/train.jsonl" "$work/h.json" 2>&1 | tr '\n' ' ')
            ht+=("$(echo "$x" | awk '{print $2}')"); h+=("$(echo "$x" | awk '{print $3}')")
            hm+=("$(( $(echo "$x" | awk '{print $4}') / 1024 ))")
            x=$(RAYON_NUM_THREADS=1 $PY bench/tokenizer_train_peer.py train $vocab $pat "$work/train.jsonl" "$work/h1.json")
            h1+=("$(echo "$x" | awk '{print $2}')")
        done
        bs=$($PY bench/tokenizer_train_peer.py bpt "$work/s.tokenizer.json" "$work/held.jsonl" | awk '{print $2}')
        bh=$($PY bench/tokenizer_train_peer.py bpt "$work/h.json" "$work/held.jsonl" | awk '{print $2}')
        same=no; cmp -s "$work/s.tokenizer.json" "$work/h.json" && same=yes
        ms=$(median "${s[@]}"); mh=$(median "${h[@]}"); mht=$(median "${ht[@]}"); mh1=$(median "${h1[@]}")
        printf "%s %s | %s s, %s MB | %s s, %s MB, %s s | %s s | %.1fx, %.1fx | %s, %s | %s\n" $pat $vocab \
            "$ms" "$(median "${sm[@]}")" "$mh" "$(median "${hm[@]}")" "$mht" "$mh1" \
            "$(python3 -c "print($mht / $ms)")" "$(python3 -c "print($mh1 / $ms)")" "$bs" "$bh" $same
    done
done
