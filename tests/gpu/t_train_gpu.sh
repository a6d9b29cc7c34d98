#!/usr/bin/env bash
# The CUDA trainer against the CPU reference path (make test-gpu; SKIP without a GPU):
#  - one to three steps of tiny-gpt (tanh and erf GELU) and tiny-llama: loss and gradient norm
#    equal the CPU path's to bf16 tolerance;
#  - the first step's gradient of every parameter (train.dump_grads, same init, same batch)
#    equals the CPU path's, tensor by tensor, q/k/v and gate/up apart
#    (tests/oracle/grad_compare.py, whose tolerance GRAD_RTOL is justified there; the same
#    comparison runs CPU against CPU in tests/cli/t_train_grads.sh);
#  - the same per-tensor gradient check on GPT-2 124M (12 layers, seq 1024), one sequence
#    (TRAIN_GPU_ONLY=g124 runs only this, at G124_MICRO_BATCH sequences, default 1);
#  - train.grad_reduce_dtype=bf16 and train.deterministic=true run and agree;
#  - 200 steps of tiny-gpt and of tiny-llama on tinyshakespeare: the same loss curve as the
#    CPU path within noise;
#  - train.recompute=none|selective|full and train.attention=flash|cudnn: the same losses;
#  - NCCL / ZeRO-1 under mpirun -np 1 (and -np 2 against one rank when there are 2 GPUs);
#  - skipped with the reason, never passed: the bf16 reduction and NCCL in a build without
#    NCCL (its memory line says so), cuDNN attention at a shape cuDNN refuses; failed with
#    the reason: train.deterministic=true where cuDNN has no deterministic engine
#    (tests/gpu/verdicts.sh decides, tests/cli/t_gpu_verdicts.sh checks it without a GPU);
#  - checkpoints: GPU -> GPU resume bit-identical, GPU -> CPU and CPU -> GPU resume.
#
# Tolerances. The GPU path keeps activations, weights and gradients in bf16 (8 bits of
# mantissa: a relative rounding error of 2^-9 = 0.2% per stored value) with fp32 sums; the CPU
# path is fp32 throughout. At initialisation the loss is ln(50257) = 10.8 and the stored
# roundings average out over the 64-wide rows, so one step's loss agrees to well under 0.2%:
# we allow 0.5% (LOSS_RTOL). The gradient norm sums squares of gradients computed in bf16 per
# micro-batch (summed over micro-batches in fp32): we allow 5% (NORM_RTOL). Neither can see a
# wrong attention or norm gradient (the loss at init is ~ln V whatever attention does, the
# norm is dominated by the embedding and output layer): the per-tensor comparison can
# (GRAD_RTOL = 5e-2 relative L2 per part; a zeroed dK is an error of 1.0 there, while the
# whole qkv tensor moves by 1.6% and the global norm by 4e-6). Over 200 steps the runs
# drift apart like two seeds of the same run would not (same data, same init), but rounding
# noise accumulates: the mean |difference| of the per-step losses must stay below 0.05 nats
# and the final validation losses within 0.05 nats (the loss falls from 10.8 to about 6).
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/verdicts.sh"
LOSS_RTOL=0.005
NORM_RTOL=0.05
CURVE_TOL=0.05
GRAD_RTOL=0.05
GPT="$ROOT/configs/models/tiny-gpt.yaml"
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
PREFIX="$FIX/tinyshakespeare/tinyshakespeare_text_document"
DATA=(data.prefix="$PREFIX" data.cache_dir="$T/cache")

