#!/usr/bin/env bash
# ZeRO-1 on the CPU path (optim.zero=1): every data-parallel rank keeps the AdamW moments of
# 1/DP of each tensor of its model-parallel shard, gradients are reduce-scattered and the
# parameters all-gathered over the data-parallel group only. DP=2 (tiny-llama) and
# DP x TP x PP = 2 x 2 x 2 with sequence parallel on 8 oversubscribed ranks (tiny-gpt: tied
# embeddings, biases) agree with one rank in loss, every gradient and the parameters and
# moments after 5 steps (tolerance: tests/cli/parallel_lib.sh), and are bit-identical to the
# same layout without ZeRO (each element's sums are the same: the reduce-scatter adds the
# same two ranks' values). Rank 0's moments are 1/DP of its parameters (logged count and the
# allocated memory against the estimate). Checkpoints hold full tensors: a ZeRO checkpoint
# resumes without ZeRO and the reverse, bit-identically to the uninterrupted run, and a
# 2 x 2 x 2 ZeRO checkpoint resumes on one rank.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"

LLAMA="$ROOT/configs/models/tiny-llama.yaml"
case_ "optim.zero is a ZeRO stage, 0 to 3 (2 and 3: t_train_zero23.sh)"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" optim.zero=-1 --print-config
expect_rc 2
expect_err "optim.zero: must be 0, 1, 2 or 3 (the ZeRO stage), got -1"
case_ "--print-config: the CPU memory per rank with ZeRO-1 is 8 + 8 / DP bytes a parameter"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" train.micro_batch_size=2 parallel.data=2 --print-config
expect_rc 0
full=$(sed -n 's/.*CPU fp32: \([0-9.]*\) MB weights + gradients + AdamW,.*/\1/p' "$T/out")
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" train.micro_batch_size=2 parallel.data=2 optim.zero=1 \
    --print-config
expect_rc 0
expect_out "  zero: 1"
zero=$(sed -n 's/.*CPU fp32: \([0-9.]*\) MB weights + gradients + AdamW (ZeRO-1),.*/\1/p' "$T/out")
"$PY" -c "import sys; a, b = float('$full'), float('$zero'); sys.exit(not abs(b / a - 12 / 16) < 0.01)" \
    && ok || fail "estimate without ZeRO '$full' MB, with ZeRO-1 '$zero' MB: not 12/16"

if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi

# zero_count MODEL NAME DP: rank 0 keeps the moments of 1/DP of its parameters (each tensor
# cut in DP pieces, the first the shortest), and allocated what the estimate says
zero_count() {
    local err="$T/$1-$2.err" dp=$3
    case_ "$1 $2: rank 0 keeps the AdamW moments of 1/$dp of its parameters"
    local line
    line=$(sed -n 's/.*ZeRO-1 over \([0-9]*\) data-parallel ranks: rank 0 keeps the AdamW moments of \([0-9]*\) of its \([0-9]*\) parameters.*/\1 \2 \3/p' "$err")
    if [ -n "$line" ] && "$PY" - "$dp" $line <<'PY'; then ok; else fail "ZeRO line: '$line'"; fi
import sys
want, dp, kept, params = map(int, sys.argv[1:])
print(f"  {kept} of {params} parameters' moments on rank 0 (1/{dp}: {params / dp:.0f})")
assert dp == want and params // dp - 64 <= kept <= params // dp
PY
    case_ "$1 $2: allocated weights, gradients and moments = the ZeRO-1 estimate (within 1%)"
    local ratio
    ratio=$(sed -n 's/.*allocated weights, gradients and AdamW .* (\([0-9.]*\) of the estimate); allocated activations.*/\1/p' "$err")
    if [ -n "$ratio" ] && "$PY" -c "import sys; sys.exit(not 0.99 <= float('$ratio') <= 1.01)"; then
        ok
    else
        fail "allocated / estimated weights, gradients and AdamW: '$ratio'"
    fi
}

# same_bits A B: the checkpoints' weights and moments are equal bit for bit
same_bits() {
    run "${CMP[@]}" --rtol 0 "$1/model.safetensors" "$2/model.safetensors"
    expect_rc 0
    run "${CMP[@]}" --rtol 0 "$1/optimizer.safetensors" "$2/optimizer.safetensors"
    expect_rc 0
}

