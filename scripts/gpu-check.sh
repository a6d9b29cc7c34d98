#!/usr/bin/env bash
# The check for a lent GPU machine (one H100 or H200, or several, 16 cores, no network, about
# 15 minutes of machine time in all including its start, at most 10 minutes a command):
# everything is built here, the machine only runs stages in priority order (environment;
# make test-gpu's kernels, trainer and evaluation; the 124M per-tensor gradient comparison;
# GPT-2 124M against llm.c at B 16 and 32; gpt3-1.3b and the llama3-8b slice; the
# multi-GPU layouts where there are GPUs for them; tokenization's scaling), each under its
# own time limit, each ending with a line "STAGE <name> rc=N t=Ns" so that a run cut short
# still says how far it got. Two calls of the machine: the stages of call 1, then of call 2
# (docs/testing.md, "A lent GPU").
#
# Usage:
#   scripts/gpu-check.sh --plan          the stages, their limits and calls; exit 1 when the
#                                        limits add up to 12 minutes or more, or a call's to
#                                        GPU_CALL_MAX seconds (570: a 600-second command with
#                                        time to spare) or more
#   scripts/gpu-check.sh --prepare       here (make gpu-bundle): build with CUDA_ARCHS=90 and
#                                        warnings as errors into build-h100/, copy what runs
#                                        there into .gpucheck/ (binaries, the shared
#                                        libraries they need that a machine may lack, the
#                                        data of the tokenize stage, llm.c's train_gpt2cu)
#                                        and check that the working tree and .gpucheck/
#                                        travel within 64 MiB. llm.c: built from LLMC_SRC
#                                        (llm.c's sources) and CUDNN_FRONTEND (cudnn-
#                                        frontend's) by the recipe of bench/train_gpu.sh's
#                                        header in LLMC_BUILD (a scratch folder outside the
#                                        repository), or taken built from LLMC_DIR
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

