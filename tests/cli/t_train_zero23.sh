#!/usr/bin/env bash
# ZeRO-2 and ZeRO-3 on the CPU path (optim.zero=2|3). ZeRO-2 reduce-scatters each layer's
# gradient as its backward finishes and sums the rank's piece over the micro-batches;
# ZeRO-3 also keeps only the rank's pieces of the parameters and all-gathers a layer's
# before its forward and its backward. Against ZeRO-1 of the same layout: bit for bit at one
# micro-batch a step (the same reduce-scatter of the same values), within RTOL_ACC with
# several (a piece is then summed over ranks per micro-batch and then over the micro-batches,
# DeepSpeed's order, instead of over the micro-batches first: each element's fp32 sum is
# reordered, a few ulp: measured at most 1.7e-7, a second moment). Against one rank: the
# tolerance of tests/cli/parallel_lib.sh. Layouts: tiny-llama at DP=2 and DP=4 with both
# stages, tiny-gpt (tied embeddings, biases) at DP x TP = 2 x 2 with sequence parallel under
# ZeRO-3 and at DP x PP = 2 x 2 under ZeRO-2 (the tied embedding's copies at the pipeline's
# two ends). Rank 0 allocates what the estimate printed before step 1 says. Checkpoints hold
# full tensors whatever the stage: a ZeRO-1 checkpoint resumes under ZeRO-3 (bit for bit),
# a ZeRO-3 one under ZeRO-1 at DP=4 and on one rank.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"

LLAMA="$ROOT/configs/models/tiny-llama.yaml"
RTOL_ACC=1e-6
case_ "optim.zero is a ZeRO stage, 0 to 3"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" optim.zero=4 --print-config
expect_rc 2
expect_err "optim.zero: must be 0, 1, 2 or 3 (the ZeRO stage), got 4"
case_ "--print-config: optim.zero=3 is printed, and its estimate is not ZeRO-1's"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" train.micro_batch_size=2 parallel.data=2 optim.zero=1 \
    --print-config
expect_rc 0
z1=$(sed -n 's/.*CPU fp32: \([0-9.]* [kMG]*B\) weights + gradients + AdamW.*/\1/p' "$T/out")
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" train.micro_batch_size=2 parallel.data=2 optim.zero=3 \
    --print-config
expect_rc 0
expect_out "  zero: 3"
z3=$(sed -n 's/.*CPU fp32: \([0-9.]* [kMG]*B\) weights + gradients + AdamW.*/\1/p' "$T/out")
[ -n "$z3" ] && [ "$z1" != "$z3" ] && ok || fail "ZeRO-1 estimate '$z1', ZeRO-3 '$z3'"

if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi

# memory MODEL NAME STAGE DP: rank 0 keeps 1/DP of its parameters' state and allocated what the
# estimate says (weights, gradients, moments and the working buffers of cpu_zero.c)
memory() {
    local err="$T/$1-$2.err" stage=$3 dp=$4
    case_ "$1 $2: rank 0 keeps the ZeRO-$stage state of 1/$dp of its parameters"
    local line
    line=$(sed -n "s/.*optim.zero=$stage: ZeRO-$stage over \([0-9]*\) data-parallel ranks: rank 0 keeps the AdamW moments[a-z, ]* of \([0-9]*\) of its \([0-9]*\) parameters.*/\1 \2 \3/p" "$err")
    if [ -n "$line" ] && "$PY" - "$dp" $line <<'PY'; then ok; else fail "ZeRO line: '$line'"; fi
import sys
want, dp, kept, params = map(int, sys.argv[1:])
assert dp == want and params // dp - 64 <= kept <= params // dp
PY
    case_ "$1 $2: allocated weights, gradients, moments and buffers = the estimate (within 1%)"
    local ratio
    ratio=$(sed -n 's/.*allocated weights, gradients and AdamW .* (\([0-9.]*\) of the estimate); allocated activations.*/\1/p' "$err")
    if [ -n "$ratio" ] && "$PY" -c "import sys; sys.exit(not 0.99 <= float('$ratio') <= 1.01)"; then
        ok
    else
        fail "allocated / estimated weights, gradients and AdamW: '$ratio'"
    fi
}

# baseline MODEL NAME NP MICRO KEY=VALUE...: the same layout under ZeRO-1, for against (its
# agreement with one rank is t_train_zero.sh's)
baseline() {
    local model=$1 name=$2 np=$3 micro=$4
    shift 4
    run "${MPIRUN[@]}" -np "$np" "$SLUICE" train "$ROOT/configs/models/tiny-$model.yaml" \
        "${PCOMMON[@]}" train.micro_batch_size="$micro" optim.zero=1 "$@" \
        train.dump_grads="$T/$model-$name" log.file="$T/$model-$name.jsonl" \
        checkpoint.dir="$T/$model-$name-ck"
    case_ "$model $name (ZeRO-1): trains on $np ranks"
    expect_rc 0
}

