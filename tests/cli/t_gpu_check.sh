#!/usr/bin/env bash
# scripts/gpu-check.sh without a GPU: its plan fits the lent machine (every stage's limit
# summed under 12 minutes, each call's under its command limit, every stage a function), a
# plan that does not fit is refused, and a run reports each stage with "STAGE name rc=N t=Ns",
# a stage cut at its limit too, and goes on to the next (stand-ins for the kernel tests and
# the trainer; no build needed).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
GC="$ROOT/scripts/gpu-check.sh"

run "$GC" --plan
case_ "--plan: the plan fits"
expect_rc 0
# the table's rows, summed here: NAME CALL LIMIT
rows=$(awk 'NF == 3 && ($2 == 1 || $2 == 2) && $3 ~ /^[0-9]+$/' "$T/out")
total=$(echo "$rows" | awk '{ s += $3 } END { print s }')
c1=$(echo "$rows" | awk '$2 == 1 { s += $3 } END { print s + 0 }')
c2=$(echo "$rows" | awk '$2 == 2 { s += $3 } END { print s + 0 }')
case_ "stages' limits: $total s in all (under 720), call 1 $c1 s, call 2 $c2 s (each under 570)"
if [ "$total" -lt 720 ] && [ "$c1" -lt 570 ] && [ "$c2" -lt 570 ] && [ "$c1" -gt 0 ] && [ "$c2" -gt 0 ]; then
    ok
else
    fail "the plan does not fit"
fi
case_ "the stages in priority order: environment, make test-gpu's three parts, the 124M gradients, the benchmarks, the layouts, tokenization"
expect_eq "$(echo "$rows" | awk '{ print $1 }' | tr '\n' ' ')" "env kernels trainer eval grad124m env bench large layouts tokenize "
for s in $(echo "$rows" | awk '{ print $1 }' | sort -u); do
    case_ "stage $s is a function of the script"
    run bash -c "source '$GC' --lib; declare -F stage_$s"
    expect_rc 0
done
run env GPU_CALL_MAX=300 "$GC" --plan
case_ "a call over its limit: refused"
expect_rc 1
expect_out "plan: a call is over 300 s"
run env GPU_CHECK_PLAN=$'kernels 1 500\nbench 2 300' "$GC" --plan
case_ "stages adding up to 12 minutes or more: refused"
expect_rc 1
expect_out "plan: the stages add up to 720 s or more"

# a run with stand-ins: test_kernels that never ends is cut at its limit, and the next stage
# (the evaluation test, whose stand-in trainer finds no GPU) still runs and reports
G="$T/g"
mkdir -p "$G/build"
printf '#!/bin/sh\nsleep 60\n' >"$G/build/test_kernels"
printf '#!/bin/sh\necho "sluice train: error: train.device=cuda: no CUDA device (none)" >&2\nexit 1\n' >"$G/build/sluice"
chmod +x "$G/build/test_kernels" "$G/build/sluice"
run env GPU_CHECK_DIR="$G" GPU_CHECK_PLAN=$'kernels 1 1\neval 1 30' "$GC" --run 1 "$T/out1"
case_ "--run: a stage cut at its limit (exit 1), the next one run"
expect_rc 1
expect_out "STAGE kernels rc=124 t="
expect_out "(cut at its limit)"
expect_out "STAGE eval rc=0 t="
expect_out "SKIP: no CUDA device (none)"
case_ "--run: the summary and an archive of the logs in OUT"
expect_file "$T/out1/gpu-check-call1.tgz"
expect_eq "$(grep -c '^STAGE ' "$T/out1/gpu-check-call1.txt")" 2
expect_eq "$(tar tzf "$T/out1/gpu-check-call1.tgz" | grep -c 'log$')" 2

# the layouts need a GPU a rank: on a machine with one (a stand-in nvidia-smi) the stage says
# so and passes, in the summary too
mkdir -p "$T/bin"
printf '#!/bin/sh
echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"
' >"$T/bin/nvidia-smi"
chmod +x "$T/bin/nvidia-smi"
run env PATH="$T/bin:$PATH" GPU_CHECK_DIR="$G" GPU_CHECK_PLAN=$'layouts 2 10' "$GC" --run 2 "$T/out2"
case_ "--run: stage layouts on one GPU: skipped with the reason"
expect_rc 0
expect_out "STAGE layouts rc=0 t="
expect_eq "$(grep -c '^SKIP layouts: 1 GPU(s); the layouts need one a rank' "$T/out2/gpu-check-call2.txt")" 1

# the environment: of the carried Debian libraries, which the machine has and which it lacks
# (then the carried copy is used); every carried binary's ldd in the archive
mkdir -p "$G/lib"
zstd_so=$(ldd "$SLUICE" | awk '/libzstd/ { print $3 }')
[ -z "$zstd_so" ] || cp -L "$zstd_so" "$G/lib/"
touch "$G/lib/libsluice-test-absent.so.7"
cp "$SLUICE" "$G/build/sluice-real"
run env PATH="$T/bin:$PATH" GPU_CHECK_DIR="$G" GPU_CHECK_PLAN=$'env 1 15' "$GC" --run 1 "$T/out3"
case_ "--run: stage env names the carried libraries the machine lacks, and those it has"
expect_out "STAGE env rc="
expect_out "debian libraries it lacks (carried, in use): libsluice-test-absent.so.7"
[ -z "$zstd_so" ] || expect_out "debian libraries the machine has: ${zstd_so##*/}"
case_ "--run: stage env puts every carried binary's ldd in the archive"
tar xzf "$T/out3/gpu-check-call1.tgz" -C "$T" ./ldd.txt
expect_eq "$(grep -c '^== ldd ' "$T/ldd.txt")" 3

finish
