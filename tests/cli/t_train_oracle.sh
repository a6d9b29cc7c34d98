#!/usr/bin/env bash
# The CPU trainer against independent oracles, for tiny-gpt and tiny-llama: step 1 logits,
# loss and every gradient (rel err <= 1e-5), then 10 AdamW steps (losses and parameters,
# <= 1e-4). The numpy oracle (float64, written from the math) always runs; the PyTorch
# oracle runs when torch can be imported ($PY, or $SLUICE_TORCH_PY).
# sanitizer build: skip (numerical agreement; t_train.sh runs the same code under the sanitizers)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
TPY=${SLUICE_TORCH_PY:-$PY}
have_torch=0
"$TPY" -c "import torch" >/dev/null 2>&1 && have_torch=1

for m in tiny-gpt tiny-llama; do
    case_ "$m: 10 steps with a debug dump"
    # eps 1e-6 keeps AdamW from turning rounding noise into full-size updates (see
    # tests/oracle/check_train.py); two micro-batches per step test accumulation
    run "$SLUICE" train "$ROOT/configs/models/$m.yaml" data=synthetic train.steps=10 \
        train.micro_batch_size=2 train.global_batch_size=4 train.seq_len=32 eval.interval=0 \
        optim.warmup_steps=2 optim.eps=1e-6 train.resume=none checkpoint.dir="$T/$m/ck" \
        debug.dump_dir="$T/$m/dump" debug.dump_steps=10
    expect_rc 0
    case_ "$m: numpy oracle"
    run "$PY" "$ORACLE/check_train.py" --oracle numpy "$T/$m/dump" "$T/$m/ck/step-00000010" 10
    expect_rc 0
    expect_out "oracle numpy: 0 checks failed"
    grep -E "step 1 |params after|element-wise" "$T/out" | sed "s/^/  [$m numpy] /"
    if [ $have_torch = 1 ]; then
        case_ "$m: PyTorch oracle"
        run "$TPY" "$ORACLE/check_train.py" --oracle torch "$T/$m/dump" "$T/$m/ck/step-00000010" 10
        expect_rc 0
        expect_out "oracle torch: 0 checks failed"
        grep -E "step 1 |params after|element-wise" "$T/out" | sed "s/^/  [$m torch] /"
    else
        echo "skip: PyTorch oracle for $m (torch not importable; set SLUICE_TORCH_PY)"
    fi
done

finish
