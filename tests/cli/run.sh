#!/usr/bin/env bash
# Run every tests/cli/t_*.sh (or those named) and report "N passed, N failed" in all.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${SLUICE:?set SLUICE to the sluice binary}"
export SLUICE
export SLUICE_PROGRESS_INTERVAL=${SLUICE_PROGRESS_INTERVAL:-30}
# the trainer's CLI tests check the CPU reference path, also on machines with a GPU
# (tests/gpu/t_train_gpu.sh names train.device in every run)
export SLUICE_TRAIN_DEVICE=${SLUICE_TRAIN_DEVICE:-cpu}
# Open MPI in containers: no shared-memory transport warnings, no hwloc binding
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "${SANITIZE:-0}" = 1 ]; then
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
    export LSAN_OPTIONS=suppressions=$here/../lsan.supp:print_suppressions=0
fi
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=("$here"/t_*.sh)
passed=0
failed=0
for t in "${tests[@]}"; do
    # a test marked "# sanitizer build: skip (reason)" only repeats, slowly, code paths that
    # the other tests already run under the sanitizers
    if [ "${SANITIZE:-0}" = 1 ] && grep -q '^# sanitizer build: skip' "$t"; then
        echo "$(basename "$t"): skipped in the sanitizer build ($(sed -n 's/^# sanitizer build: skip *(\(.*\))$/\1/p' "$t"))"
        continue
    fi
    start=$SECONDS
    out=$(bash "$t" 2>&1)
    status=$?
    echo "$out" | grep -v '^ok ' | sed "\$s/\$/ ($((SECONDS - start)) s)/" || true
    line=$(echo "$out" | tail -1)
    p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed/\1/p')
    f=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed/\2/p')
    passed=$((passed + ${p:-0}))
    if [ $status -ne 0 ] && [ "${f:-0}" = 0 ]; then f=1; echo "FAIL $t exited $status"; fi
    failed=$((failed + ${f:-0}))
done
echo "CLI: $passed passed, $failed failed"
[ $failed -eq 0 ]
