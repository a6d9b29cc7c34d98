#!/usr/bin/env bash
# Tensor and sequence parallel on the CUDA trainer, on emulated GPUs
# (build/emu/libsluice-gpu-emu.so, NCCL over MPI, one emulated GPU per rank), each layout
# against one rank of the same GPU path, 5 steps:
#  - TP=2 (tiny-llama: GQA, RoPE, RMSNorm, SwiGLU, untied output layer), TP=2 + SP with
#    selective recomputation (tiny-gpt: LayerNorm, biases, learned positions, tied
#    embeddings), DP 2 x TP 2 (tiny-llama, mpirun -np 4, over the MPI backend of
#    train/gpu_comm.h: train.comm=mpi; the others over NCCL);
#  - the loss and gradient norm of every step, every tensor's gradient of step 1
#    (train.dump_grads, gathered to full tensors), the weights after step 5 (the step-5
#    checkpoint's model.safetensors, gathered to full tensors);
#  - the memory: --print-config's arena for each layout = what its rank 0 allocates;
#  - the reshard round trip: the TP=2 checkpoint resumes at one rank on the CPU and on the
#    emulated GPU, the DP 2 x TP 2 one at one rank on the CPU, and a one-rank checkpoint
#    resumes at TP=2, each against the one-rank run.
# SKIP where the plugin is not built or mpirun is missing.
#
# Tolerances: the GPU path keeps activations, weights and gradients in bf16, and TP changes
# the order of the sums (partial products summed over ranks in bf16, the bias added before
# the reduction, norms' gradients over each rank's token rows summed); as in
# t_train_gpu_emu.sh, per step loss 0.5% (LOSS_RTOL), gradient norm 5% (NORM_RTOL), every
# part of every tensor's gradient 5e-2 relative L2 (GRAD_RTOL; measured: under 1e-2). The
# weights after 5 steps: 1e-2 relative L2 per part (W_RTOL; measured: under 2e-3; a
# wrong slice or shard moves a part by its own size); the biases, which start at zero, so
# that the comparison is of 5 AdamW updates (normalised: near-zero gradients' updates flip
# with rounding), 0.1 (B_RTOL; measured: 3.6e-2 for tiny-gpt's fc bias), and GPT's k bias
# reported only (its gradient is zero in exact arithmetic: AdamW turns rounding noise into
# full steps, as tests/cli/t_train_tp.sh says).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu mpi
# one thread per rank: the ranks share the machine's cores
export OMP_NUM_THREADS=1
LOSS_RTOL=0.005
NORM_RTOL=0.05
GRAD_RTOL=0.05
W_RTOL=0.01
B_RTOL=0.1
GPT="$ROOT/configs/models/tiny-gpt.yaml"
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
# a vocabulary of 512 (256 rows per rank); the schedule of 7 steps throughout, so that runs
# stopped at step 5 and resumed follow it; a learning rate of 3e-4 (the configs' 3e-3 moves
# every weight by about 15% of its size a step, and AdamW's sign-like update of a near-zero
# gradient by as much: weights that agree to bf16 rounding would differ by 1% after 5 steps)
BASE=(data=synthetic model.vocab_size=512 train.seq_len=32 train.micro_batch_size=2
    eval.interval=0 optim.lr=3e-4 optim.min_lr=3e-5 optim.decay_steps=7 optim.warmup_steps=2
    checkpoint.interval=5 checkpoint.keep_last=0)
GPU=("${MPIRUN[@]}" -x SLUICE_GPU_LIB -x OMP_NUM_THREADS)
CMP=("$PY" "$ROOT/tests/oracle/grad_compare.py")

compare() { # A.jsonl B.jsonl FIRST_STEP [LAST_STEP]: losses and norms within the tolerances
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$1" "$2" "$3" "$LOSS_RTOL" "$NORM_RTOL" \
        "${4:-0}"
}

