#!/usr/bin/env bash
# Tensor parallel (parallel.tensor=2) and tensor + sequence parallel (parallel.sequence=true)
# on the CPU path under mpirun: tiny-gpt (tied embeddings, biases, GELU, learned positions)
# and tiny-llama (GQA, SwiGLU, RoPE, untied head) agree with one rank in loss, every
# gradient and the parameters after 5 steps (tolerance: tests/cli/parallel_lib.sh). Layouts
# that cannot work are refused with the key and a hint: KV heads are split, never
# replicated, so parallel.tensor may not exceed (and must divide) model.num_query_groups.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"

LLAMA="$ROOT/configs/models/tiny-llama.yaml"
case_ "more tensor-parallel ranks than KV heads: refused (no replication), with the key"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.tensor=4 --print-config
expect_rc 2
expect_err "parallel.tensor: 2 key/value heads (model.num_query_groups) do not split over 4 ranks"
expect_err "does not replicate them"
case_ "heads that do not split"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" model.num_query_groups=4 parallel.tensor=3 --print-config
expect_rc 2
expect_err "do not split over 3 ranks"
case_ "a world that does not divide into tensor x pipeline"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.tensor=2 parallel.data=1 \
    train.global_batch_size=8 train.steps=1
expect_rc 2
expect_err "1 ranks do not divide into tensor x pipeline = 2 ranks per replica"
case_ "sequence parallel without tensor parallel"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.sequence=true --print-config
expect_rc 2
expect_err "parallel.sequence: sequence parallel needs tensor parallel"
case_ "--print-config shows the layout and the memory per rank without a world"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" train.micro_batch_size=1 parallel.tensor=2 parallel.data=4 --print-config
expect_rc 0
expect_out "  tensor: 2"
expect_out "# data parallel: 4 (8 ranks"
expect_out "# per rank:"

for f in llama3-70b-tp8-pp8 llama3.1-405b-tp8-pp16; do
    case_ "configs/parallel/$f.yaml: the layout and its memory per rank, dry (no allocation)"
    run "$SLUICE" train "$ROOT/configs/parallel/$f.yaml" data=synthetic --print-config
    expect_rc 0
    expect_out "  tensor: 8"
    expect_out "# per rank:"
done
expect_out "# data parallel: 8 (1024 ranks"
expect_out "# per rank: 3450601472 parameters"

if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi
for model in gpt llama; do
    reference "$model"
    layout "$model" tp2 2 2 parallel.tensor=2
    layout "$model" tp2sp 2 2 parallel.tensor=2 parallel.sequence=true
done

case_ "a 0.1% error in one gathered tensor fails at this tolerance"
run "${CMP[@]}" --perturb scale "$T/llama-tp2/grads-step-000001.safetensors" "$T/llama-bad.safetensors"
run "${CMP[@]}" --rtol "$RTOL" "$T/llama-bad.safetensors" "$T/llama-ref/grads-step-000001.safetensors"
expect_rc 1
expect_out "FAIL layers.0.mlp.proj.weight"

case_ "sequence parallel: a micro-batch whose tokens do not split"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" train.seq_len=33 train.micro_batch_size=1 \
    parallel.tensor=2 parallel.sequence=true --print-config
expect_rc 2
expect_err "do not split into 2 equal parts"
finish
