#!/usr/bin/env bash
# ZeRO-2 and ZeRO-3 of the CUDA trainer (optim.zero=2|3, train/gpu_zero.c) on emulated GPUs
# (build/emu/libsluice-gpu-emu.so, NCCL over MPI): tiny-llama with 3 layers (so that ZeRO-3's
# two layer slots cannot hold every layer and the backward gathers again), vocabulary 512,
# seq 32, micro-batch 2, 5 steps, global batch 8:
#  - DP=4 (one micro-batch per step): ZeRO-2 and ZeRO-3 (the latter with train.recompute=
#    full, whose forwards inside the backward use the backward's gather) bit-identical to
#    ZeRO-1: every step's loss and gradient norm, every tensor's gradient of step 1
#    (train.dump_grads), the weights and the optimizer shards of the step-5 checkpoint;
#  - DP=2 (two micro-batches): ZeRO-3 bit-identical to ZeRO-2 (the same reduction order);
#    both against ZeRO-1 within FP_RTOL;
#  - every layout against one rank with four micro-batches, within FP_RTOL;
#  - a ZeRO-3 checkpoint (DP=2, step 3) resumed at ZeRO-1 on one rank, and one rank's resumed
#    at ZeRO-3 on DP=2, within FP_RTOL; a DP=4 ZeRO-3 checkpoint at ZeRO-1 bit for bit;
#  - tiny-gpt (tied embeddings) with train.grad_reduce_dtype=bf16: ZeRO-3 bit-identical to
#    ZeRO-1 (DP=2, one micro-batch a step, 3 steps);
#  - the memory per category of the "GPU memory per rank" line against the sizes of
#    docs/trainer.md ("GPU ZeRO stages"), from the tensor shapes of the gradient dump.
#  - with model parallel on 4 ranks (below): DP 2 x TP 2 + SP at ZeRO-2/3 against ZeRO-1 bit
#    for bit, DP 2 x PP 2 interleaved at ZeRO-3 against ZeRO-1 within FP_RTOL, each against
#    the CPU path's same layout, each stage's arena against --print-config, resumes.
# SKIP where the plugin is not built, or built without NCCL (no MPI or nccl.h).
#
# FP_RTOL = 1e-5, relative (per step for the loss and gradient norm, L2 per tensor for the
# gradients and weights): the layouts differ only in the order of fp32 sums of the same bf16
# micro-batch gradients: one rank sums its micro-batches, ZeRO-1 sums each rank's micro-
# batches then the ranks, ZeRO-2/3 the ranks per micro-batch then the micro-batches. Each
# order changes a sum by a few fp32 ulp (2^-23 = 1.2e-7); the gradient norm and the clip
# factor follow, and AdamW's normalised updates do not amplify it over 5 steps. A weight
# whose bf16 rounding flips moves by 2^-8 relative, which a tensor's L2 error dilutes. A
# missing or doubled reduction, a wrong slice or a stale gathered layer gives 1e-2 or more.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu mpi
FP_RTOL=1e-5
CMP=("$PY" "$ROOT/tests/oracle/grad_compare.py")
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
# 5 steps, the rate warmed up in one so that the weights move; checkpoints at 3 and 5
COMMON=(data=synthetic model.vocab_size=512 model.num_layers=3 train.seq_len=32
        train.micro_batch_size=2 train.global_batch_size=8 train.steps=5 optim.warmup_steps=1
        optim.decay_steps=5 eval.interval=0 checkpoint.interval=3 checkpoint.keep_last=0
        train.device=cuda)
CK5=step-00000005

# train NAME NP KEY=VALUE...: 5 steps on NP ranks into $T/NAME.jsonl, $T/NAME-g, $T/NAME-ck
train() {
    local name=$1 np=$2
    shift 2
    local pre=()
    [ "$np" -gt 1 ] && pre=("${MPIRUN[@]}" -x SLUICE_GPU_LIB -np "$np")
    run "${pre[@]}" "$SLUICE" -v train "$LLAMA" "${COMMON[@]}" "$@" log.file="$T/$name.jsonl" \
        train.dump_grads="$T/$name-g" checkpoint.dir="$T/$name-ck"
    cp "$T/err" "$T/$name.err"
}