# train NAME NP CONFIG GLOBAL_BATCH STEPS ARGS...: a run on emulated GPUs into $T/NAME (-v:
# its stderr, kept as $T/NAME.err, gives the arena's bytes)
train() {
    local name=$1 np=$2 cfg=$3 gb=$4 steps=$5
    shift 5
    local cmd=("$SLUICE")
    [ "$np" -gt 1 ] && cmd=("${GPU[@]}" -np "$np" "$SLUICE")
    run "${cmd[@]}" -v train "$cfg" "${BASE[@]}" train.global_batch_size="$gb" \
        train.steps="$steps" train.device=cuda checkpoint.dir="$T/$name" \
        log.file="$T/$name.jsonl" "$@"
    cp "$T/err" "$T/$name.err"
}

# estimate NAME CONFIG GLOBAL_BATCH ARGS...: --print-config's ZeRO-1 arena for the layout of
# run NAME equals the bytes its rank 0 allocated
estimate() {
    local name=$1 cfg=$2 gb=$3
    shift 3
    run "$SLUICE" train "$cfg" "${BASE[@]}" train.global_batch_size="$gb" train.device=cuda "$@" \
        --print-config
    local est got
    est=$(sed -n 's/.*(arena bytes \([0-9]*\) .*/\1/p' "$T/out" "$T/err" | head -1)
    got=$(sed -n 's/.*GPU memory bytes: .*arena \([0-9]*\).*/\1/p' "$T/$name.err" | head -1)
    case_ "$name: --print-config's GPU arena = the allocation ($est bytes)"
    if [ -z "$est" ] || [ -z "$got" ]; then
        fail "no arena bytes: estimate '$est', allocation '$got'"
    else
        expect_eq "$est" "$got"
    fi
}

# check NAME REF: the 5 steps, step 1's gradient and the weights after step 5 of run NAME
# against one-rank run REF
check() {
    local name=$1 ref=$2
    case_ "$name: losses and gradient norms of 5 steps = one rank (bf16 tolerance)"
    compare "$T/$name.jsonl" "$T/$ref.jsonl" 1 5 && ok || fail "see above"
    case_ "$name: every tensor's gradient of step 1 = one rank (relative L2 <= $GRAD_RTOL)"
    "${CMP[@]}" --rtol "$GRAD_RTOL" "$T/$name/g/grads-step-000001.safetensors" \
        "$T/$ref/g/grads-step-000001.safetensors" | tail -3 && ok || fail "see above"
    local meta="$T/$ref/g/grads-step-000001.safetensors"
    local a="$T/$name/step-00000005/model.safetensors" b="$T/$ref/step-00000005/model.safetensors"
    case_ "$name: the weights after step 5 = one rank's (relative L2 <= $W_RTOL; biases $B_RTOL)"
    "${CMP[@]}" --rtol "$W_RTOL" --exclude .bias --meta "$meta" "$a" "$b" | tail -3 && ok ||
        fail "see above"
    "${CMP[@]}" --rtol "$B_RTOL" --exclude "qkv.bias[k]" --meta "$meta" "$a" "$b" | tail -3 && ok ||
        fail "see above"
}

# --- the one-rank references ------------------------------------------------------------
# (and the validation loss after step 5: the vocab-parallel cross-entropy without backward)
VAL=(eval.interval=5 eval.iters=1)
train llama1 1 "$LLAMA" 2 7 "${VAL[@]}" train.dump_grads="$T/llama1/g"
case_ "one rank, tiny-llama: 7 steps"
expect_rc 0
train gpt1 1 "$GPT" 2 5 train.dump_grads="$T/gpt1/g"
case_ "one rank, tiny-gpt: 5 steps"
expect_rc 0
train llama1a 1 "$LLAMA" 4 7 train.dump_grads="$T/llama1a/g"
case_ "one rank, tiny-llama, 2 micro-batches a step: 7 steps"
expect_rc 0

