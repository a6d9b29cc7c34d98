#!/usr/bin/env bash
# GPU trainer throughput and MFU (docs/benchmarks.md, "Training on GPU"):
#   1. GPT-2 124M, seq 1024, bf16, one GPU: sluice vs llm.c's train_gpt2cu at the same batch
#      (tokens/s, and MFU by the formula of docs/trainer.md for both);
#   2. gpt3-1.3b and llama3-8b (layers reduced to fit one GPU): MFU;
#   3. a per-step profile of the GPT-2 run: GEMM, attention, other kernels, idle (nsys).
# Usage: bench/train_gpu.sh [SLUICE] ; environment:
#   LLMC_DIR     a prepared llm.c directory with train_gpt2cu built (below); without it the
#                llm.c row says "llm.c: not comparable (reason)" and the rest runs. Nothing is
#                downloaded: the GPU machines have no network.
#   LLMC_CUDNN   1: LLMC_DIR's train_gpt2cu was built with cuDNN attention (for the label)
#   B            GPT-2 micro-batch (default 16), STEPS (default 40; the first 10 are warm-up)
#   PEAK_TFLOPS  the GPU's dense bf16 peak (default 989: H100 SXM)
#   LAYERS_1B3, LAYERS_8B  layers kept of gpt3-1.3b (default 24, all) and llama3-8b (default 8)
#
# Preparing LLMC_DIR, on a machine with network and the CUDA toolkit of the GPU machine, in a
# scratch directory outside this repository (never committed here):
#   git clone https://github.com/karpathy/llm.c /scratch/llm.c
#   git clone https://github.com/NVIDIA/cudnn-frontend /scratch/cudnn-frontend  # header-only
#   cd /scratch/llm.c
#   # CUDA 13 removed cudaMemAdvise(ptr, bytes, advice, int device): the last argument is now a
#   # struct cudaMemLocation. Patch each call that `grep -rn cudaMemAdvise llmc *.cu` lists:
#   # cudaCpuDeviceId -> (cudaMemLocation){cudaMemLocationTypeHost, 0}, a device id d ->
#   # (cudaMemLocation){cudaMemLocationTypeDevice, d}. CUDA 12 needs no patch.
#   make train_gpt2cu USE_CUDNN=1 CUDNN_FRONTEND_PATH=/scratch/cudnn-frontend/include
#   # (USE_CUDNN=0 builds llm.c's own attention; then leave LLMC_CUDNN unset)
# then copy /scratch/llm.c to the GPU machine and run LLMC_DIR=/path/llm.c LLMC_CUDNN=1 here.
# llm.c's run uses random init (-e d12) on synthetic tokens, so no weights or data are needed.
set -uo pipefail
sluice=$(realpath "${1:-build/sluice}")
root=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-16}
STEPS=${STEPS:-40}
PEAK=${PEAK_TFLOPS:-989}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-gpu-XXXXXX")
trap 'rm -rf "$work"' EXIT

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

# summary NAME LOG.jsonl: mean tokens/s, TFLOP/s/rank and MFU over the steps after warm-up
summary() {
    python3 - "$1" "$2" "$PEAK" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2]) if '"train"' in l]
later = rows[10:] if len(rows) > 12 else rows[len(rows) // 2:]
time = sum(r["step_time_s"] for r in later)
tok = sum(r["tokens_per_s"] * r["step_time_s"] for r in later) / time
tf = sum(r["tflops_per_rank"] * r["step_time_s"] for r in later) / time
print(f"{sys.argv[1]:<28} {tok:10.0f} tokens/s  {tf:7.1f} TFLOP/s  MFU {100 * tf / float(sys.argv[3]):5.1f}%  "
      f"({1000 * time / len(later):.1f} ms/step, loss {rows[-1]['loss']:.3f})")
PY
}

# sluice NAME CONFIG overrides...
run_sluice() {
    local name=$1 cfg=$2
    shift 2
    "$sluice" train "$root/configs/models/$cfg.yaml" data=synthetic train.device=cuda train.resume=none \
        eval.interval=0 log.peak_tflops="$PEAK" log.file="$work/$name.jsonl" "$@" \
        > "$work/$name.out" 2> "$work/$name.err" || { echo "$name: failed"; tail -5 "$work/$name.err"; return 1; }
    grep -E "GPU memory|attention:" "$work/$name.err" | sed 's/^/  /'
    summary "$name" "$work/$name.jsonl"
}

echo "== GPT-2 124M, seq 1024, micro-batch $B, one GPU"
GPT2=(train.seq_len=1024 train.micro_batch_size="$B" train.global_batch_size="$B" train.steps="$STEPS")
run_sluice "sluice gpt2-124m" gpt2-124m "${GPT2[@]}" || true
run_sluice "sluice gpt2-124m selective" gpt2-124m "${GPT2[@]}" train.recompute=selective || true

