#!/usr/bin/env bash
# The CUDA trainer's fused GEMM epilogues (train/gpu_fuse.c) on emulated GPUs: tiny-gpt (GELU
# tanh, biases) with every fusion (the default) against SLUICE_GPU_FUSE=none (the separate
# gelu_fwd / gelu_bwd / bias_bwd kernels), one step of two micro-batches (so that bias
# gradients written by an epilogue still add up over micro-batches):
#  - the log says which path ran;
#  - loss and gradient norm, and every tensor's gradient, fused = separate within tolerance;
#  - recomputation on the fused path: full re-runs the fused GEMM (bit-identical to none),
#    selective makes the forward GELU separate (it rebuilds the activation with gelu_fwd);
#  - an unknown fusion name is refused.
# Tolerances: the two paths round differently, not more or less often in a chain: the fused
# GELU rounds gelu(fp32 accumulator) where the separate kernel rounds gelu(bf16 fc), the fused
# dGELU skips the bf16 dact between the GEMM and gelu', and the bias sums run in another
# order. Measured: loss equal to 4 decimals, gradient norm 4e-4 apart, every tensor's
# gradient within 8.2e-3 relative L2 (the deepest, layer 0's q/k parts). Allowed: loss 1e-3,
# norm 1e-2, gradients 2e-2 (about one bf16 rounding chain, tests/oracle/grad_compare.py).
# A wrong fusion fails: the dGELU epilogue given the activation instead of fc moves every
# tensor's gradient by 4% to 18% (the gradient norm by 6e-4 only).
# The selective run: the first-step tolerances of t_train_gpu_emu.sh against none.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu
GPT="$ROOT/configs/models/tiny-gpt.yaml"
ONE=(data=synthetic model.vocab_size=512 train.seq_len=32 train.micro_batch_size=2
     train.global_batch_size=4 train.steps=1 eval.interval=0 train.device=cuda)

compare() { # A.jsonl B.jsonl LOSS_RTOL NORM_RTOL: step 1 (exactly where a tolerance is 0)
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$1" "$2" 1 "$3" "$4"
}

run "$SLUICE" train "$GPT" "${ONE[@]}" log.file="$T/fused.jsonl" train.dump_grads="$T/g-fused"
case_ "fused: runs, every epilogue in use"
expect_rc 0
expect_err "GEMM epilogues (SLUICE_GPU_FUSE=all): GELU forward fused, dGELU with bias gradient fused, bias gradients fused"
run env SLUICE_GPU_FUSE=none "$SLUICE" train "$GPT" "${ONE[@]}" log.file="$T/sep.jsonl" \
    train.dump_grads="$T/g-sep"
case_ "SLUICE_GPU_FUSE=none: runs the separate kernels"
expect_rc 0
expect_err "GELU forward separate, dGELU with bias gradient separate, bias gradients separate"
case_ "fused = separate: loss and gradient norm"
compare "$T/fused.jsonl" "$T/sep.jsonl" 0.001 0.01 && ok || fail "see above"
case_ "fused = separate: every tensor's gradient (relative L2 <= 0.02)"
"$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol 0.02 \
    "$T/g-fused/grads-step-000001.safetensors" "$T/g-sep/grads-step-000001.safetensors" &&
    ok || fail "see above"

run "$SLUICE" train "$GPT" "${ONE[@]}" train.recompute=full log.file="$T/full.jsonl"
case_ "fused, recompute full: the same GEMMs again (bit-identical to none)"
expect_rc 0
compare "$T/full.jsonl" "$T/fused.jsonl" 0 0 && ok || fail "see above"
run "$SLUICE" train "$GPT" "${ONE[@]}" train.recompute=selective log.file="$T/sel.jsonl"
case_ "fused, recompute selective: the forward GELU separate, the rest fused"
expect_rc 0
expect_err "GELU forward separate, dGELU with bias gradient fused, bias gradients fused"
compare "$T/sel.jsonl" "$T/fused.jsonl" 0.005 0.05 && ok || fail "see above"

run env SLUICE_GPU_FUSE=gelu,bgrd "$SLUICE" train "$GPT" "${ONE[@]}"
case_ "an unknown fusion is refused"
expect_rc 1
expect_err "SLUICE_GPU_FUSE='gelu,bgrd': unknown fusion 'bgrd'"

case_ "train.fp8 on the GPU path is refused before any step"
run "$SLUICE" train "$GPT" "${ONE[@]}" train.fp8=current
expect_rc 1
expect_err "train.fp8 runs on the CPU path only"
finish
