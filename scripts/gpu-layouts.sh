#!/usr/bin/env bash
# Parallel layouts of the GPU trainer on ONE lent GPU: every rank of a layout shares the
# device, talking through the host-staged MPI backend (train.comm=mpi, several ranks on a
# GPU), and each layout's loss and gradient norm per step are compared with the 1-rank run
# of the NCCL path (tests/oracle/compare_train_logs.py). One line per layout:
#   LAYOUT <name> PASS|FAIL: ...      or      SKIP <name>: <reason>
# (SKIP where the trainer refuses the layout with a clean error before its first step: a
# layout not on the GPU path yet). Nothing is built there: the build is the one that
# `scripts/gpu-check.sh --prepare` carries in .gpucheck/ (GPU_CHECK_DIR), and mpirun must be
# on the machine (else every layout is SKIP). Bounded: every stage runs under `timeout`,
# the limits add up to under 8 minutes.
#
# Usage:
#   scripts/gpu-layouts.sh --plan        the stages and their limits; exit 1 when they add
#                                        up to PLAN_MAX (480) seconds or more
#   scripts/gpu-layouts.sh --run [OUT]   there, from the repository root, .gpucheck carried:
#                                        every stage; into OUT (default .gpucheck/out) the
#                                        verdicts (gpu-layouts.txt) and the logs
#                                        (gpu-layouts.tgz)
# On the machine: `scripts/gpu-layouts.sh --run "$OUT"` with .gpucheck carried.
# GPU_LAYOUTS replaces the list below, GPU_LAYOUTS_MPIRUN the launcher (tests);
# GPU_LAYOUTS_MAX_RANKS=N runs only the layouts of at most N ranks (SKIP for the others):
# scripts/gpu-check.sh's stage layouts gives it the number of GPUs, one rank a GPU.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
cd "$root" || exit 1
G=${GPU_CHECK_DIR:-.gpucheck}
PLAN_MAX=480
# the stages before the layouts: name limit_s
FIXED="env 15
reference 40"
# the layouts, one a line: name ranks limit_s keys... (the global batch is 16 sequences of
# micro-batch 2, so each layout accumulates 16 / (2 x data-parallel ranks) micro-batches)
LAYOUTS=${GPU_LAYOUTS:-"dp2 2 30
dp4 4 35
zero2-dp2 2 30 optim.zero=2
zero2-dp2-tp2 4 35 optim.zero=2 parallel.tensor=2
zero3-dp2 2 30 optim.zero=3
zero3-dp2-pp2 4 35 optim.zero=3 parallel.pipeline=2
tp2 2 30 parallel.tensor=2
tp2-sp 2 30 parallel.tensor=2 parallel.sequence=true
pp2-1f1b 2 30 parallel.pipeline=2
pp2-interleaved 2 30 parallel.pipeline=2 parallel.virtual_stages=2
dp2-tp2-pp2 8 50 parallel.tensor=2 parallel.pipeline=2
zero3-dp2-tp2-pp2 8 50 optim.zero=3 parallel.tensor=2 parallel.pipeline=2"}
# every run: tiny-llama with 4 layers (two virtual stages of two pipeline stages), random
# tokens, 5 steps; our own attention kernels (deterministic)
MODEL=configs/models/tiny-llama.yaml
STEPS=5
RUN=(data=synthetic model.vocab_size=4096 model.num_layers=4 train.seq_len=128
     train.micro_batch_size=2 train.global_batch_size=16 train.steps=$STEPS optim.warmup_steps=1
     eval.interval=0 train.attention=flash train.resume=none train.device=cuda)
# the tolerances of the GPU trainer's tests (tests/gpu/t_train_gpu.sh, argued there): the
# layouts change which bf16 products and sums are formed, so the losses drift apart by
# rounding; data parallel through the MPI backend sums the ranks in the order one rank sums
# its micro-batches, and is usually closer
LOSS_RTOL=0.005
NORM_RTOL=0.05

plan() {
    local total=0 name np lim keys bad=0
    printf '%-18s %5s %8s  %s\n' stage ranks limit_s keys
    while read -r name lim; do
        printf '%-18s %5s %8s\n' "$name" 1 "$lim"
        total=$((total + lim))
    done <<<"$FIXED"
    while read -r name np lim keys; do
        [ -n "$name" ] || continue
        printf '%-18s %5s %8s  %s\n' "$name" "$np" "$lim" "$keys"
        total=$((total + lim))
    done <<<"$LAYOUTS"
    echo "all stages: ${total} s (under $PLAN_MAX s)"
    [ $total -lt $PLAN_MAX ] || { echo "plan: the stages add up to $PLAN_MAX s or more"; bad=1; }
    return $bad
}

# ---- there ---------------------------------------------------------------------------------

# the largest relative difference of one quantity in compare_train_logs.py's output
worst() { # OUTPUT KEY
    echo "$1" | awk -v k="$2" '$3 == k":" { v = $8; sub(/,$/, "", v); if (v + 0 > m) m = v + 0 } END { printf "%.1e", m + 0 }'
}

stage_env() {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -3
    echo "mpirun: ${MPIRUN[0]:-absent} ($(command -v "${MPIRUN[0]:-mpirun}" >/dev/null && "${MPIRUN[0]}" --version 2>&1 | head -1))"
    "$G/build/sluice" --version
}

stage_reference() {
    "$G/build/sluice" train "$MODEL" "${RUN[@]}" train.comm=nccl log.file="$OUTDIR/reference.jsonl" \
        >"$OUTDIR/reference.out" 2>"$OUTDIR/reference.err"
    local rc=$?
    grep -h 'training on the GPU\|error\|fatal' "$OUTDIR/reference.err" | head -5
    return $rc
}

# one layout: its run under mpirun, then its verdict line
layout() { # NAME RANKS LIMIT KEYS...
    local name=$1 np=$2 lim=$3 rc t0=$SECONDS log cmp why
    shift 3
    log=$OUTDIR/$name.jsonl
    if [ -n "${GPU_LAYOUTS_MAX_RANKS:-}" ] && [ "$np" -gt "$GPU_LAYOUTS_MAX_RANKS" ]; then
        echo "SKIP $name: $np ranks, more than the $GPU_LAYOUTS_MAX_RANKS GPUs (one a rank)"
        return 0
    fi
    if [ ${#MPIRUN[@]} = 0 ]; then
        echo "SKIP $name: no mpirun on this machine (the layouts need an MPI launcher)"
        return 0
    fi
    timeout -k 5 "$lim" "${MPIRUN[@]}" -np "$np" "$G/build/sluice" train "$MODEL" "${RUN[@]}" \
        train.comm=mpi "$@" log.file="$log" </dev/null >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err"
    rc=$?
    if [ $rc = 0 ] && grep -q '"type":"train"' "$log" 2>/dev/null; then
        if cmp=$(python3 tests/oracle/compare_train_logs.py "$log" "$OUTDIR/reference.jsonl" 1 \
            "$LOSS_RTOL" "$NORM_RTOL" 2>&1); then
            echo "LAYOUT $name PASS: $np ranks$(grep -q 'several on a GPU' "$OUTDIR/$name.err" && echo " sharing a GPU"), $STEPS steps against 1 rank: loss within $(worst "$cmp" loss), grad norm within $(worst "$cmp" grad_norm) relative (tolerances $LOSS_RTOL, $NORM_RTOL); $((SECONDS - t0)) s"
            return 0
        fi
        echo "LAYOUT $name FAIL: $np ranks against 1 rank: loss within $(worst "$cmp" loss), grad norm within $(worst "$cmp" grad_norm) relative (tolerances $LOSS_RTOL, $NORM_RTOL): $(echo "$cmp" | tail -1)"
        return 1
    fi
    why=$(grep -m1 'sluice train: error: ' "$OUTDIR/$name.err" | sed 's/.*sluice train: error: //')
    if [ $rc != 124 ] && [ -n "$why" ] && ! grep -q '"type":"train"' "$log" 2>/dev/null &&
        ! grep -q '^fatal: \|fatal: ' "$OUTDIR/$name.err"; then
        echo "SKIP $name: $why"
        return 0
    fi
    [ $rc = 124 ] && why="cut at its limit of $lim s"
    echo "LAYOUT $name FAIL: exit $rc: ${why:-$(grep -v '^\s*$' "$OUTDIR/$name.err" | tail -1)}"
    return 1
}

run_all() {
    local out=${1:-$G/out} name lim np keys rc worst=0 t0 summary=""
    G=$(cd "$G" && pwd) || { echo "no $G: run scripts/gpu-check.sh --prepare here first"; return 1; }
    export GPU_CHECK_DIR=$G
    mkdir -p "$out" || return 1
    OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/gpu-layouts-XXXXXX")
    export OUTDIR
    # the carried libraries where the machine lacks them (scripts/gpu-check.sh's libpath, in
    # a shell of its own: its functions are not ours)
    LD_LIBRARY_PATH=$(bash -c 'source scripts/gpu-check.sh --lib; libpath; echo "$LD_LIBRARY_PATH"' 2>/dev/null)
    export LD_LIBRARY_PATH
    MPIRUN=()
    if [ -n "${GPU_LAYOUTS_MPIRUN:-}" ]; then
        MPIRUN=("$GPU_LAYOUTS_MPIRUN")
    elif command -v mpirun >/dev/null; then
        MPIRUN=(mpirun --oversubscribe -x LD_LIBRARY_PATH)
        [ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
    fi
    while read -r name lim; do
        echo "== stage $name (limit $lim s)"
        t0=$SECONDS
        timeout -k 5 "$lim" bash -c "source '$self' --lib; stage_$name" </dev/null 2>&1 |
            tee "$OUTDIR/stage-$name.log"
        rc=${PIPESTATUS[0]}
        summary+="STAGE $name rc=$rc t=$((SECONDS - t0))s"$'\n'
        if [ "$name" = reference ] && [ "$rc" != 0 ]; then
            summary+="FAIL reference: the 1-rank run failed (exit $rc): no layout can be compared"$'\n'
            worst=1
            break
        fi
    done <<<"$FIXED"
    if [ $worst = 0 ]; then
        while read -r name np lim keys; do
            [ -n "$name" ] || continue
            echo "== layout $name: $np ranks, $keys (limit $lim s)"
            # shellcheck disable=SC2086 # the keys are words
            line=$(layout "$name" "$np" "$lim" $keys) || worst=1
            echo "$line"
            summary+="$line"$'\n'
        done <<<"$LAYOUTS"
    fi
    tar czf "$out/gpu-layouts.tgz" -C "$OUTDIR" .
    printf '%s' "$summary" | tee "$out/gpu-layouts.txt"
    rm -rf "$OUTDIR"
    return $worst
}

case ${1:-} in
--lib)
    MPIRUN=()
    [ -n "${GPU_LAYOUTS_MPIRUN:-}" ] && MPIRUN=("$GPU_LAYOUTS_MPIRUN")
    command -v mpirun >/dev/null && [ -z "${GPU_LAYOUTS_MPIRUN:-}" ] && MPIRUN=(mpirun)
    return 0 2>/dev/null || exit 0 ;;
--plan) plan ;;
--run) plan >/dev/null || { plan; exit 1; }; run_all "${2:-}" ;;
*) sed -n '13,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
