#!/usr/bin/env bash
# Interleaved pipeline parallel (parallel.virtual_stages) on the CPU path: 4-layer tiny-llama
# and tiny-gpt, stage s holding virtual stages s and s + PP (layers s and s + 2), run in
# Megatron-Core's interleaved 1F1B order. PP=2 x 2 virtual stages is bit-identical to one
# rank for tiny-llama (a pipeline reorders no sum); with 2 micro-batches a step (= PP: every
# forward first), with tied embeddings (tiny-gpt) and in DP x TP x PP = 2 x 2 x 2 with
# sequence parallel on 8 oversubscribed ranks it agrees within the tolerance of
# tests/cli/parallel_lib.sh. Checkpoints: an interleaved run resumed from its checkpoint
# continues bit-identically, and on one rank too; the validation loss runs through the
# interleaved pipeline. Layouts that cannot work are refused with the key.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/parallel_lib.sh"

LLAMA="$ROOT/configs/models/tiny-llama.yaml"
PCOMMON+=(model.num_layers=4)
case_ "virtual stages without a pipeline, with too few layers, with micro-batches that do not split"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.virtual_stages=2 --print-config
expect_rc 2
expect_err "parallel.virtual_stages: 2 virtual stages need pipeline parallelism"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.pipeline=2 parallel.virtual_stages=3 \
    --print-config
expect_rc 2
expect_err "parallel.virtual_stages: 2 stages x 3 virtual stages for 4 layers"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.pipeline=2 parallel.virtual_stages=2 \
    train.micro_batch_size=8 --print-config
expect_rc 2
expect_err "the interleaved schedule needs the 1 micro-batches of a step to be a multiple of the 2 pipeline stages"
case_ "--print-config shows the virtual stages"
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" parallel.pipeline=2 parallel.virtual_stages=2 \
    train.micro_batch_size=2 --print-config
expect_rc 0
expect_out "  virtual_stages: 2"
if ! have_mpi; then
    echo "  skip: mpirun not found"
    finish
fi

V=(parallel.pipeline=2 parallel.virtual_stages=2)
reference llama
layout llama pp2v2 2 2 "${V[@]}"
case_ "llama pp2v2: the layout is logged"
grep -qF "pipeline 2 (2 interleaved virtual stages each)" "$T/llama-pp2v2.err" && ok || fail "no layout line"
case_ "llama pp2v2: bit-identical to one rank (gradients, parameters, moments)"
run "${CMP[@]}" --rtol 0 "$T/llama-pp2v2/grads-step-000001.safetensors" \
    "$T/llama-ref/grads-step-000001.safetensors"
expect_rc 0
for f in model optimizer; do
    run "${CMP[@]}" --rtol 0 "$T/llama-pp2v2-ck/step-00000005/$f.safetensors" \
        "$T/llama-ref-ck/step-00000005/$f.safetensors"
    expect_rc 0
done
layout llama pp2v2m2 2 4 "${V[@]}"
layout llama dp2tp2pp2v2sp 8 1 "${V[@]}" parallel.tensor=2 parallel.sequence=true
reference gpt
layout gpt pp2v2 2 2 "${V[@]}"

R=(train.micro_batch_size=2 train.steps=4 checkpoint.interval=2 eval.interval=4 eval.iters=1)
run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" "${V[@]}" \
    checkpoint.dir="$T/split" log.file="$T/split.jsonl"
case_ "PP2 x 2 virtual stages: 4 steps, checkpoints at 2 and 4"
expect_rc 0
mkdir -p "$T/again" "$T/one"
cp -r "$T/split/step-00000002" "$T/again/"
cp -r "$T/split/step-00000002" "$T/one/"
run "${MPIRUN[@]}" -np 2 "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" "${V[@]}" \
    checkpoint.dir="$T/again"
case_ "resumed from its step 2 = the uninterrupted run at step 4, bit for bit"
expect_rc 0
expect_err "resumed from"
for f in model optimizer; do
    run "${CMP[@]}" --rtol 0 "$T/again/step-00000004/$f.safetensors" "$T/split/step-00000004/$f.safetensors"
    expect_rc 0
done
run "$SLUICE" train "$LLAMA" "${PCOMMON[@]}" "${R[@]}" checkpoint.dir="$T/one" log.file="$T/one.jsonl"
case_ "its checkpoint resumed on one rank = the interleaved run at step 4, bit for bit"
expect_rc 0
for f in model optimizer; do
    run "${CMP[@]}" --rtol 0 "$T/one/step-00000004/$f.safetensors" "$T/split/step-00000004/$f.safetensors"
    expect_rc 0
done
case_ "the validation loss through the interleaved pipeline = one rank's"
"$PY" - "$T/split.jsonl" "$T/one.jsonl" <<'PY' && ok || fail "see above"
import json, sys
v = [[json.loads(l)["val_loss"] for l in open(p) if '"valid"' in l] for p in sys.argv[1:3]]
print(f"  val_loss {v[0]} vs {v[1]}")
assert len(v[0]) == len(v[1]) == 1 and v[0] == v[1]
PY
finish
