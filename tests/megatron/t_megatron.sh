#!/usr/bin/env bash
# make test-megatron: sluice's index caches against the real megatron-core 0.16.1 (see
# check_megatron_cache.py). SLUICE_MEGATRON_PY names a Python with megatron-core==0.16.1,
# torch and numpy (docs/testing.md says how to make one); without it the test is skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${SLUICE:-$root/build/sluice}
if [ -z "${SLUICE_MEGATRON_PY:-}" ]; then
    echo "test-megatron: SKIP: SLUICE_MEGATRON_PY does not name a Python with megatron-core 0.16.1"
    echo "test-megatron: 0 passed, 0 failed"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-megatron-XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
if "$SLUICE_MEGATRON_PY" -W ignore "$root/tests/megatron/check_megatron_cache.py" "$sluice" "$work" \
    2> >(grep -v -i "warn\|transformer engine\|legacy tokenizer\|^ *$\|CUDA_HOME" >&2); then
    echo "test-megatron: 1 passed, 0 failed ($(( $(date +%s) - start )) s)"
else
    echo "test-megatron: 0 passed, 1 failed"
    exit 1
fi
