#!/usr/bin/env bash
# make test-gpu without a GPU (tests/gpu/run.sh, tests/gpu/t_train_gpu.sh): the GPU trainer
# test SKIPs only on the trainer's exact "no CUDA device" message and fails on any other
# failure of its probe; the run ends with one "test-gpu: N passed, N failed" line summing the
# kernel and trainer tests (every kernel group of test_kernels.c's table).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
GPU_T="$ROOT/tests/gpu/t_train_gpu.sh"
BUILD=${SLUICE_BUILD:-$(dirname "$SLUICE")}
gpu_node() { [ -e /dev/nvidia0 ] || [ -e /proc/driver/nvidia/gpus ]; }

# a stand-in for sluice that fails its probe the way the real one would with $1 on stderr
fake() {
    mkdir -p "$T/fake"
    printf '#!/bin/sh\nprintf "%%s\\n" "%s" >&2\nexit %s\n' "$1" "$2" >"$T/fake/sluice"
    chmod +x "$T/fake/sluice"
}

if [ -e "$BUILD/libsluice-gpu.so" ] && ! gpu_node; then
    run env SLUICE="$SLUICE" bash "$GPU_T"
    case_ "no GPU: the real trainer's message gives SKIP with the reason, exit 0"
    expect_rc 0
    expect_out "SKIP: no CUDA device (cudaGetDeviceCount: "
    expect_out "t_train_gpu.sh: 0 passed, 0 failed"
    run env SLUICE="$SLUICE" SLUICE_GPU_LIB="$T/missing.so" bash "$GPU_T"
    case_ "the GPU library cannot be loaded: a failure, not a SKIP"
    expect_rc 1
    expect_err "GPU probe"
    if grep -q SKIP "$T/out"; then fail "skipped"; else ok; fi
else
    echo "  skip: the real probe needs a CUDA build on a machine without a GPU"
fi

fake "sluice train: error: train.device=cuda: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)" 1
run env SLUICE="$T/fake/sluice" bash "$GPU_T"
case_ "the exact message: SKIP"
expect_rc 0
expect_out "SKIP: no CUDA device (cudaGetDeviceCount: no CUDA-capable device is detected)"
for bad in "1|fatal: nccl error 'unhandled system error' in ncclCommInitRank(...)" \
    "1|sluice train: error: cannot allocate 70 GiB of GPU memory (3 GiB free)" \
    "1|sluice train: error: train.device=cuda: a GPU is present but CUDA cannot use it (cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version)" \
    "134|fatal: cudnn error 'CUDNN_STATUS_EXECUTION_FAILED' in cudnnBackendExecute" \
    "2|sluice train: error: train.device=cuda: no CUDA device (cudaGetDeviceCount: x)"; do
    fake "${bad#*|}" "${bad%%|*}"
    run env SLUICE="$T/fake/sluice" bash "$GPU_T"
    case_ "probe fails with exit ${bad%%|*} and '${bad#*|}': FAIL, not SKIP"
    expect_rc 1
    if grep -q SKIP "$T/out"; then fail "skipped"; else ok; fi
done

# tests/gpu/run.sh sums both parts into one line
mkdir -p "$T/build"
fake "sluice train: error: train.device=cuda: no CUDA device (cudaGetDeviceCount: none)" 1
cp "$T/fake/sluice" "$T/build/sluice"
printf '#!/bin/sh\necho "== util"\necho "   util: 3 passed, 1 failed, 0 skipped"\necho "== rope"\necho "   rope: 2 passed, 0 failed, 1 skipped"\nexit 1\n' >"$T/build/test_kernels"
chmod +x "$T/build/test_kernels"
run "$ROOT/tests/gpu/run.sh" "$T/build"
case_ "test-gpu: one summary line over the kernel groups and the trainer test"
expect_rc 1
expect_eq "$(tail -1 "$T/out")" "test-gpu: 5 passed, 1 failed"
# every group of test_kernels.c's table is counted, those with digits in their names too
# (grad_f32 was dropped by a letters-only name pattern)
groups=$(grep -o '{ "[^"]*", t_[a-z0-9_]* }' "$ROOT/tests/gpu/test_kernels.c" | cut -d'"' -f2)
{
    printf '#!/bin/sh\n'
    i=0
    for g in $groups; do
        i=$((i + 1))
        printf 'echo "== %s"\necho "   %s: %d passed, 0 failed, 0 skipped"\n' "$g" "$g" $((i * 10))
    done
} >"$T/build/test_kernels"
sum=0 i=0
for g in $groups; do i=$((i + 1)) sum=$((sum + i * 10)); done
run "$ROOT/tests/gpu/run.sh" "$T/build"
case_ "test-gpu: every kernel group's count ($(echo $groups | wc -w) groups, grad_f32 among them)"
expect_rc 0
expect_out "grad_f32: "
expect_eq "$(tail -1 "$T/out")" "test-gpu: $sum passed, 0 failed"
printf '#!/bin/sh\necho "test_kernels: SKIP: no CUDA device (none)"\nexit 0\n' >"$T/build/test_kernels"
run "$ROOT/tests/gpu/run.sh" "$T/build"
case_ "test-gpu without a GPU: SKIPs, 0 passed, 0 failed, exit 0"
expect_rc 0
expect_out "SKIP: no CUDA device"
expect_eq "$(tail -1 "$T/out")" "test-gpu: 0 passed, 0 failed"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$T/build/test_kernels"
run "$ROOT/tests/gpu/run.sh" "$T/build"
case_ "test_kernels crashing counts as a failure"
expect_rc 1
expect_eq "$(tail -1 "$T/out")" "test-gpu: 0 passed, 1 failed"
if [ -x "$BUILD/test_kernels" ] && [ -e "$BUILD/libsluice-gpu.so" ] && ! gpu_node; then
    run "$ROOT/tests/gpu/run.sh" "$BUILD"
    case_ "make test-gpu's script on this machine (no GPU): SKIP, exit 0"
    expect_rc 0
    expect_eq "$(tail -1 "$T/out")" "test-gpu: 0 passed, 0 failed"
fi

finish
