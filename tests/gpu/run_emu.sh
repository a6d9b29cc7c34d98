#!/usr/bin/env bash
# make test-gpu-emu: the kernel tests (tests/gpu/test_kernels.c) built over the CUDA emulation
# (kernels/emu/) and run on the CPU, each group in its own process, in the natural order of
# blocks and threads, then reversed, then shuffled (SL_CUDA_EMU_STRICT=reversed, shuffled);
# a group that launches no kernel (gemm) only in the natural order.
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

echo "== the emulated warp exchanges against their definitions ($dir/test_emu)"
out=$("$dir/test_emu" 2>&1)
status=$?
echo "$out" | grep -v '^  ok '
line=$(echo "$out" | sed -n 's/^test_emu: \([0-9]*\) passed, \([0-9]*\) failed/\1 \2/p')
if [ -z "$line" ]; then
    line="0 1"
elif [ $status -ne 0 ] && [ "${line#* }" = 0 ]; then
    line="${line% *} 1"
fi
passed=$((passed + ${line% *}))
failed=$((failed + ${line#* }))
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