# The probe. SKIP only on the trainer's one message for a machine without a CUDA device
# (train/gpu_train.h; tested by tests/cli/t_train_gpu_probe.sh); any other failure (the GPU
# library missing, a driver that does not work with a GPU present, NCCL, cuDNN, cuBLASLt,
# out of memory) fails the run.
NO_GPU="sluice train: error: train.device=cuda: no CUDA device ("
run "$SLUICE" train "$GPT" data=synthetic train.steps=0 train.device=cuda
if [ "$rc" != 0 ]; then
    first=$(head -1 "$T/err")
    if [ "$rc" = 1 ] && [ "${first#"$NO_GPU"}" != "$first" ]; then
        echo "SKIP: no CUDA device (${first#"$NO_GPU"}"
        finish
        exit 0
    fi
    case_ "GPU probe: train.device=cuda train.steps=0"
    fail "exit $rc, and not the no-device message"
    finish
    exit 1
fi
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
# a build without NCCL reduces nothing: the checks of NCCL would pass without touching it
NO_NCCL=$(no_nccl "$T/err" || true)

# compare A.jsonl B.jsonl FIRST_STEP: losses and gradient norms of the train lines from
# FIRST_STEP on, within LOSS_RTOL / NORM_RTOL (relative), or exactly when the tolerances are 0
compare() {
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$1" "$2" "$3" \
        "${4:-$LOSS_RTOL}" "${5:-$NORM_RTOL}"
}

# --- 1c. the real scale: GPT-2 124M (12 layers, hidden 768, seq 1024), one step ----------
# The tiny models above have 2 layers; this checks every tensor's gradient through 12 layers
# of bf16 activations at the sequence length cuDNN attention is used at in practice. One
# sequence per step keeps the CPU's share to a few seconds on a many-core machine. (The
# first GPU run measured the gradient norm 5% apart at micro-batch 4, without this check:
# TRAIN_GPU_ONLY=g124 G124_MICRO_BATCH=4 runs this part alone at that batch, as
# scripts/gpu-check.sh's stage grad124m does.)
g124() { # MICRO_BATCH
    local dev mb=$1
    for dev in cpu cuda; do
        run "$SLUICE" train "$ROOT/configs/models/gpt2-124m.yaml" "${DATA[@]}" train.steps=1 \
            eval.interval=0 train.micro_batch_size="$mb" train.global_batch_size="$mb" \
            train.device=$dev train.resume=none log.file="$T/g124-$dev.jsonl" \
            train.dump_grads="$T/grads-g124-$dev"
        case_ "gpt2-124m, micro-batch $mb: one step with train.dump_grads on $dev"
        expect_rc 0
        grep -h '"train"' "$T/g124-$dev.jsonl" 2>/dev/null | sed "s/^/  $dev: /"
    done
    case_ "gpt2-124m, micro-batch $mb: first step (loss, grad norm) GPU = CPU to bf16 tolerance"
    compare "$T/g124-cuda.jsonl" "$T/g124-cpu.jsonl" 1 && ok || fail "see above"
    case_ "gpt2-124m, micro-batch $mb: every tensor's gradient after step 1, GPU = CPU (relative L2 <= $GRAD_RTOL)"
    "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol "$GRAD_RTOL" \
        "$T/grads-g124-cuda/grads-step-000001.safetensors" \
        "$T/grads-g124-cpu/grads-step-000001.safetensors" && ok || fail "see above"
}
if [ "${TRAIN_GPU_ONLY:-}" = g124 ]; then
    g124 "${G124_MICRO_BATCH:-1}"
    finish
    exit
fi