# llm.c: random init (-e d12), synthetic tokens in its own .bin format, same batch. -v (how
# often it validates) must be > 0: llm.c takes step % val_loss_every, so -v 0 divides by zero
# at step 0. It validates at step 0 and at the last step whatever -v is; -m 1 makes that one
# batch, and -v above the step count keeps it out of the timed steps.
if [ -z "$llmc_why" ]; then
    python3 - "$work" <<'PY'
import struct, random, sys
random.seed(0)
for name, n in (("train", 20_000_000), ("val", 1_000_000)):
    with open(f"{sys.argv[1]}/llmc_{name}.bin", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
        f.write(struct.pack(f"<{n}H", *(random.randrange(50257) for _ in range(n))))
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
        F=$(python3 -c "import json; r=[json.loads(l) for l in open('$work/sluice gpt2-124m.jsonl')][-1]; print(r['tflops_per_rank']*1e12/r['tokens_per_s'])")
        python3 - "$work/llmc.out" "$F" "$PEAK" "${LLMC_CUDNN:-0}" <<'PY' || llmc_why="no 'tok/s' lines in its output"
import re, sys
toks = [float(m.group(1)) for l in open(sys.argv[1]) for m in [re.search(r"\|\s*([0-9.]+) tok/s", l)] if m]
if not toks:
    sys.exit(1)
later = toks[10:] if len(toks) > 12 else toks[len(toks) // 2:]
tok = sum(later) / len(later)
tf = float(sys.argv[2]) * tok / 1e12
print(f"{'llm.c train_gpt2cu' + (' (cuDNN)' if sys.argv[4] == '1' else ''):<28} {tok:10.0f} tokens/s  {tf:7.1f} TFLOP/s  "
      f"MFU {100 * tf / float(sys.argv[3]):5.1f}%  (our FLOP formula; llm.c -r 1 recomputes GELU)")
PY
    fi
    [ -n "$llmc_why" ] && echo "llm.c: not comparable ($llmc_why)"
fi

echo "== larger models, one GPU"
run_sluice "gpt3-1.3b (${LAYERS_1B3:-24} layers)" gpt3-1.3b model.num_layers="${LAYERS_1B3:-24}" \
    train.seq_len=2048 train.micro_batch_size=4 train.global_batch_size=4 train.steps=20 \
    train.recompute=selective || true
run_sluice "llama3-8b (${LAYERS_8B:-8} layers)" llama3-8b model.num_layers="${LAYERS_8B:-8}" \
    train.seq_len=8192 train.micro_batch_size=1 train.global_batch_size=1 train.steps=20 \
    train.recompute=selective || true

echo "== per-step profile, GPT-2 124M (nsys; kernel time by class, idle = step time - kernel time)"
if command -v nsys >/dev/null 2>&1; then
    PSTEPS=15
    nsys profile -q -t cuda -o "$work/prof" "$sluice" train "$root/configs/models/gpt2-124m.yaml" \
        data=synthetic train.device=cuda train.resume=none eval.interval=0 "${GPT2[@]/train.steps=$STEPS/train.steps=$PSTEPS}" \
        log.file="$work/prof.jsonl" > /dev/null 2> "$work/prof.err" || { echo "nsys run failed"; tail -3 "$work/prof.err"; }
    nsys stats -q --report cuda_gpu_kern_sum --format csv -o "$work/kern" "$work/prof.nsys-rep" > /dev/null 2>&1 || true
    python3 - "$work" "$PSTEPS" <<'PY'
import csv, glob, json, sys
work, steps = sys.argv[1], int(sys.argv[2])
files = glob.glob(f"{work}/kern*.csv")
if not files:
    sys.exit("no kernel summary from nsys stats")
cls = {"GEMM": 0.0, "attention": 0.0, "other": 0.0}
for r in csv.DictReader(open(files[0])):
    name, ns = r["Name"].lower(), float(r["Total Time (ns)"])
    if any(k in name for k in ("gemm", "cutlass", "xmma", "sm90_", "sm80_", "cublas")):
        cls["GEMM"] += ns
    elif any(k in name for k in ("attn", "flash", "cudnn", "fmha", "sdpa")):
        cls["attention"] += ns
    else:
        cls["other"] += ns
rows = [json.loads(l) for l in open(f"{work}/prof.jsonl")]
step_ms = 1000 * sum(r["step_time_s"] for r in rows[1:]) / max(1, len(rows) - 1)
per = {k: v / 1e6 / steps for k, v in cls.items()}
busy = sum(per.values())
for k, v in per.items():
    print(f"  {k:<10} {v:8.2f} ms/step  {100 * v / step_ms:5.1f}%")
print(f"  {'idle':<10} {max(0.0, step_ms - busy):8.2f} ms/step  {100 * max(0.0, step_ms - busy) / step_ms:5.1f}%  (step {step_ms:.2f} ms)")
PY
else
    echo "  skip: nsys not found (install Nsight Systems for the breakdown)"
fi