# name call limit_s, in priority order: what it runs is the function stage_<name> below.
# Call 1 is make test-gpu (kernels, trainer, eval) and the 124M gradient comparison at
# micro-batch 4 (a CPU step there took 19 s on 16 cores); call 2 the measurements: GPT-2
# against llm.c at B 16 and 32, the larger models, the layouts where there are GPUs for
# them, tokenization's scaling on the machine's cores last.
PLAN=${GPU_CHECK_PLAN:-"env 1 15
kernels 1 80
trainer 1 240
eval 1 50
grad124m 1 60
env 2 10
bench 2 130
large 2 70
layouts 2 35
tokenize 2 25"}

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

# llm.c's train_gpt2cu by the recipe at the top of bench/train_gpu.sh: the sources of
# LLMC_SRC copied into a scratch folder outside the repository (LLMC_BUILD), patched there,
# built against CUDNN_FRONTEND's headers; LLMC_DIR becomes that folder. Nothing of llm.c
# enters the repository. Skipped (with a line) when the sources are not given.
build_llmc() {
    local w=${LLMC_BUILD:-${TMPDIR:-/tmp}/sluice-llmc-$(id -u)} cuda=${CUDA_HOME:-/usr/local/cuda} major
    if [ -z "${LLMC_SRC:-}" ] || [ ! -e "$LLMC_SRC/train_gpt2.cu" ]; then
        echo "llm.c: not built (LLMC_SRC ${LLMC_SRC:+'$LLMC_SRC' has no train_gpt2.cu}${LLMC_SRC:-is not set})"
        return 0
    fi
    [ -n "${CUDNN_FRONTEND:-}" ] && [ -d "$CUDNN_FRONTEND/include" ] ||
        { echo "llm.c: CUDNN_FRONTEND '${CUDNN_FRONTEND:-}' has no include/ (cudnn-frontend's headers)"; return 1; }
    # a build already there from the same sources is kept (it takes minutes on 2 cores)
    if [ -x "$w/train_gpt2cu" ] && [ -z "$(find "$LLMC_SRC" "$CUDNN_FRONTEND/include" -newer "$w/train_gpt2cu" -type f -print -quit)" ]; then
        echo "llm.c: $w/train_gpt2cu is newer than its sources: kept"
    else
        echo "== llm.c: train_gpt2cu in $w (USE_CUDNN=1 GPU_COMPUTE_CAPABILITY=90, no NVML, no MPI/NCCL)"
        rm -rf "$w" && mkdir -p "$w" && (cd "$LLMC_SRC" && tar cf - --exclude=.git .) | tar xf - -C "$w" || return 1
        ln -s "$(realpath "$CUDNN_FRONTEND")" "$w/cudnn-frontend"
        major=$("$cuda/bin/nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
        if [ "${major:-0}" -ge 13 ]; then
            sed -i 's/cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId)/cudaMemAdviseSetPreferredLocation, (cudaMemLocation){cudaMemLocationTypeHost, 0})/' \
                "$w/llmc/cuda_utils.cuh"
            # any other call with the int device argument would not compile: said by nvcc
        fi
        sed -i 's/^#if __has_include(<nvml.h>)/#if 0/' "$w/llmc/mfu.h"
        PATH=$cuda/bin:$PATH nice -n 19 make -C "$w" --no-print-directory train_gpt2cu USE_CUDNN=1 \
            GPU_COMPUTE_CAPABILITY=90 NO_MULTI_GPU=1 NO_USE_MPI=1 \
            NVCC_LDFLAGS="-lcublas -lcublasLt -lcudnn -lnvrtc -L$cuda/lib64/stubs -lcuda" \
            >"$w/build.log" 2>&1 || { tail -20 "$w/build.log"; echo "llm.c: the build failed ($w/build.log)"; return 1; }
    fi
    ldd "$w/train_gpt2cu" | grep -q nvidia-ml && { echo "llm.c: train_gpt2cu links NVML"; return 1; }
    LLMC_DIR=$w
}

# what bench/tokenize.sh's section 5 reads of shared/data (the stage tokenize), with the
# folders' SOURCE.md (origin and license): 2.6 MB
TOKENIZE_DATA="gpt2-bpe/encoder.json gpt2-bpe/vocab.bpe gpt2-bpe/SOURCE.md
jsonl-corpora/dolma/CC-MAIN-20190717121559-20190717143559-00140.jsonl.zst
jsonl-corpora/dolma/cc_en_head-0091.jsonl.gz jsonl-corpora/dolma/cc_en_head-0174.jsonl.gz
jsonl-corpora/dolma/SOURCE.md"

prepare() {
    local b=build-h100 f llmc size tree data=${SLUICE_DATA:-/work/shared/data}
    build_llmc || return 1
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
    for f in $TOKENIZE_DATA; do
        mkdir -p "$G/data/$(dirname "$f")" && cp "$data/$f" "$G/data/$f" ||
            { echo "prepare: no $data/$f (SLUICE_DATA: the shared data folder)"; return 1; }
    done
    echo "carried libraries: $(cd "$G/lib" && ls | tr '\n' ' ')"
    size=$(du -sb "$G" | cut -f1)
    # the files that travel: summed over every batch xargs makes (du -c's last "total" was
    # only the last batch's: 2 MiB of a 22.5 MiB tree)
    tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
    echo "size: $G $((size / 1048576)) MiB + working tree $((tree / 1048576)) MiB = $(((size + tree) / 1048576)) MiB (limit 64)"
    [ $((size + tree)) -lt $((64 * 1048576)) ] || { echo "prepare: over 64 MiB"; return 1; }
}

# ---- there: the stages -------------------------------------------------------------------

# LD_LIBRARY_PATH for the carried build: the CUDA libraries the image has wherever it keeps
# them, and of the carried ones only those the machine lacks (an older copy of a library it
# has would shadow it for every program started, Python's too)
# the CUDA libraries the build and llm.c load, which the machine's image brings (libpath
# finds them where it keeps them; the environment stage says where)
CUDA_SONAMES="libcudart.so.13 libcublasLt.so.13 libnvrtc.so.13 libnccl.so.2 libcudnn.so.9"
# SONAME: in the loader's cache (awk reads the whole list: a grep -q that stopped at the
# first match would leave ldconfig a broken pipe, which pipefail reads as "not found")
known() { ldconfig -p | awk -v so="$1" '$1 == so { found = 1 } END { exit !found }'; }
libpath() {
    local d so need=$G/need
    rm -rf "$need" && mkdir -p "$need"
    LIBPATH=$need
    for so in $CUDA_SONAMES; do
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
    # the Debian libraries sluice links: the machine's own, or carried (in use where it lacks them)
    local have="" lack="" so
    for so in "$G"/lib/*; do
        [ -e "$so" ] || continue
        so=${so##*/}
        if known "$so"; then have+=" $so"; else lack+=" $so"; fi
    done
    echo "debian libraries the machine has:${have:- none}"
    echo "debian libraries it lacks (carried, in use):${lack:- none}"
    for so in $CUDA_SONAMES; do
        if known "$so"; then have=system
        else
            have=absent
            for f in ${LD_LIBRARY_PATH//:/ }; do [ -e "$f/$so" ] && have=$f && break; done
        fi
        echo "cuda library $so: $have"
    done
    # the gradient comparison and the benchmark's llm.c tokens need numpy
    echo "python3: $(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || echo absent)  numpy: $(python3 -c 'import numpy; print(numpy.__version__)' 2>/dev/null || echo absent)  zstd: $(command -v zstd || echo absent)"
    echo "mpirun: $(command -v mpirun || echo absent)  ncu: $(command -v ncu || echo absent)  nsys: $(command -v nsys || echo absent)"
    # every carried binary's ldd, whole, into the logs; here what it lacks and the CUDA ones
    for f in "$G"/build/* "$G"/llmc/*; do
        [ -f "$f" ] && [ -x "$f" ] || [[ $f == *.so ]] || continue
        { echo "== ldd $f"; ldd "$f"; } >>"${OUTDIR:-/tmp}/ldd.txt" 2>&1
        if ldd "$f" 2>/dev/null | grep 'not found'; then echo "  ^ $f"; bad=1; fi
        ldd "$f" 2>/dev/null | grep -E 'libcudnn|libnccl|libcublasLt|libcudart|libnvrtc' | sed "s|^|  $(basename "$f"): |"
    done
    echo "ldd of every carried binary: ldd.txt in the archive"
    "$G/build/sluice" --version
    return $bad
}
stage_kernels() { TEST_GPU_PARTS=kernels tests/gpu/run.sh "$G/build"; }
stage_trainer() { TEST_GPU_PARTS=trainer tests/gpu/run.sh "$G/build"; }
stage_eval() { TEST_GPU_PARTS=eval tests/gpu/run.sh "$G/build"; }
# the 124M gradient gap: t_train_gpu.sh's per-tensor comparison of GPT-2 124M alone, at
# micro-batch 4 (where the first GPU run saw the gradient norm 5% apart), worst tensor first
stage_grad124m() {
    TRAIN_GPU_ONLY=g124 G124_MICRO_BATCH=4 SLUICE="$G/build/sluice" SLUICE_BUILD="$G/build" \
        tests/cli/run.sh tests/gpu/t_train_gpu.sh
}
stage_bench() {
    local llmc=()
    [ -x "$G/llmc/train_gpt2cu" ] && llmc=(LLMC_DIR="$G/llmc" LLMC_CUDNN=$([ -e "$G/llmc/with-cudnn" ] && echo 1))
    env "${llmc[@]}" SECTIONS=gpt2 B=16 STEPS=40 KEEP="$OUTDIR/bench16" bench/train_gpu.sh "$G/build/sluice"
    env "${llmc[@]}" SECTIONS=gpt2 B=32 STEPS=30 KEEP="$OUTDIR/bench32" bench/train_gpu.sh "$G/build/sluice"
}
stage_large() { SECTIONS=large KEEP="$OUTDIR/large" bench/train_gpu.sh "$G/build/sluice"; }
# scripts/gpu-layouts.sh's layouts of at most as many ranks as there are GPUs, one rank a
# GPU; on one GPU none (gpu-layouts.sh --run shares one GPU among the ranks, in a call of
# its own: its 420 s do not fit beside the rest)
stage_layouts() {
    local n
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    if [ "${n:-0}" -lt 2 ]; then
        echo "SKIP layouts: ${n:-0} GPU(s); the layouts need one a rank (scripts/gpu-layouts.sh --run shares one, in a call of its own)"
        return 0
    fi
    GPU_LAYOUTS_MAX_RANKS=$n scripts/gpu-layouts.sh --run "$OUTDIR/layouts"
}
# bench/tokenize.sh's section 5: -j and ranks 1 to 16 over the carried corpus, one round
stage_tokenize() {
    command -v zstd >/dev/null || { echo "SKIP tokenize: no zstd on this machine (section 5 compresses its corpus)"; return 0; }
    SLUICE_DATA="$G/data" SLUICE_BIN="$G/build/sluice" SECTIONS=5 JOBS="1 2 4 8 16" \
        RANKS="1 2 4 8 16" SCALE_COPIES=16 bench/tokenize.sh 1
}

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
        # the counts, verdicts and rows each stage ends with
        grep -h '^test-gpu: \|^t_train_gpu.sh: \|^LAYOUT \|^SKIP \|^GPT-2, \|MFU' "$OUTDIR"/*.log 2>/dev/null
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
*) sed -n '11,32p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
