#!/usr/bin/env bash
# make test-megatron: sluice's index caches against the real megatron-core 0.16.1 (see
# check_megatron_cache.py). SLUICE_MEGATRON_PY names a Python with megatron-core==0.16.1,
# torch and numpy; without it the test makes .venv-megatron from PyPI, and is skipped with
# the reason when that cannot be done.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sluice=${SLUICE:-$root/build/sluice}
# without SLUICE_MEGATRON_PY: .venv-megatron, made here from PyPI (megatron-core 0.16.1 and
# PyTorch, whose Linux wheel brings about 5 GB of CUDA libraries; it runs on the CPU)
if [ -z "${SLUICE_MEGATRON_PY:-}" ]; then
    venv="$root/.venv-megatron"
    if ! "$venv/bin/python" -c "import megatron.core, torch" 2>/dev/null; then
        py=$(command -v python3.12 || command -v python3)
        echo "test-megatron: setting up $venv (megatron-core==0.16.1, torch, numpy; several GB)" >&2
        if ! { "$py" -m venv "$venv" &&
               "$venv/bin/pip" install -q --disable-pip-version-check megatron-core==0.16.1 torch numpy; } >&2; then
            echo "test-megatron: SKIP: could not install megatron-core 0.16.1 and torch from PyPI into $venv"
            echo "test-megatron: 0 passed, 0 failed"
            exit 0
        fi
    fi
    SLUICE_MEGATRON_PY="$venv/bin/python"
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
