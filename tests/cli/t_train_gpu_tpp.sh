#!/usr/bin/env bash
# Tensor x pipeline x data parallel together on the CUDA trainer, on emulated GPUs
# (build/emu/libsluice-gpu-emu.so, NCCL over MPI, one emulated GPU per rank): DP 2 x TP 2
# x PP 2 with sequence parallel, 8 ranks, tiny-gpt (tied embeddings: the first and the last
# stage each hold the vocab-parallel embedding, summed over the two ends; LayerNorm, biases,
# learned positions), 2 layers (one a stage), 2 micro-batches a step and replica:
#  - against one rank of the GPU path: the loss and gradient norm of 4 steps, the validation
#    loss after step 3 (through the pipeline, vocab-parallel), every tensor's gradient of
#    step 1 (train.dump_grads, gathered from the model-parallel group), the weights after
#    step 3 (model.safetensors of the step-3 checkpoint, gathered likewise);
#  - against the CPU path's same layout: the loss and gradient norm of 4 steps;
#  - tiny-llama (4 layers, untied output layer, GQA, RoPE) at TP 2 x PP 2 x 2 virtual stages
#    (interleaved) with SP and selective recomputation, 4 ranks, against TP 2 with SP alone,
#    2 ranks: bit for bit (a pipeline reorders the micro-batches' work, never the arithmetic
#    of one, as t_train_gpu_pp.sh argues; the gradient norm sums its squares stage by stage,
#    within NORM_EXACT = 1e-6): the losses, the validation loss, every gradient of step 1,
#    model.safetensors after step 3 byte for byte (what the stage boundary's SP rows and the
#    gathers of the model-parallel group must get exactly right);
#  - each stage's arena = --print-config's estimate of it;
#  - ZeRO-3 at DP 2 x TP 2 x PP 2 with SP (the shard of each rank's part over its data-parallel
#    group of 2; the tied embedding summed over data parallel, then the two ends) against the
#    same layout at ZeRO-1 within FP_RTOL: the losses and norms of 4 steps, the validation
#    loss, every gradient of step 1, the weights after step 4; against the CPU path's same
#    layout at ZeRO-3 (bf16 tolerance); its step-3 checkpoint resumed at ZeRO-2, step 4 and
#    the step-4 checkpoint (model and every optimizer shard) bit for bit (ZeRO-2's arithmetic
#    is ZeRO-3's); each stage's parameter and gradient bytes at ZeRO-1, 2 and 3 against the
#    sizes of docs/trainer.md's ZeRO table (from the shapes, cut by the tensor-parallel split
#    and the stages), the optimizer bytes the same at every stage, the arenas against
#    --print-config;
#  - checkpoints: the step-3 checkpoint resumed at the same layout, over the host-staged MPI
#    backend (train.comm=mpi), gives step 4 and the step-4 model.safetensors bit for bit
#    (the optimizer shards, ranges of the full layout from 8 ranks, read back exactly; the
#    MPI backend folds the ranks in rank order, as the emulated NCCL does), and resumed at
#    one rank on the GPU and on the CPU, step 4 = the one-rank run's.
# SKIP where the plugin is not built or mpirun is missing.
#
# Tolerances: those of t_train_gpu_tp.sh, argued there (bf16 partial sums over the tensor-
# parallel group added in another order than one rank's; the tied embedding's two ends
# rounded to bf16 apart, as t_train_gpu_pp.sh says): loss 0.5% (LOSS_RTOL), gradient norm
# 5% (NORM_RTOL), every gradient 5e-2 relative L2 (GRAD_RTOL), the weights 1e-2 (W_RTOL),
# GPT's k bias reported only. The biases after 3 steps: 0.25 (B_RTOL). They start at zero,
# so they are 3 AdamW updates of about lr x sign(gradient) each, and an element whose
# gradient is near zero (the q bias's are 1e-2 of the v bias's) flips its sign with bf16
# rounding and moves by 2 lr: measured 0.1 on layers.1's v bias, whose gradient agrees to
# 7e-3; a bias from a wrong slice or shard is off by about 1. Measured: losses 1.2e-5,
# norms 2.8e-4, gradients 9.3e-3, weights 1.6e-3. Against the CPU path (fp32) the
# tolerances of the first step of t_train_gpu_emu.sh, for every step (measured: losses
# 1.1e-5, norms 7.7e-4). ZeRO-3 against ZeRO-1: FP_RTOL = 1e-5, t_train_gpu_zero.sh's (only
# the order of fp32 sums differs: each rank's two micro-batches then the ranks, or the ranks
# per micro-batch then the micro-batches; the tied embedding over the ends then data
# parallel, or the reverse; a wrong slice or a missing reduction is 1e-2 or more); measured:
# losses, norms, validation loss and the step-4 weights identical, gradients 1.1e-9, the
# tied embedding's moments 5e-9. The test costs 83 s of CPU (user time; 8, 4 and 2 emulated
# ranks), 311 s of wall time on 2 cores beside other builds (load average 20), and ZeRO-2/3
# about 35 s of CPU more (an 8-rank run of 4 steps, one resumed for a step, the CPU path's).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
need_gpu_emu mpi
# one thread per rank: the ranks share the machine's cores
export OMP_NUM_THREADS=1
LOSS_RTOL=0.005
NORM_RTOL=0.05
GRAD_RTOL=0.05
W_RTOL=0.01
B_RTOL=0.25
NORM_EXACT=1e-6
FP_RTOL=1e-5
GPT="$ROOT/configs/models/tiny-gpt.yaml"
LLAMA="$ROOT/configs/models/tiny-llama.yaml"
CFG=$GPT
CMP=("$PY" "$ROOT/tests/oracle/grad_compare.py")
GPU=("${MPIRUN[@]}" -x SLUICE_GPU_LIB -x OMP_NUM_THREADS)
# a vocabulary of 512 (256 rows a tensor-parallel rank), the schedule of 4 steps throughout
# (the resumed runs follow it), the learning rate of t_train_gpu_tp.sh (3e-4, argued there),
# a validation after step 3, a checkpoint at step 3 and at the end
BASE=(data=synthetic model.vocab_size=512 train.seq_len=32 train.micro_batch_size=2
    train.global_batch_size=8 train.steps=4 optim.lr=3e-4 optim.min_lr=3e-5 optim.decay_steps=4
    optim.warmup_steps=2 eval.interval=3 eval.iters=1 checkpoint.interval=3 checkpoint.keep_last=0)
