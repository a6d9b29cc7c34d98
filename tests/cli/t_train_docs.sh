#!/usr/bin/env bash
# Document boundaries in packed samples (data.reset_position_ids, data.reset_attention_mask,
# data.eod_mask_loss, as Megatron-LM defines them): the CPU trainer's step-1 logits, loss
# and gradients and 3 AdamW steps against the numpy oracle, which builds Megatron's masks
# from the dumped tokens itself (tests/oracle/model_numpy.py ltor_masks); a token's logits
# do not change when another document of its sample does; the samples and their order stay
# Megatron's; the settings need an end-of-document id.
# sanitizer build: skip (numerical agreement; the CPU path runs under the sanitizers in t_train.sh)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ORACLE="$ROOT/tests/oracle"
MI="$ORACLE/megatron_index.py"

# documents of 2..12 random ids in 1..63, each ending with the end-of-document id 0 (as
# sluice tokenize writes them); b: a copy with the even documents' ids replaced (same
# lengths, so the same samples in the same order)
"$PY" - "$T" <<'PY'
import json, sys, numpy as np
rng = np.random.default_rng(11)
docs = [rng.integers(1, 64, size=int(rng.integers(1, 12))).tolist() + [0] for _ in range(120)]
json.dump(docs, open(sys.argv[1] + "/a.json", "w"))
other = [[int(rng.integers(1, 64)) for _ in d[:-1]] + [0] if i % 2 == 0 else d
         for i, d in enumerate(docs)]
json.dump(other, open(sys.argv[1] + "/b.json", "w"))
PY
: >"$T/tok.model" # a tokenizer file for the manifest (never read: no eval, no export)
for n in a b; do
    "$PY" "$MI" write "$T/$n" "$T/$n.json"
    printf '{"settings": {"tokenizer": "spm:%s", "tokenizer_kind": "spm", "vocab_size": 64, "eod_id": 0}}\n' \
        "$T/tok.model" >"$T/$n.manifest.json"
done

RUN=(train.seq_len=24 train.micro_batch_size=2 train.global_batch_size=4 eval.interval=0
     train.resume=none optim.warmup_steps=2 optim.eps=1e-6 train.threads=1)
ALL=(data.reset_position_ids=true data.reset_attention_mask=true data.eod_mask_loss=true)
ALLPY=(--eod 0 --reset-position-ids --reset-attention-mask --eod-mask-loss)

for m in tiny-gpt tiny-llama; do
    case_ "$m, all three: 3 steps against the numpy oracle"
    run "$SLUICE" train "$ROOT/configs/models/$m.yaml" data.prefix="$T/a" data.cache_dir="$T/c$m" \
        train.steps=3 "${RUN[@]}" "${ALL[@]}" checkpoint.dir="$T/$m/ck" \
        debug.dump_dir="$T/$m/dump" debug.dump_steps=3
    expect_rc 0
    run "$PY" "$ORACLE/check_train.py" --oracle numpy "${ALLPY[@]}" "$T/$m/dump" \
        "$T/$m/ck/step-00000003" 3
    expect_rc 0
    expect_out "oracle numpy: 0 checks failed"
    grep -E "step 1 |params after" "$T/out" | sed "s/^/  [$m] /"
done

case_ "tiny-gpt, reset_attention_mask alone (positions 0..T-1, every loss counted)"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" data.prefix="$T/a" data.cache_dir="$T/c" \
    train.steps=1 "${RUN[@]}" data.reset_attention_mask=true checkpoint.dir="$T/ra/ck" \
    debug.dump_dir="$T/ra/dump" debug.dump_steps=1
expect_rc 0
run "$PY" "$ORACLE/check_train.py" --oracle numpy --eod 0 --reset-attention-mask "$T/ra/dump" \
    "$T/ra/ck/step-00000001" 1
expect_rc 0
expect_out "oracle numpy: 0 checks failed"
case_ "the oracle sees the difference: the same dump against the plain causal model fails"
run "$PY" "$ORACLE/check_train.py" --oracle numpy "$T/ra/dump" "$T/ra/ck/step-00000001" 1
expect_rc 1
expect_out "FAIL step 1 logits"

