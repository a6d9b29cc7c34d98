#!/usr/bin/env bash
# Checkpoints across layouts: a checkpoint holds full tensors whatever the layout that wrote
# it (gathered at save, sliced at load). Saved at TP2 x PP2, it resumes at TP1 x PP1 and the
# run continues exactly as one that never split: bit-identical to the same checkpoint resumed
# at PP2 (a layout that reorders no sum), and within the fp32 tolerance of
# tests/cli/parallel_lib.sh of the TP2 x PP2 run's own continuation. A TP2 x PP2 run resumed
# from its checkpoint continues bit-identically to the uninterrupted run (the gathered state
# is complete: weights and AdamW moments). The HF export reads it like any checkpoint.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"
if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi
CFG="$ROOT/configs/models/tiny-llama.yaml"
R=(train.micro_batch_size=2 train.steps=4 checkpoint.interval=2 eval.interval=4 eval.iters=1)
run "${MPIRUN[@]}" -np 4 "$SLUICE" train "$CFG" "${PCOMMON[@]}" "${R[@]}" parallel.tensor=2 \
    parallel.pipeline=2 checkpoint.dir="$T/split" log.file="$T/split.jsonl"
case_ "TP2 x PP2: 4 steps, checkpoints at 2 and 4"
expect_rc 0
expect_file "$T/split/step-00000002/model.safetensors"
expect_file "$T/split/step-00000004/model.safetensors"

mkdir -p "$T/again" "$T/one" "$T/pp"
for d in again one pp; do cp -r "$T/split/step-00000002" "$T/$d/"; done
run "${MPIRUN[@]}" -np 4 "$SLUICE" train "$CFG" "${PCOMMON[@]}" "${R[@]}" parallel.tensor=2 \
    parallel.pipeline=2 checkpoint.dir="$T/again"
case_ "TP2 x PP2 resumed from its step 2 = the uninterrupted run at step 4, bit for bit"
expect_rc 0
expect_err "resumed from"
run "${CMP[@]}" --rtol 0 "$T/again/step-00000004/model.safetensors" "$T/split/step-00000004/model.safetensors"
expect_rc 0
run "${CMP[@]}" --rtol 0 "$T/again/step-00000004/optimizer.safetensors" \
    "$T/split/step-00000004/optimizer.safetensors"
expect_rc 0

run "$SLUICE" train "$CFG" "${PCOMMON[@]}" "${R[@]}" checkpoint.dir="$T/one" log.file="$T/one.jsonl"
case_ "the TP2 x PP2 checkpoint resumes at TP1 x PP1 (one rank)"
expect_rc 0
expect_err "resumed from"
run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$CFG" "${PCOMMON[@]}" "${R[@]}" parallel.pipeline=2 \
    checkpoint.dir="$T/pp"
case_ "one rank from the resharded checkpoint = PP2 from it, bit for bit"
expect_rc 0
run "${CMP[@]}" --rtol 0 "$T/one/step-00000004/model.safetensors" "$T/pp/step-00000004/model.safetensors"
expect_rc 0
run "${CMP[@]}" --rtol 0 "$T/one/step-00000004/optimizer.safetensors" \
    "$T/pp/step-00000004/optimizer.safetensors"
expect_rc 0
case_ "one rank's continuation = the TP2 x PP2 run's, within rtol $RTOL"
run "${CMP[@]}" --rtol "$RTOL" "$T/one/step-00000004/model.safetensors" \
    "$T/split/step-00000004/model.safetensors"
expect_rc 0

case_ "the validation loss at step 4: TP2 x PP2 (pipelined forward) = one rank after the reshard"
"$PY" - "$T/split.jsonl" "$T/one.jsonl" "$RTOL" <<'PY' && ok || fail "see above"
import json, sys
v = [[json.loads(l)["val_loss"] for l in open(p) if '"valid"' in l] for p in sys.argv[1:3]]
print(f"  val_loss {v[0]} vs {v[1]}")
assert len(v[0]) == len(v[1]) == 1 and abs(v[0][0] - v[1][0]) <= float(sys.argv[3]) * v[1][0]
PY

case_ "the HF export of the TP2 x PP2 checkpoint"
run "$SLUICE" export hf --out "$T/hf" "$T/split/step-00000004"
expect_rc 0
expect_file "$T/hf/model.safetensors"
expect_file "$T/hf/config.json"
finish
