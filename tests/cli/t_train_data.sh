#!/usr/bin/env bash
# The training data path against a Python port of Megatron-LM's indexing: document, sample
# and shuffle indices (cached .npy files) and the tokens of every sample the trainer read,
# for one epoch, several epochs with and without a separate last epoch, and a 0.3/0.7
# blend; the cache is reused; bad prefixes, weights and lengths are clear errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
CFG="$ROOT/configs/models/tiny-gpt.yaml"
MI="$ORACLE/megatron_index.py"

# two prefixes of random documents (1..60 tokens, ids < 1000)
"$PY" - "$T" <<'PY'
import json, sys, numpy as np
rng = np.random.default_rng(7)
for name, n in (("a", 200), ("b", 90)):
    docs = [rng.integers(0, 1000, size=int(rng.integers(1, 61))).tolist() for _ in range(n)]
    json.dump(docs, open("%s/%s.json" % (sys.argv[1], name), "w"))
# documents all shorter than 8 tokens
json.dump([rng.integers(0, 1000, size=int(rng.integers(1, 8))).tolist() for _ in range(300)],
          open(sys.argv[1] + "/short.json", "w"))
PY
for n in a b short; do "$PY" "$MI" write "$T/$n" "$T/$n.json"; done

RUN=(model.vocab_size=1000 model.num_layers=1 train.seq_len=16 train.micro_batch_size=4
     train.global_batch_size=8 eval.interval=0 train.resume=none debug.dump_steps=3)

# steps x 8 samples of 16 tokens over ~5,900 train tokens (369 samples per epoch):
#   20 steps: 1 epoch; 100 steps: 3 epochs, last one separate; 135 steps: 3 epochs, not separate
for steps in 20 100 135; do
    case_ "prefix a, $steps steps: indices and samples equal Megatron's"
    run "$SLUICE" train "$CFG" data.prefix="$T/a" data.cache_dir="$T/cache$steps" train.steps=$steps \
        "${RUN[@]}" debug.dump_dir="$T/dump$steps" train.threads=1 eval.interval=0 \
        checkpoint.dir="$T/ck$steps" log.file="$T/log$steps"
    expect_rc 0
    run "$PY" "$MI" check --seq-len 16 --split 969,30,1 --seed 1234 --samples $((steps * 8)),0,0 \
        --cache "$T/cache$steps" --dump "$T/dump$steps" --steps 3 --gbs 8 "$T/a"
    expect_rc 0
    expect_out "megatron index oracle: 0 mismatches"
    grep -E "epochs|equal" "$T/out" | sed "s/^/  [$steps steps] /" | grep -v "^  \[$steps steps\] ok" || true
done

case_ "the cache is reused"
run "$SLUICE" train "$CFG" data.prefix="$T/a" data.cache_dir="$T/cache20" train.steps=20 "${RUN[@]}"
expect_rc 0
expect_err "(from the cache"

case_ "default cache location: next to the data, Megatron's layout"
run "$SLUICE" train "$CFG" data.prefix="$T/a" train.steps=2 "${RUN[@]}" eval.interval=1 eval.iters=1
expect_rc 0
expect_eq "$(ls "$T/a/cache/GPTDataset_indices" | sed 's/^[0-9a-f]*-//' | sort | tr '\n' ' ')" \
    "GPTDataset-train-description.txt GPTDataset-train-document_index.npy GPTDataset-train-sample_index.npy GPTDataset-train-shuffle_index.npy GPTDataset-valid-description.txt GPTDataset-valid-document_index.npy GPTDataset-valid-sample_index.npy GPTDataset-valid-shuffle_index.npy "
expect_out "validation at step 1 | val_loss"

case_ "blend 0.3 a + 0.7 b: Megatron's greedy order over both indices"
run "$SLUICE" train "$CFG" data.prefix="0.3 $T/a 0.7 $T/b" data.cache_dir="$T/cacheab" train.steps=10 \
    "${RUN[@]}" debug.dump_dir="$T/dumpab"
expect_rc 0
run "$PY" "$MI" check --seq-len 16 --samples 80,0,0 --dump "$T/dumpab" --steps 3 --gbs 8 0.3 "$T/a" 0.7 "$T/b"
expect_rc 0
expect_out "megatron index oracle: 0 mismatches"

case_ "data.prefix as a YAML list"
run "$SLUICE" train "$CFG" 'data.prefix=[0.5, '"$T/a"', 0.5, '"$T/b"']' data.cache_dir="$T/cacheab2" \
    train.steps=1 "${RUN[@]}"
expect_rc 0

# ---- bad input -----------------------------------------------------------------------
case_ "a prefix whose .idx is missing"
run "$SLUICE" train "$CFG" data.prefix="$T/missing" train.steps=1 "${RUN[@]}"
expect_rc 1
expect_err "missing.idx"

case_ "weights that do not sum to 1"
run "$SLUICE" train "$CFG" data.prefix="0.3 $T/a 0.3 $T/b" train.steps=1 "${RUN[@]}"
expect_rc 1
expect_err "weights sum to 0.6, not 1"
expect_err "data.normalize_weights=true"
run "$SLUICE" train "$CFG" data.prefix="0.3 $T/a 0.3 $T/b" data.normalize_weights=true \
    data.cache_dir="$T/cachen" train.steps=1 "${RUN[@]}"
expect_rc 0

case_ "token ids outside the model's vocabulary"
run "$SLUICE" train "$CFG" data.prefix="$T/a" data.cache_dir="$T/cache20" train.steps=1 "${RUN[@]}" \
    model.vocab_size=500
expect_rc 1
expect_err "outside the model's vocabulary of 500"
expect_err "$T/a"

case_ "every document shorter than seq_len: samples span documents (a note, not an error)"
run "$SLUICE" train "$CFG" data.prefix="$T/short" data.cache_dir="$T/cs" train.steps=2 "${RUN[@]}"
expect_rc 0
expect_err "every document is shorter than seq_len + 1"

case_ "a split with fewer tokens than one sample repeats them over epochs, as Megatron does"
run "$SLUICE" train "$CFG" data.prefix="$T/short" data.cache_dir="$T/cs" data.split=99,1,0 \
    train.steps=1 "${RUN[@]}" eval.interval=1 train.seq_len=64
expect_rc 0
expect_out "validation at step 1"

case_ "a bad split string"
run "$SLUICE" train "$CFG" data.prefix="$T/a" data.split=0,0,0 train.steps=1 "${RUN[@]}"
expect_rc 1
expect_err "data.split"

finish
