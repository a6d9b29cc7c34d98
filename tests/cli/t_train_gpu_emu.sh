#!/usr/bin/env bash
# The CUDA trainer (train/gpu_*.c) on emulated GPUs: build/emu/libsluice-gpu-emu.so, the
# kernels and library stand-ins of kernels/emu/ on the CPU, loaded through SLUICE_GPU_LIB.
# tiny-gpt and tiny-llama at seq 32 and micro-batch 2, against the CPU path:
#  - the first step's loss and gradient norm, and every tensor's gradient
#    (tests/oracle/grad_compare.py), on tinyshakespeare;
#  - a 50-step loss curve on tinyshakespeare (CURVE_STEPS);
#  - train.recompute=none|selective|full: the same losses;
#  - checkpoints emulated GPU -> CPU -> emulated GPU, and emulated GPU -> itself bit-identical;
#  - mpirun -np 2 (ZeRO-1 over NCCL over MPI, one emulated GPU per rank) against one rank
#    with two micro-batches.
# SKIP where the plugin is not built (make builds it where the CUDA headers are).
#
# Tolerances are those of tests/gpu/t_train_gpu.sh, argued there: the GPU path stores
# activations, weights and gradients in bf16, the CPU path is fp32. First step: loss 0.5%
# (LOSS_RTOL), gradient norm 5% (NORM_RTOL), every part of every tensor's gradient 5e-2
# relative L2 (GRAD_RTOL). The curve: 50 steps from 10.8 to about 6.8 nats with the rate
# warmed up in 2 steps; the mean |difference| of the per-step losses within CURVE_TOL = 0.02
# nats (rounding alone drifts by 0.0007 on average, 0.002 at most, over those 50 steps; a
# wrong AdamW moment, clip or schedule moves the loss by more). Recomputation changes which
# kernels rebuild activations, never their inputs or order: the losses must be bit-identical
# here (the real GPU test allows 0.2% for cuDNN's nondeterministic variants), with every GEMM
# epilogue but the forward GELU's, which selective recomputation turns off (it rebuilds the
# activation with the separate kernel; t_train_gpu_fuse.sh compares the two). Two ranks
# reduce in rank order as one rank accumulates micro-batches, but through bf16 gradient
# buffers per rank: the first-step tolerances.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu
LOSS_RTOL=0.005
NORM_RTOL=0.05
GRAD_RTOL=0.05
CURVE_TOL=0.02
CURVE_STEPS=${CURVE_STEPS:-50}
GPT="$ROOT/configs/models/tiny-gpt.yaml"
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
PREFIX="$FIX/tinyshakespeare/tinyshakespeare_text_document"
SMALL=(train.seq_len=32 train.micro_batch_size=2 eval.interval=0)
TEXT=(data.prefix="$PREFIX" data.cache_dir="$T/cache")
# a vocabulary of 512 where the data does not matter: the output layer is most of the cost
SYN=(data=synthetic model.vocab_size=512)

# compare A.jsonl B.jsonl FIRST_STEP [LOSS_RTOL NORM_RTOL [LAST_STEP]]: the train lines from
# FIRST_STEP on (to LAST_STEP), within the relative tolerances (exactly when they are 0)
compare() {
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$1" "$2" "$3" \
        "${4:-$LOSS_RTOL}" "${5:-$NORM_RTOL}" "${6:-0}"
}

# --- 1. the first step: loss, gradient norm, every tensor's gradient -----------------------
for model in gpt llama; do
    cfg=$GPT; [ $model = llama ] && cfg=$LLAMA
    for dev in cpu cuda; do
        run "$SLUICE" train "$cfg" "${TEXT[@]}" "${SMALL[@]}" train.global_batch_size=4 \
            train.steps=1 train.device=$dev log.file="$T/$model-$dev.jsonl" \
            train.dump_grads="$T/grads-$model-$dev"
        case_ "$model: one step with train.dump_grads on $dev"
        expect_rc 0
    done
    case_ "$model: the plugin is the emulation"
    expect_err "training on the GPU: CUDA emulation on the CPU"
    case_ "$model: first step (loss, grad norm) emulated GPU = CPU to bf16 tolerance"
    compare "$T/$model-cuda.jsonl" "$T/$model-cpu.jsonl" 1 && ok || fail "see above"
    case_ "$model: every tensor's gradient after step 1, emulated GPU = CPU (relative L2 <= $GRAD_RTOL)"
    "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol "$GRAD_RTOL" \
        "$T/grads-$model-cuda/grads-step-000001.safetensors" \
        "$T/grads-$model-cpu/grads-step-000001.safetensors" && ok || fail "see above"
done

# --- 2. a short loss curve on tinyshakespeare ----------------------------------------------
for model in gpt llama; do
    cfg=$GPT; [ $model = llama ] && cfg=$LLAMA
    for dev in cpu cuda; do
        run "$SLUICE" train "$cfg" "${TEXT[@]}" "${SMALL[@]}" train.global_batch_size=2 \
            train.steps=$CURVE_STEPS optim.warmup_steps=2 train.device=$dev log.file="$T/curve-$model-$dev.jsonl"
        case_ "$model: $CURVE_STEPS steps on $dev"
        expect_rc 0
    done
    case_ "$model: $CURVE_STEPS steps: emulated GPU loss curve = CPU loss curve within $CURVE_TOL nats"
    python3 - "$T/curve-$model-cuda.jsonl" "$T/curve-$model-cpu.jsonl" "$CURVE_TOL" "$CURVE_STEPS" <<'PY' && ok || fail "see above"
