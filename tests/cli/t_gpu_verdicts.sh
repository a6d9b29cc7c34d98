#!/usr/bin/env bash
# The decisions of tests/gpu/t_train_gpu.sh that a GPU run's output alone settles
# (tests/gpu/verdicts.sh), checked without a GPU on the lines the first GPU run recorded
# (bench/results/train-gpu.md) and on lines built from the messages in the source:
#  - a build without NCCL (its memory line) skips the bf16 reduction and NCCL checks;
#  - only cuDNN's refusal of an unsupported shape (or a build without cuDNN) skips the
#    train.attention=cudnn comparison: a crash or a cuDNN error is a failure;
#  - train.deterministic=true without a deterministic cuDNN engine is reported as that.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/gpu/verdicts.sh"
REC="$ROOT/bench/results/train-gpu.md"

# verdict FUNCTION TEXT: the function's reason for a stderr holding TEXT, or "-" for none
verdict() {
    printf '%s\n' "$2" >"$T/e"
    "$1" "$T/e" || echo "-"
}

# --- NCCL ------------------------------------------------------------------------------
mem=$(grep -m1 'GPU memory per rank: ' "$REC" | sed 's/^ *//')
case_ "recorded memory line (a build with NCCL): no reason"
expect_eq "$(verdict no_nccl "sluice train: $mem")" "-"
# the trainer's words for a build without NCCL, read from the source
nonccl=$(grep -o '"not reduced[^"]*"' "$ROOT/train/gpu_model.c" | head -1 | tr -d '"')
case_ "the trainer's memory line names a build without NCCL"
expect_eq "${nonccl:+found}" "found" "(no 'not reduced' wording in train/gpu_model.c)"
case_ "memory line of a build without NCCL: skipped with the reason"
expect_eq "$(verdict no_nccl "sluice train: ${mem/reduced in fp32/$nonccl}")" "this build has no NCCL"
case_ "memory line, bf16 reduction: no reason"
expect_eq "$(verdict no_nccl "sluice train: ${mem/reduced in fp32/reduced in bf16}")" "-"

# --- cuDNN attention at an unsupported shape ------------------------------------------
PRE="sluice train: error: attention cannot run batch 4 x 130 tokens, 4/4 heads of 16: cudnn: "
HINT="hint: our kernels take head sizes 16, 32, 64, 128; train.attention=auto uses cuDNN where it can"
n=0
while IFS= read -r reason; do
    n=$((n + 1))
    case_ "refusal '$reason': skipped with the reason"
    expect_eq "$(verdict cudnn_refusal "$PRE$reason"$'\n'"$HINT")" "cuDNN refuses the shape: $reason"
done < <(sed -n '/^static const char \*unsupported_reason(/,/^}/s/.*return "\(.*\)";/\1/p' \
    "$ROOT/kernels/attention_cudnn.cu")
case_ "unsupported_reason's reasons found in the source"
if [ "$n" -ge 3 ]; then ok; else fail "$n reasons"; fi
case_ "a build without cuDNN: skipped with the reason"
expect_eq "$(verdict cudnn_refusal "sluice train: error: train.attention=cudnn: built without cuDNN (no cudnn.h when compiling)")" \
    "this build has no cuDNN"
for bad in "${PRE}CUDNN_STATUS_NOT_SUPPORTED: no engine for the graph" \
    "fatal: cudnn error 'CUDNN_STATUS_EXECUTION_FAILED' in cudnnBackendExecute" \
    "sluice train: error: cannot allocate 70 GiB of GPU memory (3 GiB free)" \
    "${PRE}head dim must be a multiple of 8 and at most 128, or else" \
    ""; do
    case_ "not a refusal: '$bad'"
    expect_eq "$(verdict cudnn_refusal "$bad")" "-"
done

# --- train.deterministic=true ----------------------------------------------------------
att=$(grep -m1 '  attention: cuDNN' "$REC" | sed 's/^ *//')
case_ "recorded attention line (train.deterministic=false): no reason"
expect_eq "$(verdict det_unavailable "sluice train: $att")" "-"
case_ "cuDNN's deterministic engine in use: no reason"
expect_eq "$(verdict det_unavailable "sluice train: ${att/non-deterministic backward/deterministic backward}")" "-"
case_ "train.deterministic=true but the non-deterministic engine: reported as such"
det=${att/deterministic=false/deterministic=true}
expect_eq "$(verdict det_unavailable "sluice train: $det")" \
    "cuDNN has no deterministic attention backward engine for this shape: the run used its atomic one"
case_ "own kernels with train.deterministic=true: no reason"
expect_eq "$(verdict det_unavailable "sluice train: ${det/cuDNN fused flash attention, non-deterministic/own flash-attention kernels, deterministic}")" "-"

finish
