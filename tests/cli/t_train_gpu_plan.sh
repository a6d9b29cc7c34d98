#!/usr/bin/env bash
# The GPU trainer's memory: the estimate `sluice train --print-config` prints is the arena the
# trainer allocates (train/gpu_plan.h), and the estimates of the large configurations are the
# specification's.
#  1. Every layout the emulated trainer runs (build/emu/libsluice-gpu-emu.so): one step with
#     -v, whose "GPU memory bytes" line (rank 0) must equal the bytes --print-config gives
#     for stage 0 (rank 0's), category for category and the arena, exactly. The emulated kernels' workspace
#     sizes are the own kernels', which --print-config counts (no cuDNN in the emulation). A
#     layout is one line of LAYOUTS: ranks, model, recomputation, extra keys (as ZeRO-2/3,
#     tensor and pipeline parallelism arrive on the GPU path, add their lines).
#  2. The configurations of configs/parallel/ (Llama 3 8B on 8 GPUs, 70B on 64, 405B on 576,
#     and the 1F1B seeds), at every recomputation mode: every stage's estimate and bytes, the
#     largest stage and the totals at ZeRO-1/2/3 against tests/oracle/gpu_memory.py, which
#     derives them from the specification (not from the C code).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
GPT="$ROOT/configs/models/tiny-gpt.yaml"
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
SMALL=(data=synthetic model.vocab_size=512 train.seq_len=32 train.micro_batch_size=2
       train.global_batch_size=4 eval.interval=0)

# --- 1. the estimate is the allocation ------------------------------------------------------
# ranks model recompute [key=value ...]
LAYOUTS=(
    "1 gpt none"
    "1 gpt selective"
    "1 gpt full"
    "1 llama none"
    "1 llama selective"
    "1 llama full"
    "1 llama selective train.global_batch_size=8 eval.iters=3"
    "2 llama none"
    "2 gpt selective"
)
PLUGIN="${SLUICE_BUILD:-$ROOT/build}/emu/libsluice-gpu-emu.so"
bytes_of() { sed -n "s/.*$1.*\(parameters [0-9]*, gradients [0-9]*, optimizer [0-9]*, activations [0-9]*, workspace [0-9]*, arena [0-9]*\).*/\1/p" "$2" | head -1; }
if [ ! -e "$PLUGIN" ]; then
    echo "  skip: no $PLUGIN (make builds it where the CUDA headers are)"
else
    export SLUICE_GPU_LIB="$PLUGIN"
    for layout in "${LAYOUTS[@]}"; do
        read -r np model rcm extra <<<"$layout"
        cfg=$GPT; [ "$model" = llama ] && cfg=$LLAMA
        keys=("${SMALL[@]}" train.recompute="$rcm" $extra)
        launch=()
        if [ "$np" -gt 1 ]; then
            if ! have_mpi; then echo "  skip: $layout: mpirun not found"; continue; fi
            launch=("${MPIRUN[@]}" -x SLUICE_GPU_LIB -np "$np")
        fi
        run "${launch[@]}" "$SLUICE" -v train "$cfg" "${keys[@]}" train.steps=1 train.device=cuda
        if [ "$rc" -ne 0 ] && grep -q "this build has no NCCL" "$T/err"; then
            echo "  skip: $layout: the emulated plugin was built without NCCL"
            continue
        fi
        case_ "$layout: one step on emulated GPUs"
        expect_rc 0
        alloc=$(bytes_of "GPU memory bytes: " "$T/err")
        run "$SLUICE" train "$cfg" "${keys[@]}" parallel.data="$np" --print-config
        case_ "$layout: --print-config"
        expect_rc 0
        est=$(bytes_of "#     bytes: " "$T/out")
        case_ "$layout: the estimate is the allocation"
        if [ -n "$alloc" ] && [ "$alloc" = "$est" ]; then
            ok
            echo "  $layout: $alloc"
        else
            fail "allocated '$alloc', estimated '$est'"
        fi
    done
fi

# --- 2. the large configurations against the specification ----------------------------------
# optim.zero takes 2 and 3 once the ZeRO-2/3 stages are read (train_config.c); before, the 8B
# configuration is checked in detail at ZeRO-1 and its ZeRO-3 arena through the ZeRO-1/2/3
# line, which both report
ZERO3=()
"$SLUICE" train "$LLAMA" data=synthetic optim.zero=3 --print-config >/dev/null 2>&1 ||
    ZERO3=(optim.zero=1)
# config [key=value ...]
CONFIGS=(
    "llama3-8b-dp8 ${ZERO3[*]}"
    "llama3-70b-64gpu"
    "llama3.1-405b-576gpu"
    "llama3-70b-tp8-pp8"
    "llama3.1-405b-tp8-pp16"
)
for line in "${CONFIGS[@]}"; do
    read -r name extra <<<"$line"
    for rcm in none selective full; do
        run "$SLUICE" train "$ROOT/configs/parallel/$name.yaml" data=synthetic $extra \
            train.recompute=$rcm --print-config
        case_ "$name (recompute $rcm): --print-config, dry"
        expect_rc 0
        case_ "$name (recompute $rcm): the estimate per stage is the specification's"
        cp "$T/out" "$T/print"
        run "$PY" "$ROOT/tests/oracle/gpu_memory.py" "$T/print"
        if [ "$rc" -eq 0 ]; then ok; sed 's/^/  /' "$T/out"; else fail "see above"; fi
    done
done

finish