case_ "the samples and their order are Megatron's with the flags on"
run "$PY" "$MI" check --seq-len 24 --split 969,30,1 --seed 1234 --samples 12,0,0 --cache "$T/ctiny-llama" \
    --dump "$T/tiny-llama/dump" --steps 3 --gbs 4 "$T/a"
expect_rc 0
expect_out "megatron index oracle: 0 mismatches"

# step 1's logits of micro-batch 0 over data a and data b (every even document changed):
# a position whose document is the same in both must have the same logits
logits_of() { # NAME DATA FLAGS...
    local name=$1 data=$2
    shift 2
    run "$SLUICE" train "$ROOT/configs/models/tiny-llama.yaml" data.prefix="$T/$data" \
        data.cache_dir="$T/c$data" train.steps=1 "${RUN[@]}" "$@" checkpoint.dir="$T/$name/ck" \
        debug.dump_dir="$T/$name/dump" debug.dump_steps=1
    expect_rc 0
}
same_docs() { # A B: the positions with their document unchanged keep their logits
    "$PY" - "$T/$1/dump/step-000001.safetensors" "$T/$2/dump/step-000001.safetensors" "$ORACLE" <<'PY'
import sys, numpy as np
sys.path.insert(0, sys.argv[3])
import model_numpy as mn
a, _ = mn.st_load(sys.argv[1]); b, _ = mn.st_load(sys.argv[2])
ta, tb = a["tokens"], b["tokens"]
T = ta.shape[1] - 1
mb = a["logits"].shape[0] // T
la, lb = a["logits"].reshape(mb, T, -1), b["logits"].reshape(mb, T, -1)
same = other = 0
worst = 0.0
for s in range(mb):
    start = 0
    for t in range(T):
        if (ta[s, start:t + 1] == tb[s, start:t + 1]).all() and not (ta[s, :start] == tb[s, :start]).all():
            other += 1
            worst = max(worst, float(np.abs(la[s, t] - lb[s, t]).max()))
        if ta[s, t] == 0:
            start = t + 1
print("positions of unchanged documents after a changed one: %d, max logit difference %.3e" % (other, worst))
sys.exit(0 if other > 0 and worst <= 1e-6 else 1)
PY
}
case_ "reset_attention_mask: a document's logits do not depend on the other documents"
logits_of iso_a a data.reset_attention_mask=true data.reset_position_ids=true
logits_of iso_b b data.reset_attention_mask=true data.reset_position_ids=true
run same_docs iso_a iso_b
expect_rc 0
echo "  $(cat "$T/out")"
case_ "without it they do (the check can fail)"
logits_of causal_a a
logits_of causal_b b
run same_docs causal_a causal_b
expect_rc 1

if have_mpi; then
    case_ "tensor x pipeline parallel (2 x 2, sequence parallel): the losses and norms of one rank"
    run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" data.prefix="$T/a" \
        data.cache_dir="$T/ctiny-gpt" train.steps=3 "${RUN[@]}" "${ALL[@]}" log.file="$T/one.jsonl"
    expect_rc 0
    run "${MPIRUN[@]}" -np 4 "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" \
        data.prefix="$T/a" data.cache_dir="$T/ctiny-gpt" train.steps=3 "${RUN[@]}" "${ALL[@]}" \
        parallel.tensor=2 parallel.sequence=true parallel.pipeline=2 log.file="$T/tpp.jsonl"
    expect_rc 0
    run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/tpp.jsonl" "$T/one.jsonl" 1 1e-5 1e-5
    expect_rc 0
else
    echo "skip: tensor x pipeline parallel (mpirun not found)"
fi

case_ "data=synthetic has no documents"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" data.prefix=synthetic train.steps=1 "${RUN[@]}" \
    data.eod_mask_loss=true
expect_rc 2
expect_err "data.eod_mask_loss: data=synthetic has no documents"

case_ "data without an end-of-document id"
"$PY" "$MI" write "$T/noeod" "$T/a.json"
run "$SLUICE" train "$ROOT/configs/models/tiny-gpt.yaml" data.prefix="$T/noeod" model.vocab_size=64 \
    train.steps=1 "${RUN[@]}" data.reset_attention_mask=true
expect_rc 2
expect_err "data.reset_attention_mask needs the data's end-of-document id"

finish
