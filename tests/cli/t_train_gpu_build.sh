#!/usr/bin/env bash
# The GPU build and benchmark, checked without a GPU: every CUDA object in the GPU library and
# the kernel test program carries PTX for its highest architecture (so a newer GPU compiles
# it at load time instead of failing with "no kernel image"), and bench/train_gpu.sh, offline
# and without a prepared llm.c, says why llm.c is not comparable and exits cleanly.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
BUILD=${SLUICE_BUILD:-$(dirname "$SLUICE")}

if [ -e "$BUILD/libsluice-gpu.so" ] && command -v objcopy >/dev/null 2>&1; then
    for f in "$BUILD/libsluice-gpu.so" "$BUILD/test_kernels"; do
        [ -e "$f" ] || continue
        run python3 "$ROOT/tests/gpu/fatbin_ptx.py" "$f"
        case_ "$(basename "$f"): PTX for the highest architecture in every fatbin"
        expect_rc 0
        expect_out "0 without PTX for their highest architecture"
        expect_out "PTX compute_"
    done
    case_ "a file without device code is reported"
    run python3 "$ROOT/tests/gpu/fatbin_ptx.py" "$SLUICE"
    expect_rc 1
    expect_err "holds no CUDA device code"
else
    echo "  skip: no GPU library in $BUILD (a CUDA=0 build) or no objcopy"
fi

if nvidia-smi -L >/dev/null 2>&1; then
    echo "  skip: a GPU is here: bench/train_gpu.sh would run the benchmark"
else
    mkdir -p "$T/llmc-empty"
    for d in "" "$T/missing" "$T/llmc-empty"; do
        run env LLMC_DIR="$d" "$ROOT/bench/train_gpu.sh" "$SLUICE"
        case_ "bench/train_gpu.sh offline, LLMC_DIR='$d': reports and exits 0"
        expect_rc 0
        expect_out "llm.c: not comparable ("
        expect_out "SKIP: no GPU"
    done
    expect_out "no train_gpt2cu in LLMC_DIR '$T/llmc-empty'"
fi

finish
