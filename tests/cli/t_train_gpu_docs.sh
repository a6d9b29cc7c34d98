#!/usr/bin/env bash
# Document boundaries (data.reset_position_ids, data.reset_attention_mask, data.eod_mask_loss)
# on the CUDA trainer over emulated GPUs (build/emu/libsluice-gpu-emu.so): the own flash
# kernels' variable-length form, RoPE at the reset positions and the masked loss against the
# CPU path, with the first-step tolerances of t_train_gpu_emu.sh (bf16 against fp32: loss
# 0.5%, gradient norm 5%, every tensor's gradient 5e-2 relative L2; the validation loss
# 0.5%). tiny-llama, 80 tokens a sample (two 64-token tiles), documents of 2 to 12 tokens,
# two micro-batches a step; tiny-gpt (learned positions) on one emulated GPU and on two
# (tensor parallel with SP, mpirun).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
GPT="$ROOT/configs/models/tiny-gpt.yaml"

"$PY" - "$T" <<'PY'
import json, sys, numpy as np
rng = np.random.default_rng(5)
docs = [rng.integers(1, 64, size=int(rng.integers(1, 12))).tolist() + [0] for _ in range(150)]
json.dump(docs, open(sys.argv[1] + "/a.json", "w"))
PY
: >"$T/tok.model" # a tokenizer file for the manifest (never read)
"$PY" "$ROOT/tests/oracle/megatron_index.py" write "$T/a" "$T/a.json"
printf '{"settings": {"tokenizer": "spm:%s", "tokenizer_kind": "spm", "vocab_size": 64, "eod_id": 0}}\n' \
    "$T/tok.model" >"$T/a.manifest.json"
RUN=(data.prefix="$T/a" data.cache_dir="$T/cache" train.seq_len=80 train.micro_batch_size=2
     train.global_batch_size=4 train.steps=1 eval.interval=0 train.resume=none)
ALL=(data.reset_position_ids=true data.reset_attention_mask=true data.eod_mask_loss=true)

for dev in cpu cuda; do
    case_ "tiny-llama, all three, one step on $dev"
    run "$SLUICE" train "$LLAMA" "${RUN[@]}" "${ALL[@]}" train.device=$dev log.file="$T/$dev.jsonl" \
        train.dump_grads="$T/grads-$dev" eval.interval=1 eval.iters=1 data.split=80,20,0
    expect_rc 0
done
expect_err "own flash-attention kernels"
case_ "first step: loss and gradient norm, emulated GPU = CPU to bf16 tolerance"
run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/cuda.jsonl" "$T/cpu.jsonl" 1 0.005 0.05 0
expect_rc 0
case_ "validation (masked loss over the unmasked positions): emulated GPU = CPU within 0.5%"
run python3 - "$T/cuda.jsonl" "$T/cpu.jsonl" <<'PY'
import json, sys
val = [[m["val_loss"] for m in map(json.loads, open(p)) if m["type"] == "valid"] for p in sys.argv[1:]]
print("val_loss", val)
sys.exit(0 if len(val[0]) == 1 and len(val[1]) == 1 and abs(val[0][0] / val[1][0] - 1) <= 0.005 else 1)
PY
expect_rc 0
case_ "first step: every tensor's gradient, emulated GPU = CPU (relative L2 <= 0.05)"
run "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol 0.05 "$T/grads-cuda/grads-step-000001.safetensors" \
    "$T/grads-cpu/grads-step-000001.safetensors"
expect_rc 0
grep -iE "worst|max" "$T/out" | head -3 | sed "s/^/  /"
case_ "the comparison can fail: the CPU path without the settings differs"
run "$SLUICE" train "$LLAMA" "${RUN[@]}" train.device=cpu train.dump_grads="$T/grads-plain"
expect_rc 0
run "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol 0.05 "$T/grads-cuda/grads-step-000001.safetensors" \
    "$T/grads-plain/grads-step-000001.safetensors"
expect_rc 1

case_ "tiny-gpt (learned positions at the reset positions), all three: emulated GPU = CPU"
for dev in cpu cuda; do
    run "$SLUICE" train "$GPT" "${RUN[@]}" "${ALL[@]}" train.device=$dev log.file="$T/gpt-$dev.jsonl" \
        train.dump_grads="$T/gpt-grads-$dev"
    expect_rc 0
done
run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/gpt-cuda.jsonl" "$T/gpt-cpu.jsonl" 1 0.005 0.05 0
expect_rc 0
run "$PY" "$ROOT/tests/oracle/grad_compare.py" --rtol 0.05 \
    "$T/gpt-grads-cuda/grads-step-000001.safetensors" "$T/gpt-grads-cpu/grads-step-000001.safetensors"
expect_rc 0
grep -iE "worst" "$T/out" | head -1 | sed "s/^/  [tiny-gpt] /"

if have_mpi; then
    case_ "tensor parallel 2 with sequence parallel (vocab-parallel embedding at the reset positions) = CPU"
    run "${MPIRUN[@]}" -x SLUICE_GPU_LIB -np 2 "$SLUICE" train "$GPT" "${RUN[@]}" "${ALL[@]}" \
        train.device=cuda parallel.tensor=2 parallel.sequence=true log.file="$T/tp-cuda.jsonl"
    if [ "$rc" -ne 0 ] && grep -q "this build has no NCCL" "$T/err"; then
        echo "  skip: the emulated plugin was built without NCCL"
    else
        expect_rc 0
        run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/tp-cuda.jsonl" "$T/gpt-cpu.jsonl" 1 \
            0.005 0.05 0
        expect_rc 0
    fi
else
    echo "skip: tensor parallel (mpirun not found)"
fi

bytes_of() { sed -n "s/.*$1.*\(parameters [0-9]*, gradients [0-9]*, optimizer [0-9]*, activations [0-9]*, workspace [0-9]*, arena [0-9]*\).*/\1/p" "$2" | head -1; }
case_ "the GPU memory estimate counts the document rows: it is the allocation"
run "$SLUICE" -v train "$LLAMA" "${RUN[@]}" "${ALL[@]}" train.device=cuda
expect_rc 0
alloc=$(bytes_of "GPU memory bytes: " "$T/err")
run "$SLUICE" train "$LLAMA" "${RUN[@]}" "${ALL[@]}" --print-config
expect_rc 0
est=$(bytes_of "#     bytes: " "$T/out")
expect_eq "$est" "$alloc"
[ -n "$alloc" ] || fail "no 'GPU memory bytes' line"

case_ "train.attention=cudnn with reset_attention_mask is refused"
run "$SLUICE" train "$LLAMA" "${RUN[@]}" data.reset_attention_mask=true train.device=cuda \
    train.attention=cudnn
expect_rc 1
expect_err "train.attention=cudnn with data.reset_attention_mask"
finish
