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
expect_eq "$(ls "$T/a" | tr '\n' ' ')" "step-00000005 step-00000006 "
expect_no_partials "$T/a"
expect_file "$T/a/step-00000006/model.safetensors"
expect_file "$T/a/step-00000006/optimizer.safetensors"
expect_eq "$(json "$T/a/step-00000006/checkpoint.json" "m['step'], m['data']['consumed_samples'], m['optimizer']['adam_step'], len(m['rng']['state'])")" "6 24 6 4"

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

finish
