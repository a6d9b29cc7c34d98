#!/usr/bin/env bash
# The check for a lent GPU machine (one H100 or H200, 16 cores, no network, about 15 minutes
# of machine time in all including its start, at most 10 minutes a command): everything is
# built here, the machine only runs stages in priority order, each under its own time limit,
# each ending with a line "STAGE <name> rc=N t=Ns" so that a run cut short still says how far
# it got. Two calls of the machine: stages of call 1, then of call 2 (docs/testing.md, "A
# lent GPU").
#
# Usage:
#   scripts/gpu-check.sh --plan          the stages, their limits and calls; exit 1 when the
#                                        limits add up to 12 minutes or more, or a call's to
#                                        GPU_CALL_MAX seconds (570: a 600-second command with
#                                        time to spare) or more
#   scripts/gpu-check.sh --prepare       here: build with CUDA_ARCHS=90 and warnings as errors
#                                        into build-h100/, copy what runs there into
#                                        .gpucheck/ (binaries, the shared libraries they need
#                                        that a machine may lack, llm.c's train_gpt2cu from
#                                        LLMC_DIR when given) and check that the working tree
#                                        and .gpucheck/ travel within 64 MiB
#   scripts/gpu-check.sh --run CALL [OUT] there, from the repository root: the stages of call
#                                        1 or 2; into OUT (default .gpucheck/out) an archive
#                                        of their logs and the summary (gpu-check-callN.*)
# On the machine: `scripts/gpu-check.sh --run 1 "$OUT"` with .gpucheck carried, then the
# same with 2; each call's output ends with its stages' lines.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
# what travels: the build and its libraries (GPU_CHECK_DIR: another folder, for the tests)
G=${GPU_CHECK_DIR:-.gpucheck}
GPU_CALL_MAX=${GPU_CALL_MAX:-570}
# the whole plan must leave the machine's start (one to two minutes) and the gaps between
# calls inside its 15 minutes: 12 minutes of stage limits at most
PLAN_MAX=720

# name call limit_s: what it runs is the function stage_<name> below
PLAN=${GPU_CHECK_PLAN:-"env 1 15
kernels 1 80
trainer 1 240
grad124m 1 60
env 2 15
bench 2 140
large 2 80
eval 2 50"}

plan() {
    local total=0 c1=0 c2=0 bad=0
    printf '%-10s %4s %8s\n' stage call limit_s
    while read -r name call lim; do
        printf '%-10s %4s %8s\n' "$name" "$call" "$lim"
        total=$((total + lim))
        [ "$call" = 1 ] && c1=$((c1 + lim))
        [ "$call" = 2 ] && c2=$((c2 + lim))
    done <<<"$PLAN"
    echo "call 1: ${c1} s, call 2: ${c2} s (each under $GPU_CALL_MAX s); all stages: ${total} s (under $PLAN_MAX s)"
    [ $c1 -lt "$GPU_CALL_MAX" ] && [ $c2 -lt "$GPU_CALL_MAX" ] || { echo "plan: a call is over $GPU_CALL_MAX s"; bad=1; }
    [ $total -lt $PLAN_MAX ] || { echo "plan: the stages add up to $PLAN_MAX s or more"; bad=1; }
    return $bad
}

# ---- here: build and collect ------------------------------------------------------------

# the libraries every machine has (the C library, the compiler's runtime) and the CUDA ones
# the machine's image brings (too large to carry: cuBLASLt alone is 500 MB)
SYSTEM_LIBS='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libcudnn.*|libnccl|libnvrtc|libnvidia-ml)\.so'
# libraries sluice loads with dlopen, which ldd does not list: none that training or
# evaluation loads (libcurl, libarchive, libxml2 and libcrypto serve download and extract;
# libxml2's ICU data alone is 30 MB), so none is carried; name one here if a stage needs it
LOADED_LIBS=""

collect_libs() { # FILE...: copy the shared libraries they need (and dlopen) into $G/lib
    local f so path
    mkdir -p "$G/lib"
    for so in $LOADED_LIBS; do
        path=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }')
        [ -n "$path" ] && cp -L "$path" "$G/lib/$so" && set -- "$@" "$path"
    done
    for f in "$@"; do
        ldd "$f" | awk '/=> \// { print $1, $3 }' | while read -r so path; do
            [[ $so =~ $SYSTEM_LIBS ]] && continue
            [ -e "$G/lib/$so" ] || cp -L "$path" "$G/lib/$so"
        done
    done
}

