#!/usr/bin/env bash
# The GPU trainer's two communication backends (train.comm, train/gpu_comm.h) on emulated GPUs
# (build/emu/libsluice-gpu-emu.so), tiny-llama at seq 32, micro-batch 2, vocabulary 512:
#  - mpirun -np 2, one emulated GPU per rank: train.comm=mpi (host-staged) against
#    train.comm=nccl (the emulated NCCL over MPI), fp32 and bf16 gradient reduction: the
#    losses, gradient norms and every tensor's gradient bit-identical. Both backends fold the
#    ranks in rank order in fp32 and round bf16 once (the emulated NCCL, kernels/emu/nccl.cc,
#    and train/gpu_comm_mpi.c); real NCCL's ring would not be bit-identical.
#  - two ranks on ONE emulated GPU (SL_CUDA_EMU_DEVICES=1): train.comm=mpi against one rank
#    with two micro-batches of the same samples. Each rank's bf16 micro-batch gradient is
#    widened to fp32 and the two summed in the same order as one rank sums its micro-batches:
#    every tensor's gradient bit-identical. The loss and gradient norm are sums over ranks of
#    per-rank partial sums, in another order than one rank's: within STAT_RTOL = 1e-6 (fp32
#    reassociation of a few thousand terms; a wrong gradient moves them by far more).
#  - train.comm=auto picks MPI there and says why; train.comm=nccl is refused with a hint.
# SKIP where the plugin or mpirun is missing; the NCCL half where the plugin has no NCCL.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu mpi
STAT_RTOL=1e-6
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
ARGS=(data=synthetic model.vocab_size=512 train.seq_len=32 train.micro_batch_size=2 eval.interval=0
      train.global_batch_size=4 train.device=cuda)

compare() { # A.jsonl B.jsonl LOSS_RTOL NORM_RTOL
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$1" "$2" 1 "$3" "$4"
}
same_grads() { # DIR_A DIR_B: the step-1 gradient files byte for byte
    cmp "$1/grads-step-000001.safetensors" "$2/grads-step-000001.safetensors"
}

# --- 1. two ranks, a GPU each: MPI against NCCL ---------------------------------------------
for dt in fp32 bf16; do
    steps=2
    [ $dt = bf16 ] && steps=1
    for c in mpi nccl; do
        run "${MPIRUN[@]}" -x SLUICE_GPU_LIB -np 2 "$SLUICE" train "$LLAMA" "${ARGS[@]}" \
            train.steps=$steps train.comm=$c train.grad_reduce_dtype=$dt \
            log.file="$T/$c-$dt.jsonl" train.dump_grads="$T/g-$c-$dt"
        if [ $c = nccl ] && grep -q "this build has no NCCL" "$T/err"; then
            echo "  skip: train.comm=nccl: the emulated plugin was built without NCCL"
            continue 2
        fi
        case_ "mpirun -np 2, train.comm=$c, grad_reduce_dtype=$dt"
        expect_rc 0
        [ $c = mpi ] && expect_err "one per GPU; communication: MPI, host-staged (train.comm=mpi)"
        [ $c = nccl ] && expect_err "one per GPU; communication: NCCL (train.comm=nccl)"
    done
    case_ "grad_reduce_dtype=$dt: MPI = NCCL, losses and gradient norms bit-identical"
    compare "$T/mpi-$dt.jsonl" "$T/nccl-$dt.jsonl" 0 0 && ok || fail "see above"
    case_ "grad_reduce_dtype=$dt: MPI = NCCL, every tensor's gradient bit-identical"
    same_grads "$T/g-mpi-$dt" "$T/g-nccl-$dt" && ok || fail "gradients differ"
done

# --- 2. two ranks on one GPU --------------------------------------------------------------------
run "$SLUICE" train "$LLAMA" "${ARGS[@]}" train.steps=2 log.file="$T/np1.jsonl" \
    train.dump_grads="$T/g-np1"
case_ "one rank, two micro-batches"
expect_rc 0
run env SL_CUDA_EMU_DEVICES=1 "${MPIRUN[@]}" -x SLUICE_GPU_LIB -x SL_CUDA_EMU_DEVICES -np 2 \
    "$SLUICE" train "$LLAMA" "${ARGS[@]}" train.steps=2 train.comm=mpi log.file="$T/one.jsonl" \
    train.dump_grads="$T/g-one" checkpoint.dir="$T/ck" checkpoint.interval=2
case_ "two ranks on one emulated GPU, train.comm=mpi"
expect_rc 0
expect_err "x 2 ranks, several on a GPU (local rank r on GPU r mod GPUs); communication: MPI, host-staged (train.comm=mpi)"
expect_file "$T/ck/step-00000002/optimizer-00001-of-00002.safetensors"
case_ "two ranks on one GPU = one rank x 2 micro-batches: every tensor's gradient bit-identical"
same_grads "$T/g-one" "$T/g-np1" && ok || fail "gradients differ"
case_ "two ranks on one GPU = one rank x 2 micro-batches: loss and norm within $STAT_RTOL"
compare "$T/one.jsonl" "$T/np1.jsonl" "$STAT_RTOL" "$STAT_RTOL" && ok || fail "see above"

run env SL_CUDA_EMU_DEVICES=1 "${MPIRUN[@]}" -x SLUICE_GPU_LIB -x SL_CUDA_EMU_DEVICES -np 2 \
    "$SLUICE" train "$LLAMA" "${ARGS[@]}" train.steps=0
case_ "two ranks on one GPU, train.comm=auto: MPI, and why"
expect_rc 0
expect_err "communication: MPI, host-staged (train.comm=auto: 2 ranks on a node of 1 GPU)"
run env SL_CUDA_EMU_DEVICES=1 "${MPIRUN[@]}" -x SLUICE_GPU_LIB -x SL_CUDA_EMU_DEVICES -np 2 \
    "$SLUICE" train "$LLAMA" "${ARGS[@]}" train.steps=0 train.comm=nccl
case_ "two ranks on one GPU, train.comm=nccl: refused, with a hint"
[ "$rc" -ne 0 ] && ok || fail "exit code 0"
expect_err "train.comm=nccl: 2 ranks on a node of 1 GPU: NCCL needs a GPU of its own for each rank"
expect_err "hint: train.comm=mpi lets ranks share a GPU"

finish
