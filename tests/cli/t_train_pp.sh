#!/usr/bin/env bash
# Pipeline parallel on the CPU path under mpirun (1F1B over MPI point to point, micro-batches
# = global_batch / (micro_batch x DP)): PP=2, PP=2 x TP=2, and DP x TP x PP = 2 x 2 x 2 with
# sequence parallel on 8 ranks (oversubscribed), for tiny-gpt (tied embeddings: the two
# pipeline ends' copies) and tiny-llama: loss, every gradient and the parameters after 5
# steps agree with one rank (tolerance: tests/cli/parallel_lib.sh). Pipeline parallel alone
# reorders no sum: for tiny-llama its gradients and parameters are bit-identical.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"

case_ "more pipeline stages than layers"
run "$SLUICE" train "$ROOT/configs/models/tiny-llama.yaml" "${PCOMMON[@]}" parallel.pipeline=3 \
    --print-config
expect_rc 2
expect_err "parallel.pipeline: 3 stages for 2 layers"
if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi
for model in gpt llama; do
    reference "$model"
    layout "$model" pp2 2 2 parallel.pipeline=2
    layout "$model" pp2tp2 4 2 parallel.pipeline=2 parallel.tensor=2
    layout "$model" dp2tp2pp2sp 8 1 parallel.pipeline=2 parallel.tensor=2 parallel.sequence=true
    case_ "$model dp2tp2pp2sp: the layout is logged (Megatron order)"
    if grep -qF "tensor 2 x pipeline 2 x data 2, sequence parallel" "$T/$model-dp2tp2pp2sp.err"; then
        ok
    else
        fail "no layout line"
    fi
done
case_ "llama pp2: bit-identical to one rank (gradients, parameters, moments)"
run "${CMP[@]}" --rtol 0 "$T/llama-pp2/grads-step-000001.safetensors" \
    "$T/llama-ref/grads-step-000001.safetensors"
expect_rc 0
run "${CMP[@]}" --rtol 0 "$T/llama-pp2-ck/step-00000005/model.safetensors" \
    "$T/llama-ref-ck/step-00000005/model.safetensors"
expect_rc 0
run "${CMP[@]}" --rtol 0 "$T/llama-pp2-ck/step-00000005/optimizer.safetensors" \
    "$T/llama-ref-ck/step-00000005/optimizer.safetensors"
expect_rc 0
finish