# baseline MODEL NAME NP MICRO KEY=VALUE...: the same layout without ZeRO, for the bitwise checks
baseline() {
    local model=$1 name=$2 np=$3 micro=$4
    shift 4
    run "${MPIRUN[@]}" -np "$np" "$SLUICE" train "$ROOT/configs/models/tiny-$model.yaml" \
        "${PCOMMON[@]}" train.micro_batch_size="$micro" "$@" train.dump_grads="$T/$model-$name" \
        checkpoint.dir="$T/$model-$name-ck"
    case_ "$model $name (without ZeRO): trains on $np ranks"
    expect_rc 0
}

reference llama
layout llama dp2z 2 2 optim.zero=1
zero_count llama dp2z 2
baseline llama dp2 2 2
case_ "llama dp2z: bit-identical to DP=2 without ZeRO (gradients, parameters, moments)"
run "${CMP[@]}" --rtol 0 "$T/llama-dp2z/grads-step-000001.safetensors" \
    "$T/llama-dp2/grads-step-000001.safetensors"
expect_rc 0
same_bits "$T/llama-dp2z-ck/step-00000005" "$T/llama-dp2-ck/step-00000005"

reference gpt
L3=(parallel.tensor=2 parallel.pipeline=2 parallel.sequence=true)
layout gpt dp2tp2pp2z 8 1 "${L3[@]}" optim.zero=1
zero_count gpt dp2tp2pp2z 2
baseline gpt dp2tp2pp2 8 1 "${L3[@]}"
case_ "gpt dp2tp2pp2z: bit-identical to the same layout without ZeRO"
run "${CMP[@]}" --rtol 0 "$T/gpt-dp2tp2pp2z/grads-step-000001.safetensors" \
    "$T/gpt-dp2tp2pp2/grads-step-000001.safetensors"
expect_rc 0
same_bits "$T/gpt-dp2tp2pp2z-ck/step-00000005" "$T/gpt-dp2tp2pp2-ck/step-00000005"

# checkpoints: 4 steps, saved at 2 and 4, resumed from step 2 with and without ZeRO
R=(train.micro_batch_size=2 train.steps=4 checkpoint.interval=2)
resume_from() { # resume_from SRC DST NP KEY=VALUE...: DST starts from SRC's step 2
    local src=$1 dst=$2 np=$3
    shift 3
    mkdir -p "$T/$dst"
    cp -r "$T/$src/step-00000002" "$T/$dst/"
    run "${MPIRUN[@]}" -np "$np" "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" "$@" \
        checkpoint.dir="$T/$dst"
    expect_rc 0
    expect_err "resumed from '$T/$dst/step-00000002'"
}
run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" optim.zero=1 \
    checkpoint.dir="$T/ckz"
case_ "DP=2 with ZeRO-1: 4 steps, checkpoints at 2 and 4"
expect_rc 0
run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" checkpoint.dir="$T/ckn"
case_ "DP=2 without ZeRO: the same checkpoints, bit for bit"
expect_rc 0
same_bits "$T/ckz/step-00000004" "$T/ckn/step-00000004"
case_ "the ZeRO-1 checkpoint of step 2 resumed without ZeRO = the uninterrupted ZeRO run"
resume_from ckz z2n 2
same_bits "$T/z2n/step-00000004" "$T/ckz/step-00000004"
case_ "a checkpoint without ZeRO resumed with ZeRO-1 = the uninterrupted run"
resume_from ckn n2z 2 optim.zero=1
same_bits "$T/n2z/step-00000004" "$T/ckn/step-00000004"

run "${MPIRUN[@]}" -np 8 "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" "${L3[@]}" \
    train.micro_batch_size=1 optim.zero=1 checkpoint.dir="$T/ck3"
case_ "llama DP x TP x PP = 2 x 2 x 2 with ZeRO-1: 4 steps, checkpoints at 2 and 4"
expect_rc 0
case_ "its ZeRO-1 checkpoint of step 2 resumed on one rank goes on as the split run (rtol $RTOL)"
resume_from ck3 ck3one 1
run "${CMP[@]}" --rtol "$RTOL" "$T/ck3one/step-00000004/model.safetensors" \
    "$T/ck3/step-00000004/model.safetensors"
expect_rc 0
run "${CMP[@]}" --rtol "$RTOL" "$T/ck3one/step-00000004/optimizer.safetensors" \
    "$T/ck3/step-00000004/optimizer.safetensors"
expect_rc 0
finish