# --- TP=2, TP=2 + SP, DP 2 x TP 2 ---------------------------------------------------------
train tp2 2 "$LLAMA" 2 5 parallel.tensor=2 "${VAL[@]}" train.dump_grads="$T/tp2/g"
case_ "tiny-llama, mpirun -np 2 parallel.tensor=2 on emulated GPUs"
expect_rc 0
expect_err "tensor parallel over 2 ranks: 2 of 4 heads"
expect_file "$T/tp2/step-00000005/optimizer-00001-of-00002.safetensors"
check tp2 llama1
estimate tp2 "$LLAMA" 2 parallel.tensor=2 "${VAL[@]}"
case_ "tp2: the validation loss after step 5 = one rank's (within $LOSS_RTOL)"
python3 - "$T/tp2.jsonl" "$T/llama1.jsonl" "$LOSS_RTOL" <<'PY' && ok || fail "see above"
import json, sys
def val(p):
    lines = map(json.loads, open(p))
    return [m["val_loss"] for m in lines if m["type"] == "valid" and m["step"] == 5]
a, b, tol = val(sys.argv[1]), val(sys.argv[2]), float(sys.argv[3])
print(f"  val_loss {a} vs {b}")
sys.exit(0 if len(a) == len(b) == 1 and abs(a[0] - b[0]) <= tol * abs(b[0]) else "differ")
PY

train tp2sp 2 "$GPT" 2 5 parallel.tensor=2 parallel.sequence=true train.recompute=selective \
    train.dump_grads="$T/tp2sp/g"
case_ "tiny-gpt, mpirun -np 2 parallel.tensor=2 parallel.sequence=true (recompute selective)"
expect_rc 0
expect_err "tensor parallel over 2 ranks with sequence parallel"
check tp2sp gpt1
estimate tp2sp "$GPT" 2 parallel.tensor=2 parallel.sequence=true train.recompute=selective

train dp2tp2 4 "$LLAMA" 4 5 parallel.tensor=2 train.comm=mpi train.dump_grads="$T/dp2tp2/g"
case_ "tiny-llama, mpirun -np 4: data parallel 2 x tensor parallel 2, train.comm=mpi"
expect_rc 0
expect_err "ZeRO-1 over 2 ranks"
check dp2tp2 llama1a
estimate dp2tp2 "$LLAMA" 4 parallel.tensor=2 parallel.data=2

# --- the reshard round trip -----------------------------------------------------------------
# the TP=2 checkpoint of step 5 at one rank: on the CPU, and on the emulated GPU
for dev in cpu cuda; do
    mkdir -p "$T/from-tp2-$dev" && cp -r "$T/tp2/step-00000005" "$T/from-tp2-$dev/"
    run "$SLUICE" train "$LLAMA" "${BASE[@]}" train.global_batch_size=2 train.steps=7 \
        train.device=$dev checkpoint.dir="$T/from-tp2-$dev" log.file="$T/from-tp2-$dev.jsonl"
    case_ "the TP=2 checkpoint resumes at one rank on $dev: steps 6-7 = the one-rank run"
    expect_rc 0
    expect_err "resumed from"
    compare "$T/from-tp2-$dev.jsonl" "$T/llama1.jsonl" 6 7 && ok || fail "see above"
done
# the DP 2 x TP 2 checkpoint (4 optimizer shards: ZeRO-1 slices of each rank's part, as
# ranges of the full layout) at one rank on the CPU
mkdir -p "$T/from-dp2tp2" && cp -r "$T/dp2tp2/step-00000005" "$T/from-dp2tp2/"
run "$SLUICE" train "$LLAMA" "${BASE[@]}" train.global_batch_size=4 train.steps=7 train.device=cpu \
    checkpoint.dir="$T/from-dp2tp2" log.file="$T/from-dp2tp2.jsonl"
case_ "the DP 2 x TP 2 checkpoint resumes at one rank on the CPU: steps 6-7 = the one-rank run"
expect_rc 0
expect_err "resumed from"
compare "$T/from-dp2tp2.jsonl" "$T/llama1a.jsonl" 6 7 && ok || fail "see above"
# and back: the one-rank checkpoint of step 5 at TP=2
mkdir -p "$T/to-tp2" && cp -r "$T/llama1/step-00000005" "$T/to-tp2/"
train to-tp2 2 "$LLAMA" 2 7 parallel.tensor=2
case_ "a one-rank checkpoint resumes at TP=2: steps 6-7 = the one-rank run"
expect_rc 0
expect_err "resumed from"
compare "$T/to-tp2.jsonl" "$T/llama1.jsonl" 6 7 && ok || fail "see above"

finish