# against MODEL A B RTOL: run A's first gradient, loss and step-5 weights and moments against
# run B's (the same layout under ZeRO-1)
against() {
    local m=$1 a=$2 b=$3 tol=$4 ck=step-00000005
    case_ "$m $a: gradient, weights and moments = $b's (rtol $tol)"
    run "${CMP[@]}" --rtol "$tol" "$T/$m-$a/grads-step-000001.safetensors" \
        "$T/$m-$b/grads-step-000001.safetensors"
    expect_rc 0
    run "${CMP[@]}" --rtol "$tol" "$T/$m-$a-ck/$ck/model.safetensors" "$T/$m-$b-ck/$ck/model.safetensors"
    expect_rc 0
    run "${CMP[@]}" --rtol "$tol" "$T/$m-$a-ck/$ck/optimizer.safetensors" \
        "$T/$m-$b-ck/$ck/optimizer.safetensors"
    expect_rc 0
    case_ "$m $a: the loss of every step = $b's (rtol $tol)"
    RTOL=$tol run same_losses "$T/$m-$a.jsonl" "$T/$m-$b.jsonl"
    expect_rc 0
}

# DP=2, one micro-batch a step: ZeRO-2 and -3 are ZeRO-1 bit for bit (the validation loss at
# step 5 too: ZeRO-3 gathers every layer for it); checkpoints at 2 and 4
reference llama
CK=(checkpoint.interval=2 eval.interval=5 eval.iters=1)
baseline llama dp2z1 2 4 "${CK[@]}"
layout llama dp2z2 2 4 optim.zero=2 "${CK[@]}"
memory llama dp2z2 2 2
layout llama dp2z3 2 4 optim.zero=3 "${CK[@]}"
memory llama dp2z3 3 2
against llama dp2z2 dp2z1 0
against llama dp2z3 dp2z1 0
case_ "llama dp2z2, dp2z3: the validation loss = ZeRO-1's, bit for bit"
v1=$(grep '"valid"' "$T/llama-dp2z1.jsonl")
[ -n "$v1" ] && [ "$v1" = "$(grep '"valid"' "$T/llama-dp2z2.jsonl")" ] &&
    [ "$v1" = "$(grep '"valid"' "$T/llama-dp2z3.jsonl")" ] && ok || fail "validation: '$v1'"
# DP=4, two micro-batches a step: summed in another order than ZeRO-1's
baseline llama dp4z1 4 1
layout llama dp4z2 4 1 optim.zero=2
memory llama dp4z2 2 4
layout llama dp4z3 4 1 optim.zero=3
memory llama dp4z3 3 4
against llama dp4z2 dp4z1 "$RTOL_ACC"
against llama dp4z3 dp4z1 "$RTOL_ACC"

# tiny-gpt: DP x TP = 2 x 2 with SP under ZeRO-3 (one micro-batch: ZeRO-1 bit for bit), and
# DP x PP = 2 x 2 under ZeRO-2 (two micro-batches)
reference gpt
TP=(parallel.tensor=2 parallel.sequence=true)
baseline gpt dp2tp2z1 4 4 "${TP[@]}"
layout gpt dp2tp2z3 4 4 "${TP[@]}" optim.zero=3
memory gpt dp2tp2z3 3 2
against gpt dp2tp2z3 dp2tp2z1 0
layout gpt dp2pp2z2 4 2 parallel.pipeline=2 optim.zero=2
memory gpt dp2pp2z2 2 2

# checkpoints across stages: the ZeRO-1 run's step 2 resumed under ZeRO-3 is the ZeRO-1
# run (bit for bit); the ZeRO-3 run's step 2 resumed under ZeRO-1 at DP=4 and on one rank
# goes on as the ZeRO-3 run within the tolerance of another layout
resume_from() { # resume_from SRC DST NP MICRO KEY=VALUE...: DST starts from SRC's step 2
    local src=$1 dst=$2 np=$3 micro=$4
    shift 4
    mkdir -p "$T/$dst"
    cp -r "$T/$src/step-00000002" "$T/$dst/"
    run "${MPIRUN[@]}" -np "$np" "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" \
        train.micro_batch_size="$micro" "$@" checkpoint.dir="$T/$dst"
    expect_rc 0
    expect_err "resumed from '$T/$dst/step-00000002'"
}
case_ "a ZeRO-1 checkpoint resumed under ZeRO-3 (DP=2) = the uninterrupted ZeRO-1 run"
resume_from llama-dp2z1-ck z1to3 2 4 optim.zero=3
for f in model optimizer; do
    run "${CMP[@]}" --rtol 0 "$T/z1to3/step-00000005/$f.safetensors" \
        "$T/llama-dp2z1-ck/step-00000005/$f.safetensors"
    expect_rc 0
done
for to in "z3to1dp4 4 2 optim.zero=1" "z3to1rank 1 4"; do
    set -- $to
    case_ "the ZeRO-3 checkpoint resumed as $1 goes on as the ZeRO-3 run (rtol $RTOL)"
    resume_from llama-dp2z3-ck "$@"
    for f in model optimizer; do
        run "${CMP[@]}" --rtol "$RTOL" "$T/$1/step-00000005/$f.safetensors" \
            "$T/llama-dp2z3-ck/step-00000005/$f.safetensors"
        expect_rc 0
    done
done
finish
