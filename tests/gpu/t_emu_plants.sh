#!/usr/bin/env bash
# make test-gpu-emu-plants: bugs of the kinds a first GPU run finds, planted one at a time into
# a copy of the kernels, built over the CUDA emulation (kernels/emu/) and run with the kernel
# group that should catch each, in the natural, reversed and shuffled orders (a group that
# launches no kernel, gemm, in the natural order only). The copy without
# a plant must pass those groups; each plant must make its group fail in at least one order (failed
# checks, or the emulation stopping the kernel). A plant whose text is no longer in the source
# fails too, so the list follows the code. Ends with "t_emu_plants: N caught, N missed".
# The group "trainer" plants into train/gpu_*.c instead: the copy's build/emu/libsluice-gpu-emu.so
# runs one step of tiny-llama under $SLUICE (default build/sluice), which must pass unplanted;
# at ZeRO-3, whose reduction and gathers move data on the communication stream even on one
# rank (ZeRO-1's one-rank reduce-scatter is in place: nothing for a missing wait to race with).
# Usage: tests/gpu/t_emu_plants.sh [PLANT_NAME]
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
only=${1:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sl-emu-plants.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src
SLUICE=${SLUICE:-$root/build/sluice}
mkdir -p "$src/kernels" "$src/tests/gpu" "$src/train"
cp "$root"/kernels/*.cu "$root"/kernels/*.h "$src/kernels/"
cp "$root"/train/gpu_*.c "$root"/train/docmask.c "$src/train/"
cp "$root"/tests/gpu/test_kernels.c "$root"/tests/gpu/common.h "$src/tests/gpu/"

# name | file | group | perl substitution (applied once to the whole file) [| asan: build and
# run under AddressSanitizer + UndefinedBehaviorSanitizer]
plants=(
"warp reduction from the wrong offset|kernels/cuda_common.h|util|s/(float warp_sum\(float v\)\n\{\n#pragma unroll\n    for \(int o = )16/\${1}8/"
"no barrier between a shared write and read|kernels/cuda_common.h|util|s/(        smem\[warp\] = v;\n)    __syncthreads\(\);\n(    v = lane < nwarps \? smem\[lane\] : 0\.0f;)/\$1\$2/"
"two mma A fragment registers swapped|kernels/attention.cu|attention|s/a\[1\] = lds32\(p1\);\n    a\[2\] = lds32\(p0 \+ 8\);/a[1] = lds32(p0 + 8);\n    a[2] = lds32(p1);/"
"shared-memory opt-in 16 bytes too small|kernels/attention.cu|attention|s/MaxDynamicSharedMemorySize, \(int\)smem\)/MaxDynamicSharedMemorySize, (int)smem - 16)/"
"threads past the end return before a shuffle|kernels/util.cu|global_norm|s/(    size_t nchunks = \(n \+ 7\) \/ 8;\n    float acc = 0\.0f;\n)/\$1    if (blockIdx.x * (size_t)blockDim.x + threadIdx.x >= nchunks)\n        return;\n/"
"a block of 2048 threads|kernels/util.cu|util|s/sum_f32_kernel<<<1, 1024, 0, st>>>/sum_f32_kernel<<<1, 2048, 0, st>>>/"
"a vectorised tail reading past the end|kernels/util.cu|util|s/if \(vec && i \+ 8 <= n\) \{\n            float x\[8\], y\[8\];/if (vec) {\n            float x[8], y[8];/|asan"
"a barrier only lane 0 reaches|kernels/cuda_common.h|util|s/(float block_sum\(float v, float \*smem\)\n\{\n[^\n]*\n[^\n]*\n)(    v = warp_sum\(v\);)/\$1    if (lane == 0)\n        __syncthreads();\n\$2/"
"a key of another document in dK and dV|kernels/attention.cu|attention_docs|s/key < sS\[ql\]\)/key < 0)/"
"the query tiles past a key block's documents cut one too early|kernels/attention.cu|attention_docs|s/ds\[\(nqt - 1\) \* ATT_TILE\] > klast/ds[(nqt - 1) * ATT_TILE] >= klast - ATT_TILE/"
"a cuBLASLt transpose flag flipped|kernels/gemm.cu|gemm|s/cublasOperation_t opa = key->ta \? CUBLAS_OP_T : CUBLAS_OP_N;/cublasOperation_t opa = key->ta ? CUBLAS_OP_N : CUBLAS_OP_T;/"
"the ZeRO reduce-scatter not waiting for the gradient|train/gpu_zero.c|trainer|s/    CUDA_CHECK\(cudaStreamWaitEvent\(t->comm, t->ev_grad, 0\)\);\n//"
"the optimizer not waiting for the reduce-scatter|train/gpu_zero.c|trainer|s/(void gpu_reduce_stats\(struct gt \*t\)\n\{\n    CUDA_CHECK\(cudaEventRecord\(t->ev_comm, t->comm\)\);\n)    CUDA_CHECK\(cudaStreamWaitEvent\(t->st, t->ev_comm, 0\)\);\n/\1/"
"a staging buffer reused before its reduction is done|train/gpu_zero.c|trainer|s/    CUDA_CHECK\(cudaStreamWaitEvent\(t->st, t->ev_sfree\[x\], 0\)\);\n//"
"a layer's weights used before their gather is done|train/gpu_zero.c|trainer|s/    CUDA_CHECK\(cudaStreamWaitEvent\(t->st, t->ev_gathered\[x\], 0\)\);\n//"
)
# the groups that launch no kernel of their own (tests/gpu/run_emu.sh): natural order only
natural_only=" gemm trainer "

build() { # [asan] [GROUP: the trainer's plugin too for trainer or all]
    local b=$tmp/build san=() targets
    [ "${1:-}" = asan ] && b=$tmp/build-asan san=(SANITIZE=1 CUDA=0)
    targets=("$b/emu/test_kernels")
    case ${2:-} in trainer | all) targets+=("$b/emu/libsluice-gpu-emu.so") ;; esac
    make -C "$root" --no-print-directory -j2 BUILD="$b" EMU_SRC="$src" "${san[@]}" \
        "${targets[@]}" > "$tmp/build.log" 2>&1
}

# one line on how a group run ended: "passes", "N checks fail", or the emulation's message
outcome() { # group order [asan]
    local out status b=$tmp/build
    [ "${3:-}" = asan ] && b=$tmp/build-asan
    if [ "$1" = trainer ]; then
        out=$(SLUICE_GPU_LIB="$b/emu/libsluice-gpu-emu.so" "$SLUICE" train \
              "$root/configs/models/tiny-llama.yaml" data=synthetic model.vocab_size=512 \
              train.seq_len=32 train.micro_batch_size=2 train.global_batch_size=4 train.steps=1 \
              eval.interval=0 train.device=cuda optim.zero=3 2>&1)
    else
        out=$(SL_CUDA_EMU_STRICT=$2 "$b/emu/test_kernels" --group "$1" 2>&1)
    fi
    status=$?
    local f
    f=$(echo "$out" | sed -n "s/^ *$1: [0-9]* passed, \([0-9]*\) failed.*/\1/p")
    if [ $status -eq 0 ]; then
        echo "passes"
    elif [ -n "$f" ] && [ "$f" != 0 ]; then
        echo "$f checks fail"
    elif echo "$out" | grep -q 'ERROR: AddressSanitizer'; then
        echo "stops: $(echo "$out" | grep -m1 -o 'AddressSanitizer: [a-z-]*') in" \
             "$(echo "$out" | grep -m1 -o '#0 0x[0-9a-f]* in [A-Za-z_0-9]*' | sed 's/.* in //')"
    elif echo "$out" | grep -q 'cuda-emu: launch of'; then
        echo "$out" | grep -m1 -o 'cuda-emu: launch of.*' | sed 's/^cuda-emu: /refused: /' |
            cut -c1-150
    else
        echo "$out" | grep -m1 -o 'fatal: .*' | sed "s/^fatal: cuda-emu error '\([^']*\)' in \(kernel '[^']*'\).*/stops: \1 (\2)/; s/^fatal: cuda-emu error '\([^']*\)' in stream order.*/stops: \1/; s/^fatal: //" | cut -c1-200
    fi
}