# same LOG A B, same_grads A B, same_ckpt A B: bit for bit (the losses and norms of every
# step, the step-1 gradient dump, the step-5 weights and every optimizer shard)
same_log() { python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/$1.jsonl" "$T/$2.jsonl" 1 0 0; }
same_grads() { cmp "$T/$1-g/grads-step-000001.safetensors" "$T/$2-g/grads-step-000001.safetensors"; }
same_ckpt() {
    local f ok=0
    for f in "$T/$2-ck/$CK5"/model.safetensors "$T/$2-ck/$CK5"/optimizer-*.safetensors; do
        cmp "$f" "$T/$1-ck/$CK5/${f##*/}" || ok=1
    done
    return $ok
}
# close A B: within FP_RTOL
close_log() {
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/$1.jsonl" "$T/$2.jsonl" \
        "${3:-1}" "$FP_RTOL" "$FP_RTOL"
}
close_grads() {
    "${CMP[@]}" --rtol "$FP_RTOL" "$T/$1-g/grads-step-000001.safetensors" \
        "$T/$2-g/grads-step-000001.safetensors"
}
close_weights() {
    "${CMP[@]}" --rtol "$FP_RTOL" --meta "$T/one-g/grads-step-000001.safetensors" \
        "$T/$1-ck/$CK5/model.safetensors" "$T/$2-ck/$CK5/model.safetensors"
}

# memory NAME NP STAGE: the parameters' and gradients' bytes allocated (the -v line "GPU
# memory bytes") against the sizes of the stage (docs/trainer.md), computed from the shapes:
# buckets (the tensors before the first layer, each layer, those after the last) padded to a
# multiple of 64 x NP; and the stage named in the memory line
memory() {
    "$PY" - "$T/$1.err" "$2" "$3" "$T/one-g/grads-step-000001.safetensors" <<'PY'
import json, re, struct, sys
err, W, z, dump = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
raw = open(dump, "rb").read()
head = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
buckets = {}
for name, t in head.items():
    if name == "__metadata__":
        continue
    n = 1
    for d in t["shape"]:
        n *= d
    m = re.match(r"layers\.(\d+)\.", name)
    k = 1 + int(m.group(1)) if m else (0 if name.startswith(("embed", "pos")) else 10**6)
    buckets[k] = buckets.get(k, 0) + n
unit = 64 * W
ln = {k: -(-n // unit) * unit for k, n in buckets.items()}
layers = [v for k, v in ln.items() if 0 < k < 10**6]
total, shard, maxb, maxl = sum(ln.values()), sum(ln.values()) // W, max(ln.values()), max(layers)
outer = ln[0] + ln[10**6]
want = {1: (2 * total, 2 * total + 4 * total),
        2: (2 * total, 2 * total + 4 * shard + 2 * 4 * maxb),
        3: (2 * shard + 2 * outer + 2 * 2 * maxl, 2 * outer + 2 * 2 * maxl + 4 * shard + 2 * 4 * maxb)}[z]
line = next(l for l in open(err) if "GPU memory per rank: " in l)
stage = re.search(r"parameters \S+ \S+ \(ZeRO-(\d)", line)
exact = next(l for l in open(err) if "GPU memory bytes: " in l)
got = tuple(int(re.search(name + r" (\d+)", exact).group(1)) for name in ("parameters", "gradients"))
print(f"  ZeRO-{z} at DP={W}: parameters {got[0]} B, gradients {got[1]} B; expected "
      f"{want[0]} B, {want[1]} B; the line names ZeRO-{stage.group(1) if stage else '?'}")
sys.exit(0 if got == want and stage and int(stage.group(1)) == z else 1)
PY
}

# --- the runs ---------------------------------------------------------------------------
train one 1
case_ "one rank, four micro-batches (ZeRO-1)"
expect_rc 0
if grep -q "this build has no NCCL" "$T/err"; then
    echo "  skip the rest: the emulated plugin was built without NCCL (no MPI or nccl.h)"
    finish
    exit 0
fi
for np in 4 2; do
    for z in 1 2 3; do
        extra=()
        [ "$np" = 4 ] && [ "$z" = 3 ] && extra=(train.recompute=full)
        train "d$np-z$z" "$np" optim.zero=$z "${extra[@]}"
        case_ "DP=$np ZeRO-$z: trains"
        expect_rc 0
        expect_err "ZeRO-$z over $np ranks"
        expect_file "$T/d$np-z$z-ck/$CK5/optimizer-0000$((np - 1))-of-0000$np.safetensors"
        case_ "DP=$np ZeRO-$z: parameters and gradients allocated as the stage says"
        run memory "d$np-z$z" "$np" "$z"
        expect_rc 0
    done
done

# --- bit for bit where the order of arithmetic is the same -----------------------------
for pair in "d4-z2 d4-z1" "d4-z3 d4-z1" "d2-z3 d2-z2"; do
    set -- $pair
    case_ "$1 = $2 bit for bit: losses and gradient norms of every step"
    run same_log "$1" "$2"
    expect_rc 0
    case_ "$1 = $2 bit for bit: every tensor's gradient of step 1"
    run same_grads "$1" "$2"
    expect_rc 0
    case_ "$1 = $2 bit for bit: the weights and optimizer shards after 5 steps"
    run same_ckpt "$1" "$2"
    expect_rc 0
done

# --- tiny-gpt (tied embeddings: the outer bucket 0 serves both ends; LayerNorm, biases,
# learned positions) with train.grad_reduce_dtype=bf16 (the bucket reduced in bf16 and the
# slice widened): ZeRO-3 = ZeRO-1 bit for bit at one micro-batch a step (3 steps, DP=2)
GPT="$ROOT/configs/models/tiny-gpt.yaml"
for z in 1 3; do
    run "${MPIRUN[@]}" -x SLUICE_GPU_LIB -np 2 "$SLUICE" train "$GPT" "${COMMON[@]}" \
        train.global_batch_size=4 train.steps=3 train.grad_reduce_dtype=bf16 optim.zero=$z \
        log.file="$T/gpt-z$z.jsonl" checkpoint.dir="$T/gpt-z$z-ck"
    case_ "tiny-gpt, train.grad_reduce_dtype=bf16 at ZeRO-$z, DP=2"
    expect_rc 0
    expect_err "reduced in bf16"
done
case_ "tiny-gpt, bf16 reduction: ZeRO-3 = ZeRO-1 bit for bit (losses, norms, step-3 weights)"
run same_log gpt-z3 gpt-z1
expect_rc 0
run cmp "$T/gpt-z3-ck/step-00000003/model.safetensors" "$T/gpt-z1-ck/step-00000003/model.safetensors"
expect_rc 0

# --- within FP_RTOL where the order of the fp32 sums differs ----------------------------
for pair in "d2-z2 d2-z1" "d2-z3 d2-z1" "d2-z3 one" "d4-z3 one" "d2-z2 one" "d4-z2 one"; do
    set -- $pair
    case_ "$1 = $2 within $FP_RTOL: losses and gradient norms"
    run close_log "$1" "$2"
    expect_rc 0
    case_ "$1 = $2 within $FP_RTOL: every tensor's gradient of step 1"
    run close_grads "$1" "$2"
    expect_rc 0
    case_ "$1 = $2 within $FP_RTOL: the weights after 5 steps"
    run close_weights "$1" "$2"
    expect_rc 0
done

# --- resume across stages and layouts: the files are laid out by the full model ----------
# resume SRC NAME NP KEY=VALUE...: SRC's step-3 checkpoint, steps 4 and 5 on NP ranks
resume() {
    local src=$1 name=$2 np=$3
    shift 3
    mkdir -p "$T/$name-ck" && cp -r "$T/$src-ck/step-00000003" "$T/$name-ck/"
    local pre=()
    [ "$np" -gt 1 ] && pre=("${MPIRUN[@]}" -x SLUICE_GPU_LIB -np "$np")
    run "${pre[@]}" "$SLUICE" train "$LLAMA" "${COMMON[@]}" "$@" log.file="$T/$name.jsonl" \
        checkpoint.dir="$T/$name-ck"
}
resume d2-z3 r-one 1
case_ "a ZeRO-3 checkpoint (DP=2) resumes at ZeRO-1 on one rank"
expect_rc 0
expect_err "resumed from"
case_ "  its steps 4 and 5 and weights = one rank's run within $FP_RTOL"
run close_log r-one one 4
expect_rc 0
run close_weights r-one one
expect_rc 0
resume one r-z3 2 optim.zero=3
case_ "one rank's ZeRO-1 checkpoint resumes at ZeRO-3 on DP=2"
expect_rc 0
expect_err "ZeRO-3 over 2 ranks"
case_ "  its steps 4 and 5 and weights = the DP=2 ZeRO-3 run within $FP_RTOL"
run close_log r-z3 d2-z3 4
expect_rc 0
run close_weights r-z3 d2-z3
expect_rc 0
resume d4-z3 r-z1 4 optim.zero=1
case_ "a ZeRO-3 checkpoint (DP=4) resumes at ZeRO-1 on DP=4 bit for bit"
expect_rc 0
run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/r-z1.jsonl" "$T/d4-z1.jsonl" 4 0 0
expect_rc 0
run same_ckpt r-z1 d4-z1
expect_rc 0

# --- with tensor or pipeline parallel: 4 ranks, data parallel 2 x model parallel 2 ----------
# The shard is of the rank's part of the model, reduce-scattered and gathered over its
# data-parallel group only. TP 2 + SP: tiny-llama as above at one micro-batch a step (global
# batch 4), ZeRO-3 bit-identical to ZeRO-1 (the same order of arithmetic). PP 2 x 2 virtual
# stages (interleaved): tiny-gpt with 4 layers, two micro-batches a step; at ZeRO-3 its tied
# embedding's gradient is summed over data parallel then over the two ends, at ZeRO-1 over
# the ends then data parallel, and the micro-batches as in the DP=2 runs above: within
# FP_RTOL. Each against the CPU path's same layout and stage within the bf16-against-fp32
# tolerances of t_train_gpu_emu.sh (loss 0.5%, gradient norm 5%). ZeRO-2: the ZeRO-3
# checkpoints of step 3 resumed at ZeRO-2, steps 4 and 5 and the step-5 checkpoint bit-
# identical to ZeRO-1 (TP) and to ZeRO-3 (PP: ZeRO-2's arithmetic is ZeRO-3's). Each run's
# arena, every stage's, against --print-config's estimate.
GPT4=("$ROOT/configs/models/tiny-gpt.yaml" model.num_layers=4)
TP2=("$LLAMA" train.global_batch_size=4 parallel.tensor=2 parallel.sequence=true)
PP2=("${GPT4[@]}" parallel.pipeline=2 parallel.virtual_stages=2)
# mp NAME DEVICE CONFIG KEY=VALUE...: 5 steps on 4 ranks (the step-1 gradient dumped on cuda)
mp() {
    local name=$1 dev=$2 dump=()
    shift 2
    [ "$dev" = cuda ] && dump=(train.dump_grads="$T/$name-g")
    run "${MPIRUN[@]}" -x SLUICE_GPU_LIB -np 4 "$SLUICE" -v train "$1" "${COMMON[@]}" "${@:2}" \
        train.device="$dev" log.file="$T/$name.jsonl" checkpoint.dir="$T/$name-ck" "${dump[@]}"
    cp "$T/err" "$T/$name.err"
}
# arena NAME STAGES CONFIG KEY=VALUE...: each stage's arena (the -v line "GPU memory bytes"
# of its first rank) = the estimate --print-config prints for it (its bytes line)
arena() {
    local name=$1 stages=$2 st alloc est
    shift 2
    run "$SLUICE" train "$1" "${COMMON[@]}" "${@:2}" parallel.data=2 --print-config
    for ((st = 0; st < stages; st++)); do
        if [ "$st" = 0 ]; then
            alloc=$(sed -n 's/.*GPU memory bytes: //p' "$T/$name.err" | head -1)
        else
            alloc=$(sed -n "s/.*GPU memory bytes of stage $st: //p" "$T/$name.err" | head -1)
        fi
        est=$(sed -n 's/.*#     bytes: //p' "$T/out" | sed -n "$((st + 1))p")
        case_ "$name: stage $st's arena = the estimate of --print-config ($est)"
        if [ -n "$alloc" ] && [ "$alloc" = "$est" ]; then
            ok
        else
            fail "allocated '$alloc', estimated '$est'"
        fi
    done
}
for l in "tp 1" "pp 2"; do
    set -- $l
    cfg=("${TP2[@]}")
    [ "$1" = pp ] && cfg=("${PP2[@]}")
    for z in 1 3; do
        mp "$1-z$z" cuda "${cfg[@]}" optim.zero=$z
        case_ "$1-z$z: DP 2 x ${1^^} 2 at ZeRO-$z trains"
        expect_rc 0
        expect_err "ZeRO-$z over 2 ranks"
        expect_file "$T/$1-z$z-ck/$CK5/optimizer-00003-of-00004.safetensors"
        arena "$1-z$z" "$2" "${cfg[@]}" optim.zero=$z
    done
    mp "$1-cpu" cpu "${cfg[@]}" optim.zero=3
    case_ "$1-cpu: the same layout at ZeRO-3 on the CPU path"
    expect_rc 0
    case_ "$1-z3 = the CPU path's $1-cpu (loss 0.5%, gradient norm 5%)"
    run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/$1-z3.jsonl" "$T/$1-cpu.jsonl" 1 \
        0.005 0.05
    expect_rc 0
    # ZeRO-2: the ZeRO-3 checkpoint of step 3, steps 4 and 5
    mkdir -p "$T/$1-z2-ck" && cp -r "$T/$1-z3-ck/step-00000003" "$T/$1-z2-ck/"
    mp "$1-z2" cuda "${cfg[@]}" optim.zero=2
    case_ "$1-z2: $1-z3's step-3 checkpoint resumed at ZeRO-2"
    expect_rc 0
    expect_err "resumed from"
    expect_err "ZeRO-2 over 2 ranks"
    arena "$1-z2" "$2" "${cfg[@]}" optim.zero=2
done
for pair in "tp-z3 tp-z1" "tp-z2 tp-z1" "pp-z2 pp-z3"; do
    set -- $pair
    case_ "$1 = $2 bit for bit: losses and gradient norms of every step"
    run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/$1.jsonl" "$T/$2.jsonl" \
        "$([ "$1" = tp-z3 ] && echo 1 || echo 4)" 0 0
    expect_rc 0
    case_ "$1 = $2 bit for bit: the weights and optimizer shards after 5 steps"
    run same_ckpt "$1" "$2"
    expect_rc 0
done
case_ "tp-z3 = tp-z1 bit for bit: every tensor's gradient of step 1"
run same_grads tp-z3 tp-z1
expect_rc 0
case_ "pp-z3 = pp-z1 within $FP_RTOL: losses and norms, step-1 gradients, step-5 weights"
run python3 "$ROOT/tests/oracle/compare_train_logs.py" "$T/pp-z3.jsonl" "$T/pp-z1.jsonl" 1 \
    "$FP_RTOL" "$FP_RTOL"
expect_rc 0
run "${CMP[@]}" --rtol "$FP_RTOL" "$T/pp-z3-g/grads-step-000001.safetensors" \
    "$T/pp-z1-g/grads-step-000001.safetensors"
expect_rc 0
run "${CMP[@]}" --rtol "$FP_RTOL" --meta "$T/pp-z1-g/grads-step-000001.safetensors" \
    "$T/pp-z3-ck/$CK5/model.safetensors" "$T/pp-z1-ck/$CK5/model.safetensors"
expect_rc 0

finish