L3=(parallel.tensor=2 parallel.pipeline=2 parallel.sequence=true)

compare() { # A.jsonl B.jsonl FIRST LOSS_RTOL NORM_RTOL [LAST]
    python3 "$ROOT/tests/oracle/compare_train_logs.py" "$@"
}

# val_close A.jsonl B.jsonl RTOL: the validation losses after step 3
val_close() {
    python3 - "$@" <<'PY'
import json, sys
def val(p):
    lines = map(json.loads, open(p))
    return [m["val_loss"] for m in lines if m["type"] == "valid" and m["step"] == 3]
a, b, tol = val(sys.argv[1]), val(sys.argv[2]), float(sys.argv[3])
print(f"  val_loss {a} vs {b}")
sys.exit(0 if len(a) == len(b) == 1 and abs(a[0] - b[0]) <= tol * abs(b[0]) else "differ")
PY
}

# train NAME NP DEVICE ARGS...: a run of $CFG into $T/NAME (-v: its stderr, kept as
# $T/NAME.err)
train() {
    local name=$1 np=$2 dev=$3
    shift 3
    local cmd=("$SLUICE")
    [ "$np" -gt 1 ] && cmd=("${GPU[@]}" -np "$np" "$SLUICE")
    run "${cmd[@]}" -v train "$CFG" "${BASE[@]}" train.device="$dev" checkpoint.dir="$T/$name" \
        log.file="$T/$name.jsonl" "$@"
    cp "$T/err" "$T/$name.err"
}

# resume NAME FROM NP DEVICE ARGS...: FROM's step-3 checkpoint resumed to step 4
resume() {
    local name=$1 from=$2
    shift 2
    mkdir -p "$T/$name" && cp -r "$T/$from/step-00000003" "$T/$name/"
    train "$name" "$@"
    case_ "$name: resumes $from's step-3 checkpoint"
    expect_rc 0
    expect_err "resumed from"
}

# --- the one-rank reference and the layout ---------------------------------------------------
train ref 1 cuda train.dump_grads="$T/ref/g"
case_ "one rank on the emulated GPU: 4 steps"
expect_rc 0
train l3 8 cuda "${L3[@]}" train.dump_grads="$T/l3/g"
case_ "mpirun -np 8: tensor 2 x pipeline 2 x data 2 with sequence parallel on emulated GPUs"
expect_rc 0
expect_err "parallel: tensor 2 x pipeline 2 x data 2, sequence parallel"
expect_err "tensor parallel over 2 ranks with sequence parallel"
expect_err "ZeRO-1 over 2 ranks"
expect_file "$T/l3/step-00000003/optimizer-00007-of-00008.safetensors"