# --- 1. a few steps against the CPU path ---------------------------------------------
for model in gpt gpt-erf llama; do
    case $model in
        gpt) cfg=$GPT; extra=() ;;
        gpt-erf) cfg=$GPT; extra=(model.activation=gelu) ;;
        llama) cfg=$LLAMA; extra=() ;;
    esac
    for dev in cpu cuda; do
        run "$SLUICE" train "$cfg" "${DATA[@]}" "${extra[@]}" train.steps=3 eval.interval=0 \
            train.device=$dev log.file="$T/$model-$dev.jsonl"
        case_ "$model: 3 steps on $dev"
        expect_rc 0
    done
    case_ "$model: GPU start-up lines"
    expect_err "training on the GPU"
    expect_err "GPU memory per rank: parameters"
    expect_err "GPU memory: "
    case_ "$model: first step (loss, grad norm) GPU = CPU to bf16 tolerance"
    compare "$T/$model-cuda.jsonl" "$T/$model-cpu.jsonl" 1 && ok || fail "see above"
    # every parameter's gradient of step 1, with 2 accumulation steps (micro 4, global 8)
    for dev in cpu cuda; do
        run "$SLUICE" train "$cfg" "${DATA[@]}" "${extra[@]}" train.steps=1 eval.interval=0 \
            train.micro_batch_size=4 train.global_batch_size=8 train.device=$dev \
            train.dump_grads="$T/grads-$model-$dev"
        case_ "$model: train.dump_grads on $dev"
        expect_rc 0
    done
    case_ "$model: every tensor's gradient after step 1, GPU = CPU (relative L2 <= $GRAD_RTOL)"
    "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol "$GRAD_RTOL" \
        "$T/grads-$model-cuda/grads-step-000001.safetensors" \
        "$T/grads-$model-cpu/grads-step-000001.safetensors" && ok || fail "see above"
done

# --- 1b. gradient reduction in bf16, deterministic attention ------------------------------
run "$SLUICE" train "$LLAMA" "${DATA[@]}" train.steps=1 eval.interval=0 train.micro_batch_size=4 \
    train.global_batch_size=8 train.device=cuda train.grad_reduce_dtype=bf16 \
    train.dump_grads="$T/grads-bf16"
case_ "train.grad_reduce_dtype=bf16 runs"
expect_rc 0
[ -n "$NO_NCCL" ] || NO_NCCL=$(no_nccl "$T/err" || true)
if [ -n "$NO_NCCL" ]; then
    echo "  skip: train.grad_reduce_dtype=bf16: $NO_NCCL, so no gradient is reduced in bf16"
else
    expect_err "reduced in bf16"
    case_ "train.grad_reduce_dtype=bf16: gradients = CPU's (relative L2 <= $GRAD_RTOL)"
    "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol "$GRAD_RTOL" "$T/grads-bf16/grads-step-000001.safetensors" \
        "$T/grads-llama-cpu/grads-step-000001.safetensors" && ok || fail "see above"
fi
for i in 1 2; do
    run "$SLUICE" train "$LLAMA" "${DATA[@]}" train.steps=3 eval.interval=0 train.device=cuda \
        train.deterministic=true log.file="$T/det$i.jsonl"
    case_ "train.deterministic=true run $i"
    expect_rc 0
    expect_err "train.deterministic=true"
done
case_ "train.deterministic=true: two runs are bit-identical"
if why=$(det_unavailable "$T/err"); then
    fail "$why (not a mismatch of the trainer's own; train.attention=flash is deterministic)"
else
    compare "$T/det1.jsonl" "$T/det2.jsonl" 1 0 0 && ok || fail "see above"
fi

# --- 1c, at one sequence a step (above) ---------------------------------------------------
g124 1