caught=0
missed=0
if ! build "" all; then
    tail -20 "$tmp/build.log"
    echo "FAIL the copy without a plant does not build"
    echo "t_emu_plants: 0 caught, 1 missed"
    exit 1
fi
for g in $(printf '%s\n' "${plants[@]}" | cut -d'|' -f3 | sort -u); do
    r=$(outcome "$g" 0)
    if [ "$r" != passes ]; then
        echo "FAIL the copy without a plant: group $g: $r"
        missed=$((missed + 1))
    fi
done
for p in "${plants[@]}"; do
    IFS='|' read -r name file group expr san <<< "$p"
    [ -n "$only" ] && [[ $name != *"$only"* ]] && continue
    cp "$root/$file" "$src/$file"
    if ! perl -0777 -i -pe "BEGIN { \$n = 0 } \$n += ($expr); END { exit(\$n == 1 ? 0 : 1) }" \
         "$src/$file"; then
        echo "FAIL plant '$name': its text is not in $file"
        missed=$((missed + 1))
        cp "$root/$file" "$src/$file"
        continue
    fi
    if ! build "$san" "$group"; then
        echo "FAIL plant '$name': the planted copy does not build"
        tail -5 "$tmp/build.log"
        missed=$((missed + 1))
    else
        natural=$(outcome "$group" 0 "$san")
        reversed=passes
        shuffled=passes
        if [[ $natural_only != *" $group "* ]]; then
            reversed=$(outcome "$group" reversed "$san")
            shuffled=$(outcome "$group" shuffled "$san")
        fi
        if [ "$natural$reversed$shuffled" = passespassespasses ]; then
            echo "FAIL plant '$name': group $group passes in every order"
            missed=$((missed + 1))
        else
            echo "ok   plant '$name' ($file, group $group${san:+, under ASan+UBSan})"
            echo "       natural:  $natural"
            if [[ $natural_only != *" $group "* ]]; then
                echo "       reversed: $reversed"
                echo "       shuffled: $shuffled"
            fi
            caught=$((caught + 1))
        fi
    fi
    cp "$root/$file" "$src/$file"
done
echo "t_emu_plants: $caught caught, $missed missed"
[ $missed -eq 0 ]
