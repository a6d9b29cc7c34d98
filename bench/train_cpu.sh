#!/usr/bin/env bash
# CPU reference trainer throughput: tokens/s (wall) and tokens per CPU-second for tiny-gpt,
# tiny-llama and gpt2-124m on synthetic data, with the machine's load average alongside
# (other processes on the same cores lower both numbers).
# Usage: bench/train_cpu.sh [SLUICE] ; STEPS (default 5; gpt2-124m runs 2).
set -euo pipefail
sluice=$(realpath "${1:-build/sluice}")
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${STEPS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load average $(cut -d' ' -f1-3 /proc/loadavg)"
bench() { # name config steps overrides...
    local name=$1 cfg=$2 n=$3
    shift 3
    /usr/bin/time -f "%U %S %e" -o "$work/time" "$sluice" train "$root/configs/models/$cfg.yaml" data=synthetic \
        train.steps="$n" eval.interval=0 train.resume=none log.file="$work/$name.jsonl" "$@" > /dev/null 2> "$work/err"
    python3 - "$name" "$work/$name.jsonl" "$work/time" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])]
later = rows[1:] or rows  # the first step pays for page faults
tok = sum(r["tokens_per_s"] * r["step_time_s"] for r in later)
wall = sum(r["step_time_s"] for r in later)
user, sys_, el = map(float, open(sys.argv[3]).read().split()[-3:])
total = sum(r["tokens_per_s"] * r["step_time_s"] for r in rows)
print("%-12s %8.0f tokens/s (steps 2+)  %8.0f tokens per CPU-second (whole run)  %.4f TFLOP/s/rank"
      % (sys.argv[1], tok / wall, total / (user + sys_), sum(r["tflops_per_rank"] for r in later) / len(later)))
PY
}
bench tiny-gpt tiny-gpt "$steps"
bench tiny-llama tiny-llama "$steps"
bench gpt2-124m gpt2-124m 2 train.micro_batch_size=1 train.global_batch_size=1
