#!/usr/bin/env bash
# GPU trainer throughput and MFU (docs/benchmarks.md, "Training on GPU"):
#   1. GPT-2 124M, seq 1024, bf16, one GPU: sluice vs llm.c's train_gpt2cu at the same batch
#      (tokens/s, and MFU by the formula of docs/trainer.md for both);
#   2. gpt3-1.3b and llama3-8b (layers reduced to fit one GPU): MFU;
#   3. a per-step profile of the GPT-2 run: GEMM, attention, other kernels, idle (Nsight
#      Systems when nsys is installed, else Nsight Compute: ncu times every kernel of a run of
#      3 steps and of 2, and their difference is one step's kernels).
# Usage: bench/train_gpu.sh [SLUICE] ; environment:
#   SECTIONS     which parts run (default "gpt2 large profile")
#   LLMC_DIR     a prepared llm.c directory with train_gpt2cu built (below); without it the
#                llm.c row says "llm.c: not comparable (reason)" and the rest runs. Nothing is
#                downloaded: the GPU machines have no network.
#   LLMC_CUDNN   1: LLMC_DIR's train_gpt2cu was built with cuDNN attention (for the label)
#   B            GPT-2 micro-batch (default 16), STEPS (default 40; the first 10 are warm-up)
#   PEAK_TFLOPS  the GPU's dense bf16 peak (default 989: H100 SXM)
#   LAYERS_1B3, LAYERS_8B  layers kept of gpt3-1.3b (default 24, all) and llama3-8b (default 8)
#   KEEP         a directory that receives the runs' logs (llm.c's output, the trainer's
#                .jsonl and stderr, the profile's kernel tables); by default they are removed
#
# Preparing LLMC_DIR, on a machine with network and the CUDA toolkit of the GPU machine, in a
# scratch directory outside this repository (never committed here). `make gpu-bundle
# LLMC_SRC=/scratch/llm.c CUDNN_FRONTEND=/scratch/cudnn-frontend` does these steps
# (scripts/gpu-check.sh, build_llmc) in a scratch copy of LLMC_SRC and carries the result:
#   git clone https://github.com/karpathy/llm.c /scratch/llm.c
#   git clone https://github.com/NVIDIA/cudnn-frontend /scratch/cudnn-frontend  # header-only
#   cd /scratch/llm.c
#   # llm.c's Makefile stops unless cudnn-frontend/include is in its folder or in $HOME
#   # (CUDNN_FRONTEND_PATH alone does not pass that test)
#   ln -s /scratch/cudnn-frontend cudnn-frontend
#   # CUDA 13 removed cudaMemAdvise(ptr, bytes, advice, int device): the last argument is now a
#   # struct cudaMemLocation. Patch each call that `grep -rn cudaMemAdvise llmc *.cu` lists:
#   # cudaCpuDeviceId -> (cudaMemLocation){cudaMemLocationTypeHost, 0}, a device id d ->
#   # (cudaMemLocation){cudaMemLocationTypeDevice, d}. CUDA 12 needs no patch. At llm.c
#   # f1e2ace that is one call, in llmc/cuda_utils.cuh:
#   sed -i 's/cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdviseSetPreferredLocation, (cudaMemLocation){cudaMemLocationTypeHost, 0})/' llmc/cuda_utils.cuh
#   # Hopper only, cuDNN attention, no NVML (llm.c's GPU utilisation printout reads clocks
#   # and power through it when nvml.h is found): llmc/mfu.h's `#if __has_include(<nvml.h>)`
#   # -> `#if 0`, and NVCC_LDFLAGS given whole so that llm.c's `+= -lnvidia-ml` is dropped.
#   # cudnn-frontend's current main also needs -lnvrtc and -lcuda (the driver's; the CUDA
#   # toolkit's stubs/ folder has a libcuda.so to link against). No MPI, no NCCL: one GPU.
#   sed -i 's/^#if __has_include(<nvml.h>)/#if 0/' llmc/mfu.h
#   make train_gpt2cu USE_CUDNN=1 GPU_COMPUTE_CAPABILITY=90 NO_MULTI_GPU=1 NO_USE_MPI=1 \
#       NVCC_LDFLAGS="-lcublas -lcublasLt -lcudnn -lnvrtc -L/usr/local/cuda/lib64/stubs -lcuda"
#   ldd train_gpt2cu | grep -c nvidia-ml   # 0
#   # (USE_CUDNN=0 builds llm.c's own attention; then leave LLMC_CUDNN unset)
# then `LLMC_DIR=/scratch/llm.c scripts/gpu-check.sh --prepare` carries train_gpt2cu to the GPU
# machine (.gpucheck/llmc), or copy /scratch/llm.c there and run LLMC_DIR=/path/llm.c
# LLMC_CUDNN=1 here.
# llm.c's run uses random init (-e d12) on synthetic tokens, so no weights or data are needed.
set -uo pipefail
sluice=$(realpath "${1:-build/sluice}")
root=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-16}
STEPS=${STEPS:-40}
PEAK=${PEAK_TFLOPS:-989}
SECTIONS=" ${SECTIONS:-gpt2 large profile} "
want() { [[ $SECTIONS == *" $1 "* ]]; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-gpu-XXXXXX")
keep() { [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$work"/*.jsonl "$work"/*.err "$work"/*.out "$work"/*.csv "$KEEP"/ 2>/dev/null; rm -rf "$work"; }
trap keep EXIT

# llm.c is compared only when a prepared directory is given; say why not, never abort
llmc_why=""
if [ -z "${LLMC_DIR:-}" ]; then
    llmc_why="LLMC_DIR is not set; prepare llm.c as the header of bench/train_gpu.sh says"
elif [ ! -d "$LLMC_DIR" ]; then
    llmc_why="LLMC_DIR '$LLMC_DIR' is not a directory"
elif [ ! -x "$LLMC_DIR/train_gpt2cu" ]; then
    llmc_why="no train_gpt2cu in LLMC_DIR '$LLMC_DIR'; build it there (make train_gpt2cu) as the header of bench/train_gpu.sh says"
fi
[ -n "$llmc_why" ] && echo "llm.c: not comparable ($llmc_why)"

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "bench/train_gpu.sh: SKIP: no GPU (nvidia-smi -L failed)"
    exit 0
fi
echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1); peak $PEAK TFLOP/s"

# rate NAME TOKENS_PER_STEP FLOP_PER_TOKEN NOTE [OUT_FLOP LAYERS FULL_LAYERS], step times in
# seconds on stdin: tokens/s at the median step time of the steps after the first 10 (the one
# statistic for every trainer), TFLOP/s/rank and MFU at that rate. For a slice of a model
# (LAYERS of FULL_LAYERS) a second line: the transformer layers' own MFU, their FLOP (all but
# the output layer's OUT_FLOP per token) over the whole step time, and the output layer's
# share of the FLOP in the slice and in the whole model (the layers' FLOP scale with their
# number, the output layer's do not: a slice's MFU leans on that one large GEMM)
rate() {
    python3 -c '
import statistics, sys
name, tokens, flop, note = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
out, layers, full = (float(x or 0) for x in (sys.argv[5:8] if len(sys.argv) > 8 else (0, 1, 1)))
peak = float(sys.argv[-1])
t = [float(x) for x in sys.stdin.read().split()]
if not t:
    sys.exit(1)
step = statistics.median(t[10:] if len(t) > 12 else t[len(t) // 2:])
tok = tokens / step
tf = flop * tok / 1e12
print(f"{name:<28} {tok:10.0f} tokens/s  {tf:7.1f} TFLOP/s  MFU {100 * tf / peak:5.1f}%  ({1000 * step:.1f} ms/step{note})")
if out and layers < full:
    whole = out + (flop - out) * full / layers
    print(f"  {int(layers)} of {int(full)} layers: the transformer layers alone MFU {100 * (flop - out) * tok / 1e12 / peak:5.1f}% "
          f"(the output layer is {100 * out / flop:.1f}% of this slice\x27s FLOP, {100 * out / whole:.1f}% of the whole model\x27s)")
' "$@" "$PEAK"
}

# describe CONFIG overrides...: "LABEL|OUT_FLOP|LAYERS|FULL_LAYERS" of a sluice run, from its
# --print-config: layers (of the model's), sequence x micro-batch (global batch),
# recomputation; the output layer's FLOP per token, 6 x hidden x vocab (docs/trainer.md)
describe() {
    local cfg=$root/configs/models/$1.yaml
    shift
    { sed -n 's/^ *num_layers: *\([0-9]*\).*/full_layers: \1/p' "$cfg"
      "$sluice" train "$cfg" data=synthetic "$@" --print-config 2>/dev/null; } | python3 -c '
import re, sys
k = {}
for l in sys.stdin:
    m = re.match(r"\s*(\w+): *([\w.]+)", l)
    if m and m.group(1) not in k:
        k[m.group(1)] = m.group(2)
L, F = int(k["num_layers"]), int(k["full_layers"])
seq, mb, gb, rc = (k[x] for x in ("seq_len", "micro_batch_size", "global_batch_size", "recompute"))
out = 6 * int(k["hidden_size"]) * int(k["vocab_size"])
print(f"[{L} of {F} layers, seq {seq} x {mb} (global {gb}), recompute {rc}]|{out}|{L}|{F}")
'
}

# trainer LOG.jsonl steps: the step times of the trainer's train lines; trainer LOG.jsonl
# last: "TOKENS_PER_STEP FLOP_PER_TOKEN LOSS" of the last one
trainer() {
    python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "\"train\"" in l]
r = rows[-1]
if sys.argv[2] == "steps":
    print("\n".join(str(x["step_time_s"]) for x in rows))
else:
    print(r["tokens_per_s"] * r["step_time_s"], r["tflops_per_rank"] * 1e12 / r["tokens_per_s"], "%.3f" % r["loss"])
' "$1" "$2"
}

# summary NAME LOG.jsonl [OUT_FLOP LAYERS FULL_LAYERS]: the rate of a sluice run
summary() {
    local tokens flop loss
    read -r tokens flop loss <<<"$(trainer "$2" last)"
    trainer "$2" steps | rate "$1" "$tokens" "$flop" ", loss $loss" "${@:3}"
}

# sluice NAME CONFIG overrides...: the row is labelled with its layers, sequence, batch and
# recomputation (describe); a slice of a model's layers is named as one on its MFU row too
run_sluice() {
    local name=$1 cfg=$2 label out layers full
    shift 2
    IFS='|' read -r label out layers full <<<"$(describe "$cfg" "$@")"
    [ "${layers:-0}" -lt "${full:-0}" ] && name="$name slice ($layers of $full layers)"
    "$sluice" train "$root/configs/models/$cfg.yaml" data=synthetic train.device=cuda train.resume=none \
        eval.interval=0 log.peak_tflops="$PEAK" log.file="$work/$name.jsonl" "$@" \
        > "$work/$name.out" 2> "$work/$name.err" || { echo "$name: failed"; tail -5 "$work/$name.err"; return 1; }
    grep -E "GPU memory|attention:" "$work/$name.err" | sed 's/^/  /'
    echo "$name $label"
    summary "$name" "$work/$name.jsonl" "$out" "$layers" "$full"
}

GPT2=(train.seq_len=1024 train.micro_batch_size="$B" train.global_batch_size="$B" train.steps="$STEPS")
if want gpt2; then
echo "== GPT-2 124M, seq 1024, micro-batch $B, one GPU"
run_sluice "sluice gpt2-124m" gpt2-124m "${GPT2[@]}" || true
run_sluice "sluice gpt2-124m selective" gpt2-124m "${GPT2[@]}" train.recompute=selective || true

# llm.c: random init (-e d12), synthetic tokens in its own .bin format, same batch. -v (how
# often it validates) must be > 0: llm.c takes step % val_loss_every, so -v 0 divides by zero
# at step 0. It validates at step 0 and at the last step whatever -v is; -m 1 makes that one
# batch, and -v above the step count keeps it out of the timed steps.
if [ -z "$llmc_why" ]; then
    # the tokens it reads (STEPS + 2 batches of B x 1024, one for validation), drawn at once
    python3 - "$work" $((B * 1024 * (STEPS + 2) + 1)) $((B * 1024 + 1)) <<'PY'
import struct, sys
import numpy as np
rng = np.random.default_rng(0)
for name, n in (("train", int(sys.argv[2])), ("val", int(sys.argv[3]))):
    with open(f"{sys.argv[1]}/llmc_{name}.bin", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        rng.integers(0, 50257, n, dtype=np.uint16).tofile(f)
PY
    (cd "$LLMC_DIR" && ./train_gpt2cu -i "$work/llmc_train.bin" -j "$work/llmc_val.bin" -e d12 \
        -b "$B" -t 1024 -d $((B * 1024)) -x "$STEPS" -v $((STEPS + 1)) -m 1 -s 0 -h 0 -l 6e-4 \
        -r 1 -z 0) > "$work/llmc.out" 2>&1
    st=$?
    if [ $st -ne 0 ]; then
        llmc_why="train_gpt2cu exited $st: $(grep -v '^\s*$' "$work/llmc.out" | tail -1)"
    elif [ ! -s "$work/sluice gpt2-124m.jsonl" ]; then
        llmc_why="the sluice GPT-2 run failed, so there is no FLOP count to compare with"
    else
        # llm.c's "N ms" field per step (CUDA events around each step); its "tok/s" field is
        # an exponential moving average, which the slow first steps pull down
        read -r _ flop _ <<<"$(trainer "$work/sluice gpt2-124m.jsonl" last)"
        echo "llm.c train_gpt2cu [12 of 12 layers, seq 1024 x $B (global $B), recompute GELU (-r 1)]"
        sed -nE 's/.*\|[[:space:]]*([0-9.]+) ms \|.*/\1/p' "$work/llmc.out" | awk '{ print $1 / 1000 }' |
            rate "llm.c train_gpt2cu$([ "${LLMC_CUDNN:-0}" = 1 ] && echo ' (cuDNN)')" $((B * 1024)) \
                "$flop" "; our FLOP formula; llm.c -r 1 recomputes GELU" ||
            llmc_why="no 'N ms' step lines in its output"
    fi
    [ -n "$llmc_why" ] && echo "llm.c: not comparable ($llmc_why)"
fi
fi

if want large; then
echo "== larger models, one GPU"
run_sluice gpt3-1.3b gpt3-1.3b model.num_layers="${LAYERS_1B3:-24}" \
    train.seq_len=2048 train.micro_batch_size=4 train.global_batch_size=4 train.steps=20 \
    train.recompute=selective || true
run_sluice llama3-8b llama3-8b model.num_layers="${LAYERS_8B:-8}" \
    train.seq_len=8192 train.micro_batch_size=1 train.global_batch_size=1 train.steps=20 \
    train.recompute=selective || true
fi

want profile || exit 0
# classify CSV NAME_COLUMN NS_COLUMN STEPS LOG [BASE_CSV]: kernel time per step by class from a
# kernel summary (its time column in ns) over STEPS steps, against the mean step time of the
# last 10 steps of the trainer's LOG; with BASE_CSV, the difference of the two summaries
classify() {
    python3 - "$work" "$@" <<'PY'
import csv, json, sys
work, path, ncol, tcol, steps, log = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
def load(p):
    cls = {"GEMM": 0.0, "attention": 0.0, "other": 0.0}
    for r in csv.DictReader(l for l in open(p) if not l.startswith("==")):
        try:
            ns = float(r[tcol].replace(",", ""))
        except (KeyError, ValueError):
            continue  # a units row
        name = r[ncol].lower()
        # attention first: cuDNN's attention kernels carry sm90_ in their names too
        if any(k in name for k in ("attn", "attention", "flash", "cudnn", "fmha", "sdpa")):
            cls["attention"] += ns
        elif any(k in name for k in ("gemm", "cutlass", "xmma", "nvjet", "sm90_", "sm80_", "cublas", "splitkreduce")):
            cls["GEMM"] += ns
        else:
            cls["other"] += ns
    return cls
cls = load(path)
if len(sys.argv) > 7:
    base = load(sys.argv[7])
    cls = {k: cls[k] - base[k] for k in cls}
rows = [r for r in map(json.loads, open(log)) if r.get("type") == "train"][1:][-10:]
step_ms = 1000 * sum(r["step_time_s"] for r in rows) / max(1, len(rows))
per = {k: v / 1e6 / steps for k, v in cls.items()}
busy = sum(per.values())
for k, v in per.items():
    print(f"  {k:<10} {v:8.2f} ms/step  {100 * v / step_ms:5.1f}%")
print(f"  {'idle':<10} {max(0.0, step_ms - busy):8.2f} ms/step  {100 * max(0.0, step_ms - busy) / step_ms:5.1f}%  (step {step_ms:.2f} ms)")
PY
}

echo "== per-step profile, GPT-2 124M (kernel time by class, idle = step time - kernel time)"
if command -v nsys >/dev/null 2>&1; then
    PSTEPS=15
    nsys profile -q -t cuda -o "$work/prof" "$sluice" train "$root/configs/models/gpt2-124m.yaml" \
        data=synthetic train.device=cuda train.resume=none eval.interval=0 "${GPT2[@]/train.steps=$STEPS/train.steps=$PSTEPS}" \
        log.file="$work/prof.jsonl" > /dev/null 2> "$work/prof.err" || { echo "nsys run failed"; tail -3 "$work/prof.err"; }
    nsys stats -q --report cuda_gpu_kern_sum --format csv -o "$work/kern" "$work/prof.nsys-rep" > /dev/null 2>&1 || true
    f=$(ls "$work"/kern*.csv 2>/dev/null | head -1)
    if [ -n "$f" ]; then classify "$f" Name "Total Time (ns)" "$PSTEPS" "$work/prof.jsonl"; else echo "  no kernel summary from nsys stats"; fi
elif command -v ncu >/dev/null 2>&1; then
    # ncu runs the kernels one at a time, so it gives each kernel's time but not the gaps: the
    # step time comes from the unprofiled GPT-2 run above (section gpt2), idle is the rest.
    # Clocks are left as they are (--clock-control none).
    for n in 2 3; do
        ncu --clock-control none --metrics gpu__time_duration.sum -f -o "$work/ncu$n" \
            "$sluice" train "$root/configs/models/gpt2-124m.yaml" data=synthetic train.device=cuda \
            train.resume=none eval.interval=0 "${GPT2[@]/train.steps=$STEPS/train.steps=$n}" \
            > "$work/ncu$n.out" 2>&1 || { echo "  ncu run ($n steps) failed"; tail -3 "$work/ncu$n.out"; }
        ncu --import "$work/ncu$n.ncu-rep" --csv --page raw --print-units base \
            --metrics gpu__time_duration.sum \
            > "$work/ncu$n.csv" 2>/dev/null || true
    done
    if [ -s "$work/ncu3.csv" ] && [ -s "$work/ncu2.csv" ] && [ -s "$work/sluice gpt2-124m.jsonl" ]; then
        echo "  (ncu: kernels of a 3-step run minus those of a 2-step run; step time from section gpt2)"
        classify "$work/ncu3.csv" "Kernel Name" gpu__time_duration.sum 1 "$work/sluice gpt2-124m.jsonl" \
            "$work/ncu2.csv"
    else
        echo "  no kernel times from ncu (or no section gpt2 run for the step time)"
    fi
else
    echo "  skip: neither nsys nor ncu found (install Nsight Systems or Nsight Compute for the breakdown)"
fi