import json, sys
def load(p):
    return {m["step"]: m["loss"] for m in map(json.loads, open(p)) if m["type"] == "train"}
g, c, tol, n = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
if sorted(g) != sorted(c) or len(c) != n:
    sys.exit(f"steps differ: {sorted(g)} vs {sorted(c)}")
diffs = [abs(g[s] - c[s]) for s in sorted(c)]
mean = sum(diffs) / len(diffs)
print(f"  mean |loss difference| {mean:.4f}, largest {max(diffs):.4f}; loss {c[1]:.4f} -> "
      f"{g[n]:.4f} (emulated GPU) / {c[n]:.4f} (CPU)")
if c[1] - c[n] < 10 * tol:
    sys.exit("the CPU run did not learn: the curve shows nothing")
sys.exit(0 if mean <= tol else "loss curves differ")
PY
done

# --- 3. recomputation: none, selective, full ------------------------------------------------
for model in gpt llama; do
    cfg=$GPT; [ $model = llama ] && cfg=$LLAMA
    for mode in none selective full; do
        run env SLUICE_GPU_FUSE=dgelu,bgrad "$SLUICE" train "$cfg" "${SYN[@]}" "${SMALL[@]}" \
            train.global_batch_size=2 train.steps=2 train.device=cuda train.recompute=$mode \
            log.file="$T/rc-$model-$mode.jsonl"
        case_ "$model: train.recompute=$mode runs"
        expect_rc 0
        expect_err "recompute: $mode"
    done
    for mode in selective full; do
        case_ "$model: recompute $mode = none (bit-identical)"
        compare "$T/rc-$model-$mode.jsonl" "$T/rc-$model-none.jsonl" 1 0 0 && ok || fail "see above"
    done
done

# --- 4. checkpoints: emulated GPU -> CPU -> emulated GPU --------------------------------------
# the schedule of 6 steps throughout, so that a run stopped at step 4 follows it
CK=(train.global_batch_size=2 optim.decay_steps=6 checkpoint.interval=2 checkpoint.keep_last=0)
run "$SLUICE" train "$LLAMA" "${SYN[@]}" "${SMALL[@]}" "${CK[@]}" train.steps=6 train.device=cuda \
    checkpoint.dir="$T/g" log.file="$T/g.jsonl"
case_ "emulated GPU run with checkpoints"
expect_rc 0
expect_file "$T/g/step-00000002/optimizer-00000-of-00001.safetensors"
mkdir -p "$T/gg" && cp -r "$T/g/step-00000004" "$T/gg/"
run "$SLUICE" train "$LLAMA" "${SYN[@]}" "${SMALL[@]}" "${CK[@]}" train.steps=6 train.device=cuda \
    checkpoint.dir="$T/gg" log.file="$T/gg.jsonl"
case_ "emulated GPU -> emulated GPU resume is bit-identical"
expect_rc 0
expect_err "resumed from"
compare "$T/gg.jsonl" "$T/g.jsonl" 5 0 0 && ok || fail "see above"
mkdir -p "$T/gc" && cp -r "$T/g/step-00000002" "$T/gc/"
run "$SLUICE" train "$LLAMA" "${SYN[@]}" "${SMALL[@]}" "${CK[@]}" train.steps=4 train.device=cpu \
    checkpoint.dir="$T/gc" log.file="$T/gc.jsonl"
case_ "an emulated GPU checkpoint resumes on the CPU"
expect_rc 0
expect_err "resumed from"
expect_file "$T/gc/step-00000004/model.safetensors"
compare "$T/gc.jsonl" "$T/g.jsonl" 3 "$LOSS_RTOL" "$NORM_RTOL" 4 && ok || fail "see above"
run "$SLUICE" train "$LLAMA" "${SYN[@]}" "${SMALL[@]}" "${CK[@]}" train.steps=6 train.device=cuda \
    checkpoint.dir="$T/gc" log.file="$T/gcg.jsonl"
case_ "that CPU checkpoint resumes on the emulated GPU"
expect_rc 0
expect_err "resumed from"
compare "$T/gcg.jsonl" "$T/g.jsonl" 5 && ok || fail "see above"

# --- 5. two ranks: ZeRO-1 over NCCL over MPI ----------------------------------------------
if ! have_mpi; then
    echo "  skip: mpirun not found"
elif grep -q "this build has no NCCL" "$T/err"; then
    echo "  skip: mpirun -np 2: the emulated plugin was built without NCCL (no MPI or nccl.h)"
else
    run "$SLUICE" train "$LLAMA" "${SYN[@]}" "${SMALL[@]}" train.global_batch_size=4 train.steps=2 \
        train.device=cuda log.file="$T/np1.jsonl"
    case_ "one rank, two micro-batches"
    expect_rc 0
    run "${MPIRUN[@]}" -x SLUICE_GPU_LIB -np 2 "$SLUICE" train "$LLAMA" "${SYN[@]}" "${SMALL[@]}" \
        train.global_batch_size=4 train.steps=2 train.device=cuda checkpoint.dir="$T/ck2" \
        checkpoint.interval=2 log.file="$T/np2.jsonl"
    case_ "mpirun -np 2: ZeRO-1 over 2 emulated GPUs"
    expect_rc 0
    expect_err "ZeRO-1 over 2 ranks"
    expect_file "$T/ck2/step-00000002/optimizer-00001-of-00002.safetensors"
    case_ "2 ranks x micro 2 = 1 rank x micro 2 x 2 accumulation steps (bf16 tolerance)"
    compare "$T/np2.jsonl" "$T/np1.jsonl" 1 && ok || fail "see above"
fi

finish