case_ "l3: losses and gradient norms of 4 steps = one rank's (bf16 tolerance)"
compare "$T/l3.jsonl" "$T/ref.jsonl" 1 "$LOSS_RTOL" "$NORM_RTOL" && ok || fail "see above"
case_ "l3: the validation loss after step 3 = one rank's (within $LOSS_RTOL)"
val_close "$T/l3.jsonl" "$T/ref.jsonl" "$LOSS_RTOL" && ok || fail "see above"
case_ "l3: every tensor's gradient of step 1 = one rank's (relative L2 <= $GRAD_RTOL)"
"${CMP[@]}" --rtol "$GRAD_RTOL" "$T/l3/g/grads-step-000001.safetensors" \
    "$T/ref/g/grads-step-000001.safetensors" | tail -3 && ok || fail "see above"
meta="$T/ref/g/grads-step-000001.safetensors"
a="$T/l3/step-00000003/model.safetensors" b="$T/ref/step-00000003/model.safetensors"
case_ "l3: the weights after step 3 = one rank's (relative L2 <= $W_RTOL; biases $B_RTOL)"
"${CMP[@]}" --rtol "$W_RTOL" --exclude .bias --meta "$meta" "$a" "$b" | tail -3 && ok ||
    fail "see above"
"${CMP[@]}" --rtol "$B_RTOL" --exclude "qkv.bias[k]" --meta "$meta" "$a" "$b" | tail -3 && ok ||
    fail "see above"

# arena NAME ARGS...: each stage's arena (the -v line of its first rank in $T/NAME.err) =
# --print-config's estimate of it for the layout ARGS
arena() {
    local name=$1 st alloc est
    shift
    run "$SLUICE" train "$GPT" "${BASE[@]}" train.device=cuda "$@" parallel.data=2 --print-config
    for st in 0 1; do
        if [ $st = 0 ]; then
            alloc=$(sed -n 's/.*GPU memory bytes: //p' "$T/$name.err" | head -1)
        else
            alloc=$(sed -n "s/.*GPU memory bytes of stage $st: //p" "$T/$name.err" | head -1)
        fi
        est=$(awk -v s="stage $st:" 'index($0, s) { getline; sub(/.*bytes: /, ""); print; exit }' \
            "$T/out")
        case_ "$name: stage $st's arena = the estimate of --print-config"
        if [ -n "$alloc" ] && [ "$alloc" = "$est" ]; then
            ok
        else
            fail "allocated '$alloc', estimated '$est'"
        fi
    done
}
arena l3 "${L3[@]}"

# --- the CPU path's same layout ----------------------------------------------------------------
train l3-cpu 8 cpu "${L3[@]}"
case_ "the CPU path at the same layout: 4 steps"
expect_rc 0
case_ "l3: losses and gradient norms of 4 steps = the CPU path's same layout (bf16 tolerance)"
compare "$T/l3.jsonl" "$T/l3-cpu.jsonl" 1 "$LOSS_RTOL" "$NORM_RTOL" && ok || fail "see above"