# --- 2. recomputation and attention backends give the same losses ------------------------
for model in gpt llama; do
    cfg=$GPT; [ $model = llama ] && cfg=$LLAMA
    for mode in none selective full; do
        run "$SLUICE" train "$cfg" "${DATA[@]}" train.steps=5 eval.interval=0 train.device=cuda \
            train.recompute=$mode log.file="$T/rc-$model-$mode.jsonl"
        case_ "$model: train.recompute=$mode runs"
        expect_rc 0
        expect_err "recompute: $mode"
    done
    for mode in selective full; do
        case_ "$model: recompute $mode = none"
        compare "$T/rc-$model-$mode.jsonl" "$T/rc-$model-none.jsonl" 1 0.002 0.02 && ok || fail "see above"
    done
    run "$SLUICE" train "$cfg" "${DATA[@]}" train.steps=5 eval.interval=0 train.device=cuda \
        train.attention=flash log.file="$T/at-$model-flash.jsonl"
    case_ "$model: train.attention=flash"
    expect_rc 0
    expect_err "own flash-attention kernels"
    run "$SLUICE" train "$cfg" "${DATA[@]}" train.steps=5 eval.interval=0 train.device=cuda \
        train.attention=cudnn log.file="$T/at-$model-cudnn.jsonl"
    if [ "$rc" = 0 ]; then
        case_ "$model: cuDNN attention = own kernels"
        compare "$T/at-$model-cudnn.jsonl" "$T/at-$model-flash.jsonl" 1 0.002 0.02 && ok || fail "see above"
    elif [ "$rc" = 1 ] && why=$(cudnn_refusal "$T/err"); then
        echo "  skip: $model: train.attention=cudnn: $why"
    else
        # a crash, a cuDNN error at a supported shape: a failure, never a skip
        case_ "$model: train.attention=cudnn runs"
        fail "exit $rc, and not cuDNN's refusal of an unsupported shape"
    fi
done

# --- 3. 200 steps on tinyshakespeare: the CPU path's loss curve, tiny-gpt and tiny-llama ---
for model in gpt llama; do
    cfg=$GPT; [ $model = llama ] && cfg=$LLAMA
    for dev in cpu cuda; do
        run "$SLUICE" train "$cfg" "${DATA[@]}" train.steps=200 eval.interval=200 \
            train.device=$dev log.file="$T/curve-$model-$dev.jsonl"
        case_ "$model: 200 steps on $dev"
        expect_rc 0
    done
    case_ "$model: 200 steps: GPU loss curve = CPU loss curve within $CURVE_TOL nats"
    python3 - "$T/curve-$model-cuda.jsonl" "$T/curve-$model-cpu.jsonl" "$CURVE_TOL" <<'PY' && ok || fail "see above"
import json, sys
def load(p):
    rows = [json.loads(l) for l in open(p)]
    return ({m["step"]: m["loss"] for m in rows if m["type"] == "train"},
            [m["val_loss"] for m in rows if m["type"] == "valid"][-1])
(ga, gv), (ca, cv) = load(sys.argv[1]), load(sys.argv[2])
tol = float(sys.argv[3])
diffs = [abs(ga[s] - ca[s]) for s in sorted(ca)]
mean = sum(diffs) / len(diffs)
last = abs(sum(ga[s] for s in sorted(ga)[-20:]) - sum(ca[s] for s in sorted(ca)[-20:])) / 20
print(f"  mean |loss difference| {mean:.4f}, last 20 steps {last:.4f}, val_loss {gv:.4f} vs {cv:.4f} "
      f"(final train loss {ga[max(ga)]:.4f} vs {ca[max(ca)]:.4f})")
sys.exit(0 if mean <= tol and last <= tol and abs(gv - cv) <= tol else "loss curves differ")
PY
done

# --- 4. NCCL / ZeRO-1 under mpirun -----------------------------------------------------
if [ -n "$NO_NCCL" ]; then
    echo "  skip: NCCL / ZeRO-1 under mpirun: $NO_NCCL"
