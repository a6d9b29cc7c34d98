#!/usr/bin/env bash
# scripts/gpu-layouts.sh without a GPU: its plan fits 8 minutes of a lent GPU (every stage's
# limit summed under 480 s), lists the 2-, 4- and 8-rank layouts, a plan that does not fit
# is refused, and a run (stand-ins for sluice and mpirun, no build needed) prints one verdict
# per layout: PASS when the losses and norms match the 1-rank reference, FAIL when they do
# not or the layout is cut at its limit, SKIP with the trainer's reason when it refuses the
# layout, SKIP for a layout of more ranks than GPU_LAYOUTS_MAX_RANKS; a FAIL makes the exit
# code 1.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
GL="$ROOT/scripts/gpu-layouts.sh"

run "$GL" --plan
case_ "--plan: the plan fits"
expect_rc 0
rows=$(awk 'NF >= 3 && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/' "$T/out")
total=$(echo "$rows" | awk '{ s += $3 } END { print s }')
case_ "stages' limits: $total s in all (under 480)"
[ "$total" -gt 0 ] && [ "$total" -lt 480 ] && ok || fail "the plan does not fit"
case_ "the stages: environment, the 1-rank reference, then the layouts"
expect_eq "$(echo "$rows" | awk '{ print $1 }' | head -2 | tr '\n' ' ')" "env reference "
for l in dp2 dp4 zero2-dp2 zero2-dp2-tp2 zero3-dp2 zero3-dp2-pp2 tp2 tp2-sp pp2-1f1b pp2-interleaved \
    dp2-tp2-pp2 zero3-dp2-tp2-pp2; do
    case_ "layout $l is in the plan"
    echo "$rows" | grep -q "^$l " && ok || fail "missing"
done
case_ "dp2-tp2-pp2 is 8 ranks; dp4 4"
expect_eq "$(echo "$rows" | awk '$1 == "dp2-tp2-pp2" || $1 == "dp4" { print $2 }' | tr '\n' ' ')" "4 8 "
for s in env reference; do
    case_ "stage $s is a function of the script"
    run bash -c "source '$GL' --lib; declare -F stage_$s"
    expect_rc 0
done
run env GPU_LAYOUTS=$'a 2 300\nb 4 200' "$GL" --plan
case_ "layouts adding up to 8 minutes or more: refused"
expect_rc 1
expect_out "plan: the stages add up to 480 s or more"

# a run with stand-ins: sluice writes a log of 5 steps (another loss for optim.zero=9),
# refuses parallel.tensor=3 as the trainer does (4 KV heads), hangs for train.hang; mpirun
# runs it once
G="$T/g"
mkdir -p "$G/build"
cat >"$G/build/sluice" <<'SH'
#!/bin/sh
[ "$1" = --version ] && { echo "sluice stand-in"; exit 0; }
loss=6.0 log=
for a in "$@"; do
    case $a in
    log.file=*) log=${a#log.file=} ;;
    optim.zero=9) loss=7.0 ;;
    parallel.tensor=3) echo "sluice train: error: parallel.tensor: 4 key/value heads (model.num_query_groups) do not split over 3 ranks" >&2; exit 1 ;;
    train.hang=1) sleep 30 ;;
    esac
done
for s in 1 2 3 4 5; do
    echo "{\"type\":\"train\",\"step\":$s,\"loss\":$loss,\"grad_norm\":1.5}"
done >"$log"
SH
printf '#!/bin/sh\nshift 2\nexec "$@"\n' >"$T/mpirun"
chmod +x "$G/build/sluice" "$T/mpirun"
run env GPU_CHECK_DIR="$G" GPU_LAYOUTS_MPIRUN="$T/mpirun" \
    GPU_LAYOUTS=$'same 2 20\nworse 4 20 optim.zero=9\nrefused 3 20 parallel.tensor=3\nhang 2 1 train.hang=1' \
    "$GL" --run "$T/out1"
case_ "--run: a verdict per layout; a FAIL makes it exit 1"
expect_rc 1
expect_out "STAGE reference rc=0"
expect_out "LAYOUT same PASS: 2 ranks, 5 steps against 1 rank: loss within 0.0e+00, grad norm within 0.0e+00"
expect_out "LAYOUT worse FAIL: 4 ranks against 1 rank: loss within 1.7e-01"
expect_out "SKIP refused: parallel.tensor: 4 key/value heads (model.num_query_groups) do not split over 3 ranks"
expect_out "LAYOUT hang FAIL: exit 124: cut at its limit of 1 s"
case_ "--run: the verdicts and an archive of the logs in OUT"
expect_eq "$(grep -c '^LAYOUT \|^SKIP ' "$T/out1/gpu-layouts.txt")" 4
expect_file "$T/out1/gpu-layouts.tgz"
run env GPU_CHECK_DIR="$G" GPU_LAYOUTS_MPIRUN="$T/mpirun" GPU_LAYOUTS=$'same 2 20' "$GL" --run "$T/out2"
case_ "--run: all PASS or SKIP: exit 0"
expect_rc 0
# one rank a GPU (scripts/gpu-check.sh's stage layouts): a layout of more ranks than GPUs is
# skipped with the reason, not run (its FAIL would otherwise make the exit code 1)
run env GPU_CHECK_DIR="$G" GPU_LAYOUTS_MPIRUN="$T/mpirun" GPU_LAYOUTS_MAX_RANKS=2 \
    GPU_LAYOUTS=$'same 2 20\nworse 4 20 optim.zero=9' "$GL" --run "$T/out3"
case_ "GPU_LAYOUTS_MAX_RANKS=2: the 4-rank layout skipped with the reason, the 2-rank one run"
expect_rc 0
expect_out "LAYOUT same PASS: 2 ranks"
expect_out "SKIP worse: 4 ranks, more than the 2 GPUs (one a rank)"

finish
