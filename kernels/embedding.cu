/* Token + learned position embeddings, forward and a deterministic backward.
 *
 * The backward of the token table is a scatter-add. Instead of atomics it sorts the positions
 * by token (CUB stable radix sort), run-length encodes the sorted tokens, and lets one block
 * sum each token's rows in increasing position order: the same bits on every run.
 */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

template <int VEC>
__global__ void embedding_fwd_kernel(bf16 *out, const int32_t *tokens, const bf16 *wte,
                                     const bf16 *wpe, int T, int C, int V, size_t units)
{
    const int per_row = C / VEC;
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        size_t n = u / per_row;
        int c = (int)(u % per_row) * VEC;
        int v = tokens[n];
        float a[VEC];
        if (v < 0 || v >= V) {
#pragma unroll
            for (int i = 0; i < VEC; i++)
                a[i] = __int_as_float(0x7fc00000); /* NaN */
        } else {
            loadv<VEC>(a, wte + (size_t)v * C + c);
            if (wpe) {
                float p[VEC];
                loadv<VEC>(p, wpe + (size_t)(n % T) * C + c);
#pragma unroll
                for (int i = 0; i < VEC; i++)
                    a[i] += p[i];
            }
        }
        storev<VEC>(out + n * C + c, a);
    }
}

extern "C" void embedding_fwd(sl_bf16 *out, const int32_t *tokens, const sl_bf16 *wte,
                              const sl_bf16 *wpe, int B, int T, int C, int V, cudaStream_t st)
{
    size_t N = (size_t)B * T;
    if (!N || !C)
        return;
    bool vec = C % 8 == 0 && is_aligned16(out) && is_aligned16(wte) && (!wpe || is_aligned16(wpe));
    if (vec) {
        size_t units = N * (C / 8);
        unsigned int grid = grid_for(units);
        embedding_fwd_kernel<8><<<grid, 256, 0, st>>>(out, tokens, wte, wpe, T, C, V, units);
    } else {
        size_t units = N * C;
        unsigned int grid = grid_for(units);
        embedding_fwd_kernel<1><<<grid, 256, 0, st>>>(out, tokens, wte, wpe, T, C, V, units);
    }
    CUDA_CHECK_LAUNCH();
}

/* dwpe[t, c..c+VEC) += sum over b of dout[b, t, c..], b in order. */
template <int VEC>
__global__ void embedding_bwd_pos_kernel(bf16 *dwpe, const bf16 *dout, int B, int T, int C)
{
    const int per_row = C / VEC;
    size_t units = (size_t)T * per_row;
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        int t = (int)(u / per_row);
        int c = (int)(u % per_row) * VEC;
        float acc[VEC], x[VEC];
#pragma unroll
        for (int i = 0; i < VEC; i++)
            acc[i] = 0.0f;
        for (int b = 0; b < B; b++) {
            loadv<VEC>(x, dout + ((size_t)b * T + t) * C + c);
#pragma unroll
            for (int i = 0; i < VEC; i++)
                acc[i] += x[i];
        }
        loadv<VEC>(x, dwpe + (size_t)t * C + c);
#pragma unroll
        for (int i = 0; i < VEC; i++)
            acc[i] += x[i];
        storev<VEC>(dwpe + (size_t)t * C + c, acc);
    }
}

__global__ void iota_kernel(int32_t *a, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        a[i] = i;
}

#define EMB_WARPS 8

/* One block per run of equal tokens (grid-stride over the runs, whose number is on the
 * device) and per 32*VEC channels: warp w sums positions start+w, start+w+8, ... in order,
 * then warp 0 adds the 8 warp sums in order and updates dwte. */