elif have_mpi; then
    run "${MPIRUN[@]}" -np 1 "$SLUICE" train "$LLAMA" "${DATA[@]}" train.steps=3 eval.interval=0 \
        train.device=cuda train.attention=flash log.file="$T/mpi1.jsonl"
    case_ "mpirun -np 1: NCCL with one rank"
    expect_rc 0
    expect_err "ZeRO-1 over 1 rank"
    run "$SLUICE" train "$LLAMA" "${DATA[@]}" train.steps=3 eval.interval=0 train.device=cuda \
        train.attention=flash log.file="$T/plain1.jsonl"
    case_ "mpirun -np 1 = no launcher (bit-identical)"
    compare "$T/mpi1.jsonl" "$T/plain1.jsonl" 1 0 0 && ok || fail "see above"
    if [ "${NGPU:-0}" -ge 2 ]; then
        run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$LLAMA" "${DATA[@]}" train.steps=3 eval.interval=2 \
            eval.iters=2 train.device=cuda train.micro_batch_size=8 train.global_batch_size=16 \
            checkpoint.dir="$T/ck2" log.file="$T/mpi2.jsonl"
        case_ "mpirun -np 2: ZeRO-1 over 2 GPUs"
        expect_rc 0
        expect_err "ZeRO-1 over 2 ranks"
        expect_file "$T/ck2/step-00000003/optimizer-00001-of-00002.safetensors"
        case_ "2 ranks x micro 8 = 1 rank x micro 8 x 2 accumulation steps (bf16 tolerance)"
        compare "$T/mpi2.jsonl" "$T/llama-cuda.jsonl" 1 && ok || fail "see above"
        run "$SLUICE" train "$LLAMA" "${DATA[@]}" train.steps=4 eval.interval=0 train.device=cuda \
            checkpoint.dir="$T/ck2"
        case_ "a 2-rank checkpoint resumes on 1 rank"
        expect_rc 0
        expect_err "resumed from"
    else
        echo "  skip: mpirun -np 2 needs 2 GPUs (found ${NGPU:-0})"
    fi
else
    echo "  skip: mpirun not found"
fi

# --- 5. checkpoints across devices ---------------------------------------------------
CK=(train.steps=4 eval.interval=0 checkpoint.interval=2 checkpoint.keep_last=0 train.attention=flash)
run "$SLUICE" train "$LLAMA" "${DATA[@]}" "${CK[@]}" train.device=cuda checkpoint.dir="$T/g" \
    log.file="$T/g.jsonl"
case_ "GPU run with checkpoints"
expect_rc 0
expect_file "$T/g/step-00000002/optimizer-00000-of-00001.safetensors"
expect_file "$T/g/step-00000002/model.safetensors"
cp -r "$T/g" "$T/g2" && rm -rf "$T/g2/step-00000004"
run "$SLUICE" train "$LLAMA" "${DATA[@]}" "${CK[@]}" train.device=cuda checkpoint.dir="$T/g2" \
    log.file="$T/g2.jsonl"
case_ "GPU -> GPU resume is bit-identical"
expect_rc 0
expect_err "resumed from"
compare "$T/g2.jsonl" "$T/g.jsonl" 3 0 0 && ok || fail "see above"
cp -r "$T/g" "$T/gc" && rm -rf "$T/gc/step-00000004"
run "$SLUICE" train "$LLAMA" "${DATA[@]}" "${CK[@]}" train.device=cpu checkpoint.dir="$T/gc" \
    log.file="$T/gc.jsonl"
case_ "GPU checkpoint resumes on the CPU"
expect_rc 0
expect_err "resumed from"
compare "$T/gc.jsonl" "$T/g.jsonl" 3 && ok || fail "see above"
run "$SLUICE" train "$LLAMA" "${DATA[@]}" "${CK[@]}" train.device=cpu checkpoint.dir="$T/c" \
    log.file="$T/c.jsonl"
case_ "CPU run with checkpoints"
expect_rc 0
cp -r "$T/c" "$T/cg" && rm -rf "$T/cg/step-00000004"
run "$SLUICE" train "$LLAMA" "${DATA[@]}" "${CK[@]}" train.device=cuda checkpoint.dir="$T/cg" \
    log.file="$T/cg.jsonl"
case_ "CPU checkpoint resumes on the GPU"
expect_rc 0
expect_err "resumed from"
compare "$T/cg.jsonl" "$T/c.jsonl" 3 && ok || fail "see above"
run "$SLUICE" export hf --out "$T/hf" "$T/g/step-00000004"
case_ "a GPU checkpoint exports to Hugging Face"
expect_rc 0
expect_file "$T/hf/model.safetensors"

finish
