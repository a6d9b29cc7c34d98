#!/usr/bin/env bash
# sluice train / export: usage, the per-step line and JSONL log, CPU fallback, checkpoints
# (atomic step directories, keep_last, bit-identical resume), the HF export, bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
CFG="$ROOT/configs/models/tiny-gpt.yaml"
# a small and quick run: GPT-2 shape, 1024-token vocabulary, synthetic data
SMALL=(model.vocab_size=1024 train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=4
       eval.interval=0 optim.warmup_steps=2 optim.decay_steps=6 train.resume=auto)

# json_line FILE N EXPR: EXPR over the N-th line of a JSONL file (as `m`)
json_line() { python3 -c "import json,sys; m=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])-1]); print($3)" "$1" "$2"; }

case_ "train -h"
run "$SLUICE" train -h
expect_rc 0
expect_out "usage: sluice train CONFIG.yaml [key=value ...]"

case_ "every option of -h is in docs/commands/{train,export}.md"
for cmd in train export; do
    for opt in $("$SLUICE" $cmd -h | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$opt" "$ROOT/docs/commands/$cmd.md" && ok || fail "$opt missing from docs/commands/$cmd.md"
    done
done

case_ "train without a config is a usage error"
run "$SLUICE" train
expect_rc 2
expect_err "no config given"

case_ "every model config loads"
for f in "$ROOT"/configs/models/*.yaml; do
    run "$SLUICE" train "$f" data=synthetic train.steps=0 train.seq_len=8 train.micro_batch_size=1 \
        train.global_batch_size=1 model.num_layers=1 model.vocab_size=256 model.hidden_size=64 \
        model.ffn_hidden_size=64 model.max_position_embeddings=64 model.make_vocab_size_divisible_by=1 \
        model.num_attention_heads=4 model.num_query_groups=2
    if [ "$rc" = 0 ]; then ok; else fail "$(basename "$f") exit $rc"; fi
done

case_ "synthetic run: CPU fallback message, a line per step, JSONL log"
run "$SLUICE" train "$CFG" data=synthetic train.steps=3 "${SMALL[@]}" log.file="$T/log.jsonl" log.peak_tflops=1
expect_rc 0
expect_err "training on the CPU"
expect_out "step 3/3 | consumed_samples 12 | loss "
expect_out "| lr "; expect_out "| grad_norm "; expect_out "| tokens/s "; expect_out "| MFU "
expect_eq "$(grep -c '"type":"train"' "$T/log.jsonl")" 3
expect_eq "$(json_line "$T/log.jsonl" 3 "sorted(m)")" \
    "['consumed_samples', 'grad_norm', 'loss', 'lr', 'mfu', 'skipped', 'step', 'step_time_s', 'tflops_per_rank', 'tokens_per_s', 'type']"

case_ "train.device=cpu forces the CPU path"
run "$SLUICE" train "$CFG" data=synthetic train.steps=1 "${SMALL[@]}" train.device=cpu
expect_rc 0
expect_err "train.device=cpu: training on the CPU"

# Without a GPU (CI): cuda is a clear error, auto falls back to the CPU with an info line.
# With one, tests/gpu/t_train_gpu.sh (make test-gpu) covers both devices.
if ! { [ -e /dev/nvidia0 ] || nvidia-smi -L >/dev/null 2>&1; }; then
    case_ "train.device=cuda without a GPU fails cleanly"
    run "$SLUICE" train "$CFG" data=synthetic train.steps=1 "${SMALL[@]}" train.device=cuda
    expect_rc 1
    expect_err "train.device=cuda: "
    expect_err "hint: train.device=auto falls back to the CPU"
    expect_no_err "fatal"
    case_ "train.device=auto without a GPU falls back to the CPU"
    run "$SLUICE" train "$CFG" data=synthetic train.steps=1 "${SMALL[@]}" train.device=auto
    expect_rc 0
    expect_err "no GPU found: training on the CPU"
    expect_out "step 1/1 | consumed_samples 4 | loss "
else
    echo "  skip: train.device=cuda/auto without a GPU (a GPU is present; see make test-gpu)"
fi

case_ "train.device, train.attention, train.recompute take their listed values only"
run "$SLUICE" train "$CFG" data=synthetic train.device=tpu
expect_rc 2
expect_err "hint: one of auto, cpu, cuda"
run "$SLUICE" train "$CFG" data=synthetic train.attention=sdpa
expect_rc 2
expect_err "hint: one of auto, cudnn, flash"
run "$SLUICE" train "$CFG" data=synthetic train.recompute=some
expect_rc 2
expect_err "hint: one of none, selective, full"

case_ "a typo in a key is reported with the nearest known key"
run "$SLUICE" train "$CFG" data=synthetic optim.lrr=1
expect_rc 2
expect_err "optim.lrr"

case_ "seq_len longer than the model's positions"
run "$SLUICE" train "$CFG" data=synthetic train.seq_len=4096
expect_rc 2
expect_err "longer than model.max_position_embeddings"

# ---- checkpoints and resume ----------------------------------------------------------
case_ "uninterrupted 6 steps"
run "$SLUICE" train "$CFG" data=synthetic train.steps=6 "${SMALL[@]}" checkpoint.dir="$T/a" \
    checkpoint.interval=1 checkpoint.keep_last=2 log.file="$T/a.jsonl"
expect_rc 0
expect_eq "$(cd "$T/a" && ls -d step-* | tr '\n' ' ')" "step-00000005 step-00000006 "
expect_no_partials "$T/a"
expect_file "$T/a/step-00000006/model.safetensors"
expect_file "$T/a/step-00000006/optimizer.safetensors"
expect_eq "$(json "$T/a/step-00000006/checkpoint.json" "m['step'], m['data']['consumed_samples'], m['optimizer']['adam_step'], len(m['rng']['state'])")" "6 24 6 4"

case_ "keep_last: a prune that stops midway leaves no step directory with part of its files"
# a file that cannot be removed (immutable, where the file system has the attribute) stops the
# prune as a kill would; the step directory must be gone whole or be there whole
cp -r "$T/a" "$T/k"
if chattr +i "$T/k/step-00000005/model.safetensors" 2>/dev/null; then
    run "$SLUICE" train "$CFG" data=synthetic train.steps=7 "${SMALL[@]}" checkpoint.dir="$T/k" \
        checkpoint.interval=1 checkpoint.keep_last=2
    chattr -i "$T/k/.step-00000005.prune/model.safetensors" "$T/k/step-00000005/model.safetensors" 2>/dev/null || true
    expect_rc 1
    expect_err "cannot remove"
    expect_no_file "$T/k/step-00000005"
    expect_eq "$(cd "$T/k" && ls -d step-* | tr '\n' ' ')" "step-00000006 step-00000007 "
    case_ "the next prune removes what the stopped one left"
    run "$SLUICE" train "$CFG" data=synthetic train.steps=8 "${SMALL[@]}" checkpoint.dir="$T/k" \
        checkpoint.interval=1 checkpoint.keep_last=2
    expect_rc 0
    expect_no_file "$T/k/.step-00000005.prune"
    expect_eq "$(cd "$T/k" && ls -d step-* | tr '\n' ' ')" "step-00000007 step-00000008 "
else
    echo "skip: a prune stopped midway (chattr +i is not supported on $T)"
fi

case_ "3 steps, then resume=auto to 6: bit-identical"
run "$SLUICE" train "$CFG" data=synthetic train.steps=3 "${SMALL[@]}" checkpoint.dir="$T/b" log.file="$T/b.jsonl"
expect_rc 0
run "$SLUICE" train "$CFG" data=synthetic train.steps=6 "${SMALL[@]}" checkpoint.dir="$T/b" log.file="$T/b.jsonl"
expect_rc 0
expect_err "resumed from '$T/b/step-00000003' at step 3 (12 samples consumed)"
cmp -s "$T/a/step-00000006/model.safetensors" "$T/b/step-00000006/model.safetensors" && ok || fail "weights differ after resume"
cmp -s "$T/a/step-00000006/optimizer.safetensors" "$T/b/step-00000006/optimizer.safetensors" && ok || fail "optimizer state differs after resume"
losses() { python3 -c "import json,sys; print([json.loads(l)['loss'] for l in open(sys.argv[1]) if '\"train\"' in l])" "$1"; }
expect_eq "$(losses "$T/a.jsonl")" "$(losses "$T/b.jsonl")"

case_ "a truncated checkpoint is refused with the file named"
mkdir -p "$T/c"; cp -r "$T/b/step-00000006" "$T/c/"
head -c 3000 "$T/b/step-00000006/model.safetensors" > "$T/c/step-00000006/model.safetensors"
run "$SLUICE" train "$CFG" data=synthetic train.steps=8 "${SMALL[@]}" checkpoint.dir="$T/c"
expect_rc 1
expect_err "cannot resume"; expect_err "model.safetensors"; expect_err "truncated"

case_ "a damaged checkpoint.json is refused"
echo '{"format": "sluice-checkpoint", "version": 1' > "$T/c/step-00000006/checkpoint.json"
run "$SLUICE" train "$CFG" data=synthetic train.steps=8 "${SMALL[@]}" checkpoint.dir="$T/c"
expect_rc 1
expect_err "checkpoint.json' is damaged"

case_ "checkpoint.json read strictly: an unknown type, a size out of range"
# (an unknown normalization was read as layernorm, hidden_size 2^40 as 2147483647)
lie() { # DIR KEY VALUE: a copy of b's step 6 with model.KEY set to the JSON VALUE
    rm -rf "$1"; mkdir -p "$1"; cp -r "$T/b/step-00000006" "$1/"
    python3 - "$1/step-00000006/checkpoint.json" "$2" "$3" <<'PY'
import json, sys
p, k, v = sys.argv[1:]
m = json.load(open(p)); m["model"][k] = json.loads(v); json.dump(m, open(p, "w"))
PY
}
for kv in normalization=layernorm2 activation=relu position_embedding_type=alibi; do
    lie "$T/lie" "${kv%=*}" "\"${kv#*=}\""
    run "$SLUICE" export hf --out "$T/lie-hf" "$T/lie"
    expect_rc 1; expect_err "'${kv%=*}' is '${kv#*=}', not one of"
    expect_no_file "$T/lie-hf/model.safetensors"
done
lie "$T/lie" hidden_size 1099511627776
run "$SLUICE" export hf --out "$T/lie-hf" "$T/lie"
expect_rc 1; expect_err "'hidden_size' is 1099511627776, out of range"
lie "$T/lie" vocab_size 4611686018427387904
run "$SLUICE" export hf --out "$T/lie-hf" "$T/lie"
expect_rc 1; expect_err "'vocab_size' is 4611686018427387904, out of range"

case_ "a config that describes more weights than model.safetensors holds: refused before allocating"
lie "$T/lie" vocab_size 2147483000
python3 - "$T/lie/step-00000006/checkpoint.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["model"]["padded_vocab_size"] = 2147483008; json.dump(m, open(sys.argv[1], "w"))
PY
run "$SLUICE" export hf --out "$T/lie-hf" "$T/lie"
expect_rc 1; expect_err "its config describes at least"; expect_err "vocabulary 2147483008"
expect_err "model.safetensors' holds"

case_ "a model that cannot fit this machine's memory is refused before allocating, with the estimate"
run "$SLUICE" train "$CFG" data=synthetic train.steps=1 "${SMALL[@]}" model.num_layers=200000 train.resume=none
expect_rc 2; expect_err "one rank needs"; expect_err "more than"; expect_err "model.num_layers"

case_ "a transposed tensor with the right byte count is refused, with the shape it should have"
rm -rf "$T/tr"; mkdir -p "$T/tr"; cp -r "$T/b/step-00000006" "$T/tr/"
python3 - "$T/tr/step-00000006/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
n, = struct.unpack("<Q", d[:8])
h = json.loads(d[8:8 + n])
name = next(k for k, v in h.items() if k != "__metadata__" and len(v["shape"]) == 2 and v["shape"][0] != v["shape"][1])
h[name]["shape"] = h[name]["shape"][::-1]
s = json.dumps(h, separators=(",", ":")).encode().ljust(n)
open(p, "wb").write(d[:8] + s + d[8 + n:])
print(name)
PY
run "$SLUICE" train "$CFG" data=synthetic train.steps=8 "${SMALL[@]}" checkpoint.dir="$T/tr"
expect_rc 1; expect_err "not F32 of the model's shape ["

case_ "a safetensors shape whose product passes 2^64 is reported as such, not as 'needs 0'"
python3 - "$T/tr/step-00000006/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
n, = struct.unpack("<Q", d[:8])
h = json.loads(d[8:8 + n])
name = next(k for k in h if k != "__metadata__")
h[name]["shape"] = [2 ** 48, 2 ** 48, 2 ** 48, 2 ** 48]
s = json.dumps(h, separators=(",", ":")).encode()
open(p, "wb").write(struct.pack("<Q", len(s)) + s + d[8 + n:])
PY
run "$SLUICE" train "$CFG" data=synthetic train.steps=8 "${SMALL[@]}" checkpoint.dir="$T/tr"
expect_rc 1; expect_err "its shape needs more than 2^64"

case_ "resuming with another model is refused"
run "$SLUICE" train "$CFG" data=synthetic train.steps=8 "${SMALL[@]}" model.hidden_size=128 checkpoint.dir="$T/b"
expect_rc 1
expect_err "holds another model than the config"

# ---- non-finite loss -----------------------------------------------------------------
NAN=(optim.lr=1e30 optim.warmup_steps=0 optim.clip_grad=0)
case_ "a non-finite loss stops the run by default"
run "$SLUICE" train "$CFG" data=synthetic train.steps=4 "${SMALL[@]}" "${NAN[@]}"
expect_rc 1
expect_err "is not finite at step 2: stopping (train.on_nan=stop)"
expect_err "hint:"
case_ "train.on_nan=skip skips such steps and says so"
run "$SLUICE" train "$CFG" data=synthetic train.steps=4 "${SMALL[@]}" "${NAN[@]}" train.on_nan=skip
expect_rc 0
expect_err "at step 2: update skipped (train.on_nan=skip)"
expect_out "| skipped"

# ---- export --------------------------------------------------------------------------
for m in tiny-gpt tiny-llama; do
    case_ "export hf: $m"
    run "$SLUICE" train "$ROOT/configs/models/$m.yaml" data=synthetic train.steps=2 "${SMALL[@]}" checkpoint.dir="$T/x-$m"
    expect_rc 0
    run "$SLUICE" export hf --out "$T/hf-$m" "$T/x-$m"
    expect_rc 0
    expect_file "$T/hf-$m/config.json"; expect_file "$T/hf-$m/model.safetensors"
    run "$PY" "$ORACLE/check_hf.py" "$T/x-$m/step-00000002" "$T/hf-$m"
    expect_rc 0
    expect_out "hf export: 0 mismatches"
    grep -E "^(ok|skip)" "$T/out" | sed "s/^/  [$m] /" | grep -v "^  \[$m\] ok" || true
    TPY=${SLUICE_TORCH_PY:-}
    if [ -n "$TPY" ]; then
        run "$TPY" "$ORACLE/check_hf.py" "$T/x-$m/step-00000002" "$T/hf-$m"
        expect_rc 0
        expect_out "transformers loads"
    fi
done
case_ "export usage errors"
run "$SLUICE" export onnx --out "$T/o" "$T/x-tiny-gpt"
expect_rc 2
expect_err "unknown export format onnx"

case_ "export hf refuses a checkpoint with non-finite weights, and writes nothing"
cp -r "$T/x-tiny-gpt/step-00000002" "$T/nanck"
"$PY" - "$T/nanck/model.safetensors" <<'PY'
import json, struct, sys, numpy as np
p = sys.argv[1]
raw = bytearray(open(p, "rb").read())
(n,) = struct.unpack("<Q", raw[:8])
h = json.loads(raw[8:8 + n])
b = h["final_norm.weight"]["data_offsets"][0]
raw[8 + n + b + 12:8 + n + b + 16] = np.float32("nan").tobytes()
open(p, "wb").write(raw)
PY
run "$SLUICE" export hf --out "$T/hf-nan" "$T/nanck"
expect_rc 1
expect_err "cannot export '$T/nanck': tensor 'final_norm.weight' has 1 non-finite values (the first at element 3)"
expect_err "hint: the run diverged"
expect_no_file "$T/hf-nan"

# ---- optimizer settings that would train to garbage ------------------------------------
for kv in "optim.lr=-1|optim.lr: must be a finite number >= 0, got -1" \
    "optim.beta1=2|optim.beta1: must be in [0, 1), got 2" \
    "optim.beta2=1|optim.beta2: must be in [0, 1), got 1" \
    "optim.weight_decay=-5|optim.weight_decay: must be a finite number >= 0, got -5" \
    "optim.clip_grad=nan|optim.clip_grad: must be a finite number >= 0, got nan" \
    "optim.eps=0|optim.eps: must be a finite number > 0, got 0" \
    "optim.min_lr=-0.1|optim.min_lr: must be a finite number >= 0, got -0.1" \
    "optim.lr=inf|optim.lr: must be a finite number >= 0, got inf"; do
    case_ "${kv%%|*} is refused"
    run "$SLUICE" train "$CFG" data=synthetic train.steps=1 "${SMALL[@]}" "${kv%%|*}"
    expect_rc 2
    expect_err "${kv#*|}"
done
case_ "train.grad_reduce_dtype takes fp32 or bf16 only"
run "$SLUICE" train "$CFG" data=synthetic train.steps=1 "${SMALL[@]}" train.grad_reduce_dtype=fp16
expect_rc 2
expect_err "train.grad_reduce_dtype: unknown value 'fp16'"

finish