template <int VEC>
__global__ void __launch_bounds__(EMB_WARPS * 32)
    embedding_bwd_tok_kernel(bf16 *dwte, const bf16 *dout, const int32_t *pos, const int32_t *uniq,
                             const int32_t *counts, const int32_t *offsets, const int32_t *nruns,
                             int C, int V)
{
    __shared__ float red[EMB_WARPS][32 * VEC];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int c = blockIdx.y * 32 * VEC + lane * VEC;
    const bool active = c < C;
    const int runs = *nruns;
    for (int s = blockIdx.x; s < runs; s += gridDim.x) {
        int v = uniq[s];
        int start = offsets[s], cnt = counts[s];
        float acc[VEC];
#pragma unroll
        for (int i = 0; i < VEC; i++)
            acc[i] = 0.0f;
        if (active) {
            for (int k = warp; k < cnt; k += EMB_WARPS) {
                float x[VEC];
                loadv<VEC>(x, dout + (size_t)pos[start + k] * C + c);
#pragma unroll
                for (int i = 0; i < VEC; i++)
                    acc[i] += x[i];
            }
        }
#pragma unroll
        for (int i = 0; i < VEC; i++)
            red[warp][lane * VEC + i] = acc[i];
        __syncthreads();
        if (warp == 0 && active && v >= 0 && v < V) {
            float sum[VEC], old[VEC];
#pragma unroll
            for (int i = 0; i < VEC; i++)
                sum[i] = red[0][lane * VEC + i];
            for (int w = 1; w < EMB_WARPS; w++) {
#pragma unroll
                for (int i = 0; i < VEC; i++)
                    sum[i] += red[w][lane * VEC + i];
            }
            bf16 *row = dwte + (size_t)v * C + c;
            loadv<VEC>(old, row);
#pragma unroll
            for (int i = 0; i < VEC; i++)
                old[i] += sum[i];
            storev<VEC>(row, old);
        }
        __syncthreads();
    }
}

/* Scratch layout: sorted keys, positions in, positions out, unique keys, counts, offsets,
 * run count, CUB temporary storage; each piece 256-byte aligned. */
struct emb_scratch {
    int32_t *keys, *pos_in, *pos_out, *uniq, *counts, *offsets, *nruns;
    void *temp;
    size_t temp_bytes, total;
};

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

static size_t cub_temp_bytes(int n)
{
    size_t a = 0, b = 0, c = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, a, (const int32_t *)nullptr,
                                               (int32_t *)nullptr, (const int32_t *)nullptr,
                                               (int32_t *)nullptr, n));
    CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, b, (const int32_t *)nullptr,
                                                  (int32_t *)nullptr, (int32_t *)nullptr,
                                                  (int32_t *)nullptr, n));
    CUDA_CHECK(
        cub::DeviceScan::ExclusiveSum(nullptr, c, (const int32_t *)nullptr, (int32_t *)nullptr, n));
    size_t m = a > b ? a : b;
    return m > c ? m : c;
}

static emb_scratch emb_layout(void *base, int n)
{
    emb_scratch s;
    char *p = (char *)base;
    size_t arr = align256((size_t)n * sizeof(int32_t)), off = 0;
    s.keys = (int32_t *)(p + off), off += arr;
    s.pos_in = (int32_t *)(p + off), off += arr;
    s.pos_out = (int32_t *)(p + off), off += arr;
    s.uniq = (int32_t *)(p + off), off += arr;
    s.counts = (int32_t *)(p + off), off += arr;
    s.offsets = (int32_t *)(p + off), off += arr;
    s.nruns = (int32_t *)(p + off), off += 256;
    s.temp = p + off;
    s.temp_bytes = align256(cub_temp_bytes(n));
    s.total = off + s.temp_bytes;
    return s;
}

extern "C" size_t embedding_bwd_scratch_size(int B, int T, int V)
{
    (void)V;
    return emb_layout(nullptr, B * T).total;
}

