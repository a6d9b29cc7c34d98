# Shared by t_train_tp.sh and t_train_pp.sh: a reference run on one rank and the check that a
# model-parallel layout of the same run agrees with it. Sourced after lib.sh.
#
# Tolerance: 1e-5, relative (L2 per tensor for gradients and parameters, per step for the
# loss). A split run does the same fp32 arithmetic as one rank except for the order of some
# sums: a row-parallel product's partial sums are added by the all-reduce (or reduce-scatter)
# instead of inside the GEMM, the vocab-parallel log-sum-exp adds per-rank pieces, and data
# parallel adds per-rank gradients. Each reordering changes a result by a few ulp (fp32 ulp
# 2^-23 = 1.2e-7); measured worst 6e-7 over every tensor of tiny-gpt and tiny-llama, after 5
# AdamW steps too (the updates m / sqrt(v) are normalised and do not amplify it). A wrong
# shard, a missing or doubled reduction or a wrong schedule gives errors of 1e-2 or more
# (each is shown by a failing comparison below). Pipeline parallel alone reorders nothing:
# its gradients are bit-identical to one rank's (tied embeddings aside, whose two copies'
# gradients are summed across the pipeline's ends). The parameters' comparison reports but
# does not fail on the k bias of GPT's qkv: AdamW turns its gradient, zero in exact
# arithmetic, into noise-directed steps that cannot change the loss (grad_compare.py).
CMP=("$PY" "$ROOT/tests/oracle/grad_compare.py")
PREFIX="$FIX/tinyshakespeare/tinyshakespeare_text_document"
PCOMMON=(data.prefix="$PREFIX" data.cache_dir="$T/cache" train.seq_len=32 train.steps=5
         eval.interval=0 train.global_batch_size=8 train.threads=1 train.device=cpu)
RTOL=1e-5

# reference MODEL: one rank, 5 steps, micro-batch 2 (4 accumulation steps)
reference() {
    local model=$1
    run "$SLUICE" train "$ROOT/configs/models/tiny-$model.yaml" "${PCOMMON[@]}" \
        train.micro_batch_size=2 train.dump_grads="$T/$model-ref" log.file="$T/$model-ref.jsonl" \
        checkpoint.dir="$T/$model-ref-ck"
    case_ "$model: the single-rank reference run"
    expect_rc 0
}

# same_losses A.jsonl B.jsonl: every step's loss within RTOL
same_losses() {
    "$PY" - "$1" "$2" "$RTOL" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l and '"step"' in l]
b = [json.loads(l) for l in open(sys.argv[2]) if '"loss"' in l and '"step"' in l]
a = [r["loss"] for r in a if r.get("type") == "train"]
b = [r["loss"] for r in b if r.get("type") == "train"]
assert len(a) == len(b) == 5, (len(a), len(b))
for i, (x, y) in enumerate(zip(a, b)):
    print(f"  step {i + 1}: loss {x:.9g} vs {y:.9g}")
    assert abs(x - y) <= float(sys.argv[3]) * abs(y), (i + 1, x, y)
PY
}

# layout MODEL NAME NP MICRO KEY=VALUE...: the run under mpirun -np NP, then its loss, its
# first step's gradient (every tensor, gathered) and its parameters and AdamW moments after
# 5 steps against the reference
layout() {
    local model=$1 name=$2 np=$3 micro=$4
    shift 4
    run "${MPIRUN[@]}" -np "$np" "$SLUICE" train "$ROOT/configs/models/tiny-$model.yaml" \
        "${PCOMMON[@]}" train.micro_batch_size="$micro" "$@" train.dump_grads="$T/$model-$name" \
        log.file="$T/$model-$name.jsonl" checkpoint.dir="$T/$model-$name-ck"
    case_ "$model $name: trains on $np ranks"
    expect_rc 0
    expect_err "parallel: tensor"
    cp "$T/err" "$T/$model-$name.err"
    case_ "$model $name: rank 0's activation memory = the estimate printed before step 1 (within 5%)"
    local ratio
    ratio=$(sed -n 's/.*allocated activations .* (\([0-9.]*\) of the estimate).*/\1/p' "$T/err")
    if [ -n "$ratio" ] && "$PY" -c "import sys; sys.exit(not 0.95 <= float('$ratio') <= 1.05)"; then
        ok
    else
        fail "allocated / estimated activations: '$ratio'"
    fi
    case_ "$model $name: the loss of every step = one rank's (rtol $RTOL)"
    run same_losses "$T/$model-$name.jsonl" "$T/$model-ref.jsonl"
    expect_rc 0
    case_ "$model $name: every parameter's gradient = one rank's (rtol $RTOL)"
    run "${CMP[@]}" --rtol "$RTOL" "$T/$model-$name/grads-step-000001.safetensors" \
        "$T/$model-ref/grads-step-000001.safetensors"
    expect_rc 0
    case_ "$model $name: parameters and AdamW moments after 5 steps = one rank's (rtol $RTOL)"
    local ck=step-00000005
    local meta=(--meta "$T/$model-ref/grads-step-000001.safetensors" --exclude "qkv.bias[k]")
    run "${CMP[@]}" --rtol "$RTOL" "${meta[@]}" "$T/$model-$name-ck/$ck/model.safetensors" \
        "$T/$model-ref-ck/$ck/model.safetensors"
    expect_rc 0
    run "${CMP[@]}" --rtol "$RTOL" "${meta[@]}" "$T/$model-$name-ck/$ck/optimizer.safetensors" \
        "$T/$model-ref-ck/$ck/optimizer.safetensors"
    expect_rc 0
}
