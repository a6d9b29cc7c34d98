#!/usr/bin/env bash
# The GPU build and benchmark, checked without a GPU: every CUDA object in the GPU library and
# the kernel test program carries PTX for its highest architecture (so a newer GPU compiles
# it at load time instead of failing with "no kernel image"), and bench/train_gpu.sh, offline
# and without a prepared llm.c, says why llm.c is not comparable and exits cleanly; its rows
# carry their layers, sequence, batch and recomputation, and a slice of a model its
# transformer layers' own MFU.
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

# the benchmark's rows: labelled with layers, sequence, batch and recomputation; a slice of a
# model also with its transformer layers' own MFU (the script's functions, on a constructed
# log of the first GPU run's llama3-8b figures: 33,348 tokens/s, 561.7 TFLOP/s)
sed -n '/^rate() {/,/^}/p; /^describe() {/,/^}/p; /^trainer() {/,/^}/p; /^summary() {/,/^}/p' \
    "$ROOT/bench/train_gpu.sh" >"$T/fns.sh"
python3 -c '
import json
for i in range(20):
    print(json.dumps({"type": "train", "step": i + 1, "step_time_s": 8192 / 33348,
                      "tokens_per_s": 33348, "tflops_per_rank": 561.7, "loss": 12.5}))' >"$T/l.jsonl"
rows() { # CONFIG overrides...: the label and rate lines of a run with that log
    bash -c 'sluice=$1 root=$2 PEAK=989; source "$3"; log=$4 cfg=$5; shift 5
        IFS="|" read -r label out layers full <<<"$(describe "$cfg" "$@")"
        echo "row $label"; summary row "$log" "$out" "$layers" "$full"' _ "$SLUICE" "$ROOT" \
        "$T/fns.sh" "$T/l.jsonl" "$@"
}
run rows llama3-8b model.num_layers=8 train.seq_len=8192 train.micro_batch_size=1 train.global_batch_size=1 train.recompute=selective
case_ "bench row of a slice: its label and the transformer layers' own MFU"
expect_rc 0
expect_out "row [8 of 32 layers, seq 8192 x 1 (global 1), recompute selective]"
expect_out "MFU  56.8%"
# expected here from the model's file: the output layer's 6 x hidden x vocab of 561.7e12 /
# 33,348 FLOP per token taken out
want=$(awk '/^ *hidden_size:/ { h = $2 } /^ *vocab_size:/ { v = $2 } END {
    f = 561.7e12 / 33348; printf "%.1f", 100 * (f - 6 * h * v) * 33348 / 1e12 / 989 }' \
    "$ROOT/configs/models/llama3-8b.yaml")
expect_out "8 of 32 layers: the transformer layers alone MFU  $want%"
run rows gpt2-124m train.seq_len=1024 train.micro_batch_size=16 train.global_batch_size=16
case_ "bench row of a whole model: labelled, no slice line"
expect_rc 0
expect_out "row [12 of 12 layers, seq 1024 x 16 (global 16), recompute none]"
if grep -q "layers alone" "$T/out"; then fail "a slice line for the whole model"; else ok; fi

finish