extern "C" void embedding_bwd(sl_bf16 *dwte, sl_bf16 *dwpe, void *scratch, size_t scratch_bytes,
                              const sl_bf16 *dout, const int32_t *tokens, int B, int T, int C,
                              int V, cudaStream_t st)
{
    const int N = B * T;
    if (!N || !C)
        return;
    bool vec = C % 8 == 0 && is_aligned16(dout) && (!dwte || is_aligned16(dwte)) &&
               (!dwpe || is_aligned16(dwpe));
    if (dwpe) {
        size_t units = (size_t)T * (vec ? C / 8 : C);
        unsigned int grid = grid_for(units);
        if (vec)
            embedding_bwd_pos_kernel<8><<<grid, 256, 0, st>>>(dwpe, dout, B, T, C);
        else
            embedding_bwd_pos_kernel<1><<<grid, 256, 0, st>>>(dwpe, dout, B, T, C);
        CUDA_CHECK_LAUNCH();
    }
    if (!dwte)
        return;
    emb_scratch s = emb_layout(scratch, N);
    if (s.total > scratch_bytes)
        sl_cuda_fatal("kernels", "scratch smaller than embedding_bwd_scratch_size()",
                      "embedding_bwd", __FILE__, __LINE__);
    iota_kernel<<<min((N + 255) / 256, 4096), 256, 0, st>>>(s.pos_in, N);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemsetAsync(s.counts, 0, (size_t)N * sizeof(int32_t), st));
    size_t tb = s.temp_bytes;
    /* all 32 bits: equal tokens end up adjacent even for out-of-range ids */
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.temp, tb, tokens, s.keys, s.pos_in, s.pos_out, N,
                                               0, 32, st));
    tb = s.temp_bytes;
    CUDA_CHECK(
        cub::DeviceRunLengthEncode::Encode(s.temp, tb, s.keys, s.uniq, s.counts, s.nruns, N, st));
    tb = s.temp_bytes;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(s.temp, tb, s.counts, s.offsets, N, st));
    int chunk = 32 * (vec ? 8 : 1);
    dim3 grid((unsigned int)min(N, 2048), (unsigned int)((C + chunk - 1) / chunk));
    if (vec)
        embedding_bwd_tok_kernel<8><<<grid, EMB_WARPS * 32, 0, st>>>(
            dwte, dout, s.pos_out, s.uniq, s.counts, s.offsets, s.nruns, C, V);
    else
        embedding_bwd_tok_kernel<1><<<grid, EMB_WARPS * 32, 0, st>>>(
            dwte, dout, s.pos_out, s.uniq, s.counts, s.offsets, s.nruns, C, V);
    CUDA_CHECK_LAUNCH();
}

/* ---- vocab-parallel: the rank holds rows [v0, v0 + rows) of the token table --------------- */

__global__ void embedding_local_ids_kernel(int32_t *ids, const int32_t *tokens, int v0, int rows,
                                           int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int id = tokens[i] - v0;
        ids[i] = id >= 0 && id < rows ? id : -1;
    }
}

extern "C" void embedding_local_ids(int32_t *ids, const int32_t *tokens, int v0, int rows, int n,
                                    cudaStream_t st)
{
    if (n <= 0)
        return;
    embedding_local_ids_kernel<<<min((n + 255) / 256, 4096), 256, 0, st>>>(ids, tokens, v0, rows,
                                                                           n);
    CUDA_CHECK_LAUNCH();
}

__global__ void embedding_fwd_vp_kernel(bf16 *out, const int32_t *ids, const bf16 *wte, int C,
                                        size_t units)
{
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        size_t n = u / C;
        int c = (int)(u % C), id = ids[n];
        out[u] = id >= 0 ? wte[(size_t)id * C + c] : __float2bfloat16(0.0f);
    }
}

extern "C" void embedding_fwd_vp(sl_bf16 *out, const int32_t *ids, const sl_bf16 *wte, int N, int C,
                                 cudaStream_t st)
{
    size_t units = (size_t)N * C;
    if (!units)
        return;
    embedding_fwd_vp_kernel<<<grid_for(units), 256, 0, st>>>(out, ids, wte, C, units);
    CUDA_CHECK_LAUNCH();
}

__global__ void embedding_pos_add_kernel(bf16 *x, const bf16 *wpe, const int32_t *pos, int row0,
                                         int T, int C, size_t units)
{
    for (size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x; u < units;
         u += (size_t)gridDim.x * blockDim.x) {
        size_t n = u / C;
        int c = (int)(u % C);
        size_t t = pos ? (size_t)pos[row0 + n] : (row0 + n) % T;
        float p = __bfloat162float(wpe[t * C + c]);
        x[u] = __float2bfloat16(__bfloat162float(x[u]) + p);
    }
}

extern "C" void embedding_pos_add(sl_bf16 *x, const sl_bf16 *wpe, int row0, int R, int T, int C,
                                  cudaStream_t st)
{
    size_t units = (size_t)R * C;
    if (!units)
        return;
    embedding_pos_add_kernel<<<grid_for(units), 256, 0, st>>>(x, wpe, nullptr, row0, T, C, units);
    CUDA_CHECK_LAUNCH();
}

extern "C" void embedding_pos_add_at(sl_bf16 *x, const sl_bf16 *wpe, const int32_t *pos, int row0,
                                     int R, int T, int C, cudaStream_t st)
{
    size_t units = (size_t)R * C;
    if (!units)
        return;
    embedding_pos_add_kernel<<<grid_for(units), 256, 0, st>>>(x, wpe, pos, row0, T, C, units);
    CUDA_CHECK_LAUNCH();
}
