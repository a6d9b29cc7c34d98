#!/usr/bin/env bash
# make test-gpu: the kernel tests (build/test_kernels), the GPU trainer against the CPU
# path (tests/gpu/t_train_gpu.sh) and evaluation on the GPU (tests/gpu/t_eval_gpu.sh),
# ending with one "test-gpu: N passed, N failed" line. Each prints SKIP, with the reason, on
# a machine without a CUDA device and counts nothing.
# Usage: tests/gpu/run.sh BUILD_DIR [test_kernels arguments]
# TEST_GPU_PARTS picks among "kernels trainer eval" (default all three; scripts/gpu-check.sh
# runs them as separate stages, each under its own time limit).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/gpu/run.sh BUILD_DIR [test_kernels args]}
shift
parts=" ${TEST_GPU_PARTS:-kernels trainer eval} "
passed=0
failed=0

if [[ $parts == *" kernels "* ]]; then
echo "== GPU kernel tests ($build)"
out=$("$build/test_kernels" "$@" 2>&1)
status=$?
echo "$out"
# per-group lines "   name: P passed, F failed, S skipped" (or one such line with a filter)
while read -r p f; do
    passed=$((passed + p))
    failed=$((failed + f))
done < <(echo "$out" | sed -n 's/^ *[A-Za-z0-9_]*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p')
crashed=$(echo "$out" | grep -c '^  CRASH group' || true)
failed=$((failed + crashed))
if [ $status -ne 0 ] && [ $failed -eq 0 ]; then
    echo "FAIL test_kernels exited $status"
    failed=$((failed + 1))
fi
fi

for t in t_train_gpu.sh t_eval_gpu.sh; do
    [ $t = t_train_gpu.sh ] && [[ $parts != *" trainer "* ]] && continue
    [ $t = t_eval_gpu.sh ] && [[ $parts != *" eval "* ]] && continue
    case $t in
        t_train_gpu.sh) echo "== GPU trainer against the CPU path ($build)" ;;
        t_eval_gpu.sh) echo "== evaluation on the GPU ($build)" ;;
    esac
    out=$(SLUICE="$build/sluice" SLUICE_BUILD="$build" "$here/../cli/run.sh" "$here/$t" 2>&1)
    status=$?
    echo "$out"
    line=$(echo "$out" | grep '^CLI: ' | tail -1)
    p=$(echo "$line" | sed -n 's/^CLI: \([0-9]*\) passed, \([0-9]*\) failed/\1/p')
    f=$(echo "$line" | sed -n 's/^CLI: \([0-9]*\) passed, \([0-9]*\) failed/\2/p')
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0}))
    if [ $status -ne 0 ] && [ "${f:-0}" = 0 ]; then
        echo "FAIL $t exited $status"
        failed=$((failed + 1))
    fi
done

echo "test-gpu: $passed passed, $failed failed"
[ $failed -eq 0 ]
