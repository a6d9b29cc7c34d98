#!/usr/bin/env bash
# make test-gpu-emu: the kernel tests (tests/gpu/test_kernels.c) built over the CUDA emulation
# (kernels/emu/) and run on the CPU, each group in its own process, in the natural order of
# blocks and threads, then reversed, then shuffled (SL_CUDA_EMU_STRICT=reversed, shuffled);
# a group that launches no kernel (gemm) only in the natural order. Before them the emulated
# warp exchanges (tests/gpu/test_emu.cu) and, with MPI, NCCL over MPI under mpirun -np 2 and 3
# (tests/gpu/test_nccl_emu.c), and the trainer's communicator with both backends under
# mpirun -np 2 and 3 (tests/gpu/test_gcomm.c).
# Ends with one "test-gpu-emu: N passed, N failed" line.
# Usage: [EMU_ORDERS="natural reversed shuffled"] tests/gpu/run_emu.sh EMU_BUILD_DIR [GROUP_SUBSTRING]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: tests/gpu/run_emu.sh EMU_BUILD_DIR [GROUP_SUBSTRING]}
filter=${2:-}

# the groups with no kernel of their own, whose result no thread order can change: natural only
declare -A natural_only=([gemm]="cuBLASLt is a CPU GEMM here (kernels/emu/cublaslt.cc)")

groups=$(grep -o '{ "[a-z_0-9]*", t_' "$here/test_kernels.c" | sed 's/{ "\([a-z_0-9]*\)".*/\1/')
passed=0
failed=0
start=$SECONDS

# add a program's "NAME: N passed, N failed" line to the totals (one failure when the line is
# missing, or when the program failed with no failed check)
tally() { # name output status
    local line
    line=$(echo "$2" | sed -n "s/^$1: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p")
    if [ -z "$line" ]; then
        line="0 1"
    elif [ "$3" -ne 0 ] && [ "${line#* }" = 0 ]; then
        line="${line% *} 1"
    fi
    passed=$((passed + ${line% *}))
    failed=$((failed + ${line#* }))
}

echo "== the emulated warp exchanges against their definitions ($dir/test_emu)"
out=$("$dir/test_emu" 2>&1)
status=$?
echo "$out" | grep -v '^  ok '
tally test_emu "$out" $status

echo "== the emulated cuBLASLt's FP8 matmul against its definition ($dir/test_lt_fp8)"
out=$("$dir/test_lt_fp8" 2>&1)
status=$?
echo "$out" | grep -v '^  ok '
tally test_lt_fp8 "$out" $status

# mpi_test NAME GROUP TITLE NEEDS: $dir/NAME (run when GROUP matches the filter) under mpirun at 2 and 3 ranks (one emulated GPU each),
# or a SKIP line saying it NEEDS, where it is not built or mpirun is missing
mpi_test() {
    if [ -x "$dir/$1" ] && command -v mpirun > /dev/null && [[ $2 == *"$filter"* ]]; then
        local mpirun=(mpirun --oversubscribe -x "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}")
        [ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
        for np in 2 3; do
            echo "== $3 between $np emulated GPUs ($dir/$1)"
            out=$(timeout 120 "${mpirun[@]}" -np $np "$dir/$1" 2>&1)
            status=$?
            echo "$out" | grep -v '^  ok '
            tally "$1" "$out" $status
        done
    elif [ -z "$filter" ]; then
        echo "== $3: SKIP: needs $4"
    fi
}
# NCCL between emulated GPUs (built with MPI and nccl.h only)
mpi_test test_nccl_emu nccl "NCCL over MPI" "MPI (mpicc, mpirun) and nccl.h"
# the trainer's communicator, NCCL and MPI backends (built with MPI)
mpi_test test_gcomm gcomm "the GPU communicator (train/gpu_comm.h)" "MPI (mpicc, mpirun)"
for order in ${EMU_ORDERS:-natural reversed shuffled}; do
    echo "== GPU kernel tests on the CPU emulation, $order order ($dir)"
    for g in $groups; do
        [ -n "$filter" ] && [[ $g != *"$filter"* ]] && continue
        if [ $order != natural ] && [ -n "${natural_only[$g]:-}" ]; then
            echo "   $g: natural order only: ${natural_only[$g]}"
            continue
        fi
        t0=$SECONDS
        if [ $order = natural ]; then
            out=$("$dir/test_kernels" --group "$g" 2>&1)
        else
            out=$(SL_CUDA_EMU_STRICT=$order "$dir/test_kernels" --group "$g" 2>&1)
        fi
        status=$?
        line=$(echo "$out" | sed -n "s/^ *$g: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p")
        p=${line% *}
        f=${line#* }
        if [ -z "$line" ]; then
            p=0
            f=1
        elif [ $status -ne 0 ] && [ "$f" = 0 ]; then
            f=1
        fi
        passed=$((passed + p))
        failed=$((failed + f))
        echo "   $g: $p passed, $f failed ($((SECONDS - t0)) s)"
        if [ "$f" != 0 ]; then
            echo "$out" | grep -v '^  ok ' | sed 's/^/     | /' | tail -20
        fi
    done
done
echo "test-gpu-emu: $passed passed, $failed failed ($((SECONDS - start)) s)"
[ $failed -eq 0 ]
