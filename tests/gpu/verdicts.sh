# What a GPU run's output means, for tests/gpu/t_train_gpu.sh: each function reads a file of
# the trainer's stderr and prints a reason (exit 0) when the case is not what a plain check
# would take it for, nothing (exit 1) otherwise. Kept apart so that tests/cli/t_gpu_verdicts.sh
# checks these decisions without a GPU, on recorded and constructed outputs.
# Sourced; needs ROOT (tests/cli/lib.sh sets it).

# no_nccl ERR: the memory line says this build has no NCCL, so nothing was reduced
# (train/gpu_model.c, memory_report): a bf16 reduction or an "NCCL with one rank" run would
# pass without touching NCCL
no_nccl() {
    grep -m1 'GPU memory per rank: ' "$1" | grep -o 'this build has no NCCL'
}

# cudnn_refusal ERR: the run stopped on attention_prepare's refusal of an unsupported shape
# (train/gpu_model.c), for one of the reasons kernels/attention_cudnn.cu's unsupported_reason
# gives (read from the source, so the list follows the code). A crash, a cuDNN error while
# building a plan or any other failure is not a refusal. A build without cuDNN (the
# attn_cudnn_new of a build without cudnn.h) is said as such.
cudnn_refusal() {
    local line reason
    if grep -q '^sluice train: error: train.attention=cudnn: built without cuDNN' "$1"; then
        echo "this build has no cuDNN"
        return 0
    fi
    line=$(grep -m1 '^sluice train: error: attention cannot run batch .*: cudnn: ' "$1") || return 1
    while IFS= read -r reason; do
        [ -n "$reason" ] || continue
        if [ "${line%"cudnn: $reason"}" != "$line" ]; then
            echo "cuDNN refuses the shape: $reason"
            return 0
        fi
    done < <(sed -n '/^static const char \*unsupported_reason(/,/^}/s/.*return "\(.*\)";/\1/p' \
        "$ROOT/kernels/attention_cudnn.cu")
    return 1
}

# det_unavailable ERR: train.deterministic=true was asked for, but cuDNN had no deterministic
# backward engine and the attention line says the backward is the non-deterministic one
# (train/gpu_train.c): two runs then differ by cuDNN's atomics, not by a bug of the trainer
det_unavailable() {
    grep -m1 -q 'attention: cuDNN.*, non-deterministic backward (train.attention=[a-z]*, train.deterministic=true)' "$1" ||
        return 1
    echo "cuDNN has no deterministic attention backward engine for this shape: the run used its atomic one"
}