# --- ZeRO-2 and ZeRO-3 at the same layout -------------------------------------------------------
# zero_bytes NAME Z: each stage's parameter and gradient bytes (the -v lines "GPU memory bytes",
# "... of stage S") against the sizes of docs/trainer.md's ZeRO table: the one-rank dump's
# tensors, those Megatron splits (the vocab-parallel embedding, column-parallel qkv and fc
# with their biases, row-parallel projections) cut by TP, each padded to 64 floats (the
# layout's alignment), in buckets (the tensors before the first layer: the embedding on both
# ends, the positions on the first; each layer; those after the last on the last stage)
# padded to a multiple of 64 x DP; the stages' layers in order (no virtual stages)
zero_bytes() {
    "$PY" - "$T/$1.err" 2 2 2 "$2" "$T/ref/g/grads-step-000001.safetensors" <<'PY'
import json, re, struct, sys
err, W, tp, pp, z, dump = sys.argv[1], *map(int, sys.argv[2:6]), sys.argv[6]
raw = open(dump, "rb").read()
head = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
head.pop("__metadata__", None)
split = re.compile(r"^embed\.weight$|\.qkv\.|\.fc\.|\.(attn|mlp)\.proj\.weight$")
nl = 1 + max(int(m.group(1)) for m in map(lambda n: re.match(r"layers\.(\d+)\.", n), head) if m)
per = nl // pp
pad = lambda n, u: -(-n // u) * u
ok = True
for s in range(pp):
    buckets = {}
    for name, t in head.items():
        n = 1
        for d in t["shape"]:
            n *= d
        m = re.match(r"layers\.(\d+)\.", name)
        if m:
            if int(m.group(1)) // per != s:
                continue
            k = 1 + int(m.group(1))
        elif name.startswith("pos") and s == 0 or name == "embed.weight" and s in (0, pp - 1):
            k = 0
        elif not name.startswith(("pos", "embed")) and s == pp - 1:
            k = nl + 1
        else:
            continue
        buckets[k] = buckets.get(k, 0) + pad(n // tp if split.search(name) else n, 64)
    ln = {k: pad(n, 64 * W) for k, n in buckets.items()}
    layers = [v for k, v in ln.items() if 0 < k <= nl]
    total, maxb, maxl = sum(ln.values()), max(ln.values()), max(layers)
    shard, outer = total // W, ln.get(0, 0) + ln.get(nl + 1, 0)
    want = {1: (2 * total, 2 * total + 4 * total),
            2: (2 * total, 2 * total + 4 * shard + 2 * 4 * maxb),
            3: (2 * shard + 2 * outer + 2 * 2 * maxl,
                2 * outer + 2 * 2 * maxl + 4 * shard + 2 * 4 * maxb)}[z]
    key = "GPU memory bytes: " if s == 0 else f"GPU memory bytes of stage {s}: "
    line = next((l for l in open(err) if key in l), "")
    got = tuple(int(m.group(1)) if m else -1 for m in
                (re.search(n + r" (\d+)", line) for n in ("parameters", "gradients")))
    print(f"  stage {s} at ZeRO-{z}: parameters {got[0]} B, gradients {got[1]} B; expected "
          f"{want[0]} B, {want[1]} B")
    ok = ok and got == want
sys.exit(0 if ok else 1)
PY
}
# optim_bytes NAME: the optimizer bytes of NAME's stages, stage 0 first (the ranks' lines
# come in any order)
optim_bytes() {
    sed -n -e 's/.*GPU memory bytes: .*optimizer \([0-9]*\),.*/0 \1/p' \
        -e 's/.*GPU memory bytes of stage \([0-9]*\): .*optimizer \([0-9]*\),.*/\1 \2/p' \
        "$T/$1.err" | sort -n | tr '\n' ' '
}
train l3-z3 8 cuda "${L3[@]}" optim.zero=3 train.dump_grads="$T/l3-z3/g"
case_ "mpirun -np 8: DP 2 x TP 2 x PP 2 with SP at ZeRO-3"
expect_rc 0
expect_err "ZeRO-3 over 2 ranks"
case_ "l3-z3 = l3 (ZeRO-1) within $FP_RTOL: losses and norms of 4 steps, the validation loss"
compare "$T/l3-z3.jsonl" "$T/l3.jsonl" 1 "$FP_RTOL" "$FP_RTOL" && ok || fail "see above"
val_close "$T/l3-z3.jsonl" "$T/l3.jsonl" "$FP_RTOL" && ok || fail "see above"
case_ "l3-z3 = l3 within $FP_RTOL: every tensor's gradient of step 1"
"${CMP[@]}" --rtol "$FP_RTOL" "$T/l3-z3/g/grads-step-000001.safetensors" \
    "$T/l3/g/grads-step-000001.safetensors" | tail -1 && ok || fail "see above"
case_ "l3-z3 = l3 within $FP_RTOL: the weights after step 4"
"${CMP[@]}" --rtol "$FP_RTOL" --meta "$meta" "$T/l3-z3/step-00000004/model.safetensors" \
    "$T/l3/step-00000004/model.safetensors" | tail -1 && ok || fail "see above"
train l3-cpu-z3 8 cpu "${L3[@]}" optim.zero=3
case_ "the CPU path at the same layout at ZeRO-3"
expect_rc 0
case_ "l3-z3 = the CPU path's l3-cpu-z3: losses and norms of 4 steps (bf16 tolerance)"
compare "$T/l3-z3.jsonl" "$T/l3-cpu-z3.jsonl" 1 "$LOSS_RTOL" "$NORM_RTOL" && ok || fail "see above"
resume l3-z2 l3-z3 8 cuda "${L3[@]}" optim.zero=2
expect_err "ZeRO-2 over 2 ranks"
case_ "l3-z2: step 4 = l3-z3's, bit for bit"
compare "$T/l3-z2.jsonl" "$T/l3-z3.jsonl" 4 0 0 && ok || fail "see above"
case_ "l3-z2: the step-4 checkpoint = l3-z3's, byte for byte (model, 8 optimizer shards)"
n=0
for f in "$T"/l3-z3/step-00000004/*.safetensors; do
    cmp "$f" "$T/l3-z2/step-00000004/${f##*/}" && n=$((n + 1))
done
expect_eq "$n" 9
for z in 1 2 3; do
    name=l3-z$z
    [ $z = 1 ] && name=l3
    case_ "$name: each stage's parameters and gradients as docs/trainer.md's ZeRO-$z sizes"
    run zero_bytes "$name" "$z"
    cat "$T/out"
    expect_rc 0
    case_ "$name: each stage's optimizer bytes = ZeRO-1's (the moments' 1/DP shard)"
    expect_eq "$(optim_bytes "$name")" "$(optim_bytes l3)"
    [ -n "$(optim_bytes l3)" ] && ok || fail "no optimizer bytes"
done
arena l3-z3 "${L3[@]}" optim.zero=3
arena l3-z2 "${L3[@]}" optim.zero=2

# --- tiny-llama: interleaved TP x PP against TP alone, bit for bit --------------------------------
CFG=$LLAMA
LL=(model.num_layers=4 train.steps=3 parallel.tensor=2 parallel.sequence=true)
train llama-tp 2 cuda "${LL[@]}" train.dump_grads="$T/llama-tp/g"
case_ "tiny-llama, mpirun -np 2: TP 2 with SP"
expect_rc 0
train llama-tpp 4 cuda "${LL[@]}" parallel.pipeline=2 parallel.virtual_stages=2 \
    train.recompute=selective train.dump_grads="$T/llama-tpp/g"
case_ "tiny-llama, mpirun -np 4: TP 2 x PP 2 x 2 virtual stages with SP"
expect_rc 0
expect_err "parallel: tensor 2 x pipeline 2 (2 interleaved virtual stages each) x data 1"
case_ "llama-tpp: the losses of 3 steps = TP 2's (bit for bit; norms within $NORM_EXACT)"
compare "$T/llama-tpp.jsonl" "$T/llama-tp.jsonl" 1 0 "$NORM_EXACT" && ok || fail "see above"
case_ "llama-tpp: the validation loss = TP 2's (bit for bit)"
v=$(grep '"valid"' "$T/llama-tpp.jsonl" || true)
expect_eq "$v" "$(grep '"valid"' "$T/llama-tp.jsonl" || true)"
[ -n "$v" ] && ok || fail "no validation line"
case_ "llama-tpp: every gradient of step 1 = TP 2's (bit for bit)"
"${CMP[@]}" --rtol 0 "$T/llama-tpp/g/grads-step-000001.safetensors" \
    "$T/llama-tp/g/grads-step-000001.safetensors" | tail -1 && ok || fail "see above"
case_ "llama-tpp: model.safetensors after step 3 = TP 2's, byte for byte"
cmp "$T/llama-tpp/step-00000003/model.safetensors" "$T/llama-tp/step-00000003/model.safetensors" &&
    ok || fail "the weights differ"
CFG=$GPT

# --- checkpoints -------------------------------------------------------------------------------
resume l3-again l3 8 cuda "${L3[@]}" train.comm=mpi
expect_err "communication: MPI, host-staged"
case_ "the step-3 checkpoint at the same layout over MPI: step 4 = the unstopped run, bit for bit"
compare "$T/l3-again.jsonl" "$T/l3.jsonl" 4 0 0 && ok || fail "see above"
case_ "... and its step-4 model.safetensors, byte for byte"
cmp "$T/l3-again/step-00000004/model.safetensors" "$T/l3/step-00000004/model.safetensors" && ok ||
    fail "the step-4 weights differ"
for dev in cuda cpu; do
    resume "l3-one-$dev" l3 1 "$dev"
    case_ "the 8-rank checkpoint at one rank on $dev: step 4 = the one-rank run's"
    compare "$T/l3-one-$dev.jsonl" "$T/ref.jsonl" 4 "$LOSS_RTOL" "$NORM_RTOL" && ok ||
        fail "see above"
done

finish