prepare() {
    local b=build-h100 f llmc size tree
    echo "== build: make WERROR=1 BUILD=$b CUDA_ARCHS=90 (nice -n 19)"
    nice -n 19 make -j"$(nproc)" --no-print-directory WERROR=1 BUILD=$b CUDA_ARCHS=90 all ||
        { echo "prepare: the build failed"; return 1; }
    rm -rf "$G" && mkdir -p "$G/build" "$G/lib"
    for f in sluice libsluice-cxx.so libsluice-mpi.so libsluice-gpu.so test_kernels; do
        [ -e "$b/$f" ] && cp "$b/$f" "$G/build/"
    done
    [ -e "$G/build/libsluice-gpu.so" ] || { echo "prepare: no libsluice-gpu.so (no CUDA here?)"; return 1; }
    strip --strip-debug "$G"/build/*
    collect_libs "$G"/build/*
    if [ -n "${LLMC_DIR:-}" ] && [ -x "$LLMC_DIR/train_gpt2cu" ]; then
        mkdir -p "$G/llmc" && cp "$LLMC_DIR/train_gpt2cu" "$G/llmc/"
        collect_libs "$G/llmc/train_gpt2cu"
        # built with cuDNN attention: it links libcudnn (the benchmark's label)
        ldd "$G/llmc/train_gpt2cu" | grep -q libcudnn && touch "$G/llmc/with-cudnn"
        llmc="llm.c: $LLMC_DIR/train_gpt2cu carried ($(ldd "$G/llmc/train_gpt2cu" | grep -c nvidia-ml) NVML links)"
    else
        llmc="llm.c: absent (LLMC_DIR ${LLMC_DIR:+'$LLMC_DIR' has no train_gpt2cu}${LLMC_DIR:-is not set}): the benchmark will say 'llm.c: not comparable'; bench/train_gpu.sh's header has the recipe"
    fi
    echo "$llmc"
    echo "carried libraries: $(cd "$G/lib" && ls | tr '\n' ' ')"
    size=$(du -sb "$G" | cut -f1)
    tree=$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
    echo "size: $G $((size / 1048576)) MiB + working tree $((tree / 1048576)) MiB = $(((size + tree) / 1048576)) MiB (limit 64)"
    [ $((size + tree)) -lt $((64 * 1048576)) ] || { echo "prepare: over 64 MiB"; return 1; }
}

# ---- there: the stages -------------------------------------------------------------------

# LD_LIBRARY_PATH for the carried build: the CUDA libraries the image has wherever it keeps
# them, and of the carried ones only those the machine lacks (an older copy of a library it
# has would shadow it for every program started, Python's too)
known() { ldconfig -p | awk '{ print $1 }' | grep -qxF "$1"; } # SONAME: in the loader's cache
libpath() {
    local d so need=$G/need
    rm -rf "$need" && mkdir -p "$need"
    LIBPATH=$need
    for so in libcudart.so.13 libcublasLt.so.13 libnvrtc.so.13 libnccl.so.2 libcudnn.so.9; do
        known "$so" && continue
        # the toolkit's folders, then the Python packages' (nvidia-cudnn-cu13, nvidia-nccl-cu13);
        # a search of the disk only on a machine with a GPU
        d=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
            /usr/lib/x86_64-linux-gnu /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib \
            /opt/*/lib/python3*/site-packages/nvidia/*/lib \
            /usr/local/lib/python3*/dist-packages/nvidia/*/lib 2>/dev/null |
            while read -r d; do [ -e "$d/$so" ] && echo "$d/$so" && break; done)
        [ -z "$d" ] && command -v nvidia-smi >/dev/null &&
            d=$(timeout 20 find /usr /opt -name "$so" 2>/dev/null | head -1)
        [ -n "$d" ] && LIBPATH="$LIBPATH:$(dirname "$d")"
    done
    for _ in 1 2 3 4; do
        for so in $(LD_LIBRARY_PATH=$LIBPATH ldd "$G"/build/* "$G"/llmc/* 2>/dev/null | awk '/not found/ { print $1 }' | sort -u); do
            [ -e "$G/lib/$so" ] && ln -sf "$G/lib/$so" "$need/$so"
        done
    done
    for so in $LOADED_LIBS; do
        known "$so" || { [ -e "$G/lib/$so" ] && ln -sf "$G/lib/$so" "$need/$so"; }
    done
    export LD_LIBRARY_PATH=$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

stage_env() {
    local f bad=0
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader ||
        { echo "env: nvidia-smi found no GPU"; bad=1; }
    nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/cuda driver api \1/p'
    command -v nvcc >/dev/null && nvcc --version | tail -2 | head -1
    echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    echo "carried libraries in use: $(ls "$G/need" | tr '\n' ' ')"
    echo "mpirun: $(command -v mpirun || echo absent)  ncu: $(command -v ncu || echo absent)  nsys: $(command -v nsys || echo absent)"
    for f in "$G"/build/* "$G"/llmc/*; do
        [ -e "$f" ] || continue
        if ldd "$f" | grep 'not found'; then echo "  ^ $f"; bad=1; fi
        ldd "$f" | grep -E 'libcudnn|libnccl|libcublasLt|libcudart' | sed "s|^|  $(basename "$f"): |"
    done
    "$G/build/sluice" --version
    return $bad
}
stage_kernels() { TEST_GPU_PARTS=kernels tests/gpu/run.sh "$G/build"; }
stage_trainer() { TEST_GPU_PARTS=trainer tests/gpu/run.sh "$G/build"; }
stage_eval() { TEST_GPU_PARTS=eval tests/gpu/run.sh "$G/build"; }
# the 124M gradient gap: the first step at micro-batch 4 (where the first GPU run saw the
# gradient norm 5% apart), every tensor GPU against CPU, worst first
stage_grad124m() {
    local dev w=$OUTDIR/g124
    for dev in cpu cuda; do
        "$G/build/sluice" train configs/models/gpt2-124m.yaml \
            data.prefix=tests/fixtures/tinyshakespeare/tinyshakespeare_text_document \
            data.cache_dir="$w/cache" train.steps=1 eval.interval=0 train.micro_batch_size=4 \
            train.global_batch_size=4 train.device=$dev train.resume=none log.file="$w/$dev.jsonl" \
            train.dump_grads="$w/grads-$dev" 2>"$w/$dev.err" >/dev/null || { tail -3 "$w/$dev.err"; return 1; }
        grep -h '"train"' "$w/$dev.jsonl"
    done
    python3 tests/oracle/grad_compare.py --rtol 0.05 "$w/grads-cuda/grads-step-000001.safetensors" \
        "$w/grads-cpu/grads-step-000001.safetensors"
}
stage_bench() {
    local llmc=()
    [ -x "$G/llmc/train_gpt2cu" ] && llmc=(LLMC_DIR="$G/llmc" LLMC_CUDNN=$([ -e "$G/llmc/with-cudnn" ] && echo 1))
    env "${llmc[@]}" SECTIONS=gpt2 B=16 STEPS=40 KEEP="$OUTDIR/bench16" bench/train_gpu.sh "$G/build/sluice"
    env "${llmc[@]}" SECTIONS=gpt2 B=32 STEPS=30 KEEP="$OUTDIR/bench32" bench/train_gpu.sh "$G/build/sluice"
}
stage_large() { SECTIONS=large KEEP="$OUTDIR/large" bench/train_gpu.sh "$G/build/sluice"; }

run_call() {
    local call=$1 name c lim t0 rc summary="" worst=0
    G=$(cd "$G" && pwd) || return 1
    export GPU_CHECK_DIR=$G
    # the stages write under a scratch folder (a 124M gradient dump is 500 MB); what comes
    # back is one archive of their logs and the summary (the machine returns 8 files at most)
    local out=${2:-$G/out}
    mkdir -p "$out" || return 1
    OUTDIR=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-XXXXXX")
    mkdir -p "$OUTDIR/g124"
    libpath
    while read -r name c lim; do
        [ "$c" = "$call" ] || continue
        echo "== stage $name (limit ${lim} s)"
        t0=$SECONDS
        # a stage runs in a child bash so that timeout can stop it and all it started
        timeout -k 5 "$lim" bash -c "source '$root/scripts/gpu-check.sh' --lib; OUTDIR='$OUTDIR'; stage_$name" \
            2>&1 | tee "$OUTDIR/$name.log"
        rc=${PIPESTATUS[0]}
        [ $rc = 0 ] || worst=1
        line="STAGE $name rc=$rc t=$((SECONDS - t0))s$([ $rc = 124 ] && echo " (cut at its limit)")"
        echo "$line"
        summary+="$line"$'\n'
    done <<<"$PLAN"
    tar czf "$out/gpu-check-call$call.tgz" --exclude='*.safetensors' --exclude=cache -C "$OUTDIR" .
    {
        grep -h '^test-gpu: ' "$OUTDIR"/*.log 2>/dev/null
        printf '%s' "$summary"
    } | tee "$out/gpu-check-call$call.txt"
    rm -rf "$OUTDIR"
    return $worst
}

case ${1:-} in
--lib) return 0 2>/dev/null || exit 0 ;;
--plan) plan ;;
--prepare) plan >/dev/null || { plan; exit 1; }; prepare ;;
--run) [ "${2:-}" = 1 ] || [ "${2:-}" = 2 ] || { echo "usage: scripts/gpu-check.sh --run 1|2 [OUT]" >&2; exit 2; }
    run_call "$2" "${3:-}" ;;
*) sed -n '9,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
