#!/usr/bin/env bash
# tiny-gpt learns tinyshakespeare (GPT-2 BPE ids, one document per speech).
#
# The bound. Let H be the entropy of the target tokens of the validation samples (the
# tokens the validation loss is measured on), computed by tests/oracle/unigram_bound.py
# with Megatron's indexing. By Gibbs' inequality no predictor that ignores the context -
# not even the unigram distribution fitted to exactly these tokens - has a cross-entropy
# below H on them. H is 5.68 nats here (8,192 targets, 1,699 distinct). We require
# val_loss <= H - MARGIN: with MARGIN = 0.5 nats the model's perplexity is at most
# exp(-0.5) = 0.61 of the best context-free one's, which only a model that uses the
# context reaches. (The untrained model starts at ln(50257) = 10.8.)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ "${SANITIZE:-0}" = 1 ]; then
    echo "skip: the learning test (300 steps of a 3.3M-parameter model) is too slow under ASan"
    finish
    exit 0
fi
MARGIN=0.5
PREFIX="$FIX/tinyshakespeare/tinyshakespeare_text_document"
STEPS=300

case_ "tiny-gpt on tinyshakespeare, $STEPS steps of 8 x 128 tokens"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" data.prefix="$PREFIX" data.cache_dir="$T/cache" \
    train.steps=$STEPS train.micro_batch_size=8 train.global_batch_size=8 optim.lr=6e-3 \
    optim.min_lr=6e-4 optim.warmup_steps=10 eval.interval=$STEPS eval.iters=8 log.file="$T/log.jsonl" \
    log.interval=50
expect_rc 0
val=$(python3 -c "import json,sys; print([json.loads(l)['val_loss'] for l in open(sys.argv[1]) if '\"valid\"' in l][-1])" "$T/log.jsonl")
read -r H ntargets ntypes < <("$PY" "$ROOT/tests/oracle/unigram_bound.py" "$PREFIX" 128 969,30,1 1234 64)
bound=$(python3 -c "print(round($H - $MARGIN, 4))")
echo "  validation loss $val after $STEPS steps; unigram entropy of the $ntargets validation targets $H; bound $bound"
case_ "validation loss below the unigram entropy minus $MARGIN nats"
python3 -c "import sys; sys.exit(0 if $val <= $bound else 1)" && ok || fail "val_loss $val > $bound"

finish
