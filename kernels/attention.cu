/* Our causal flash attention with grouped-query heads, on the tensor cores through
 * mma.sync.m16n8k16 (bf16 in, fp32 accumulate), and the run-time choice between it and
 * cuDNN (kernels/attention_cudnn.cu).
 *
 * Tiles are 64 queries x 64 keys; a block has 4 warps, each owning 16 rows of the tile.
 * Forward: online softmax in the log2 domain, P rounded to bf16 for the P.V product, the
 * log-sum-exp kept for the backward. Backward (FlashAttention-2 style, no atomics, so the
 * bits are reproducible): a preprocessing kernel computes delta = rowsum(dO * O); one kernel
 * per key block accumulates dK and dV over every query tile and every query head of its
 * group; another per query block accumulates dQ over the key tiles.
 *
 * mma fragment layout (PTX ISA, m16n8k16, g = lane/4, q = lane%4):
 *   A 16x16: a0 = A[g][2q..2q+1], a1 = A[g+8][2q..], a2 = A[g][2q+8..], a3 = A[g+8][2q+8..]
 *   B 16x8:  b0 = B[2q..2q+1][g], b1 = B[2q+8..2q+9][g]
 *   C 16x8:  c0,c1 = C[g][2q..2q+1], c2,c3 = C[g+8][2q..2q+1]
 * B operands whose k index runs along rows of a shared tile are read with ldmatrix.trans.
 */
#include <math.h>
#include <stdlib.h>

#include "kernels/attention.h"
#include "kernels/cuda_common.h"

#define ATT_THREADS 128
#define ATT_TILE    64
#define LOG2E_F     1.4426950408889634f
#define LN2_F       0.6931471805599453f

__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
#ifdef SL_CUDA_EMU /* an exchange among the warp's lanes (kernels/emu/emu.h) */
    sl_emu_mma_m16n8k16_bf16(c, a, b0, b1);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* Two floats as a bf16 pair: `lo` in the low half (the smaller column index). */
__device__ __forceinline__ uint32_t pack2(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

__device__ __forceinline__ uint32_t lds32(const bf16 *p)
{
    return *reinterpret_cast<const uint32_t *>(p);
}

/* B fragment for k along the rows of a [rows][P] tile: rows k0..k0+15, columns n0..n0+7. */
__device__ __forceinline__ void ldsm_x2_trans(uint32_t &b0, uint32_t &b1, const bf16 *tile, int P,
                                              int k0, int n0, int lane)
{
    const bf16 *p = tile + (k0 + (lane & 15)) * P + n0;
#ifdef SL_CUDA_EMU /* an exchange among the warp's lanes (kernels/emu/emu.h) */
    sl_emu_ldmatrix_x2_trans(b0, b1, p);
#else
    uint32_t addr = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(b0), "=r"(b1)
                 : "r"(addr));
#endif
}

/* A fragment: rows r0..r0+15 of a [rows][P] tile, k slab kk (columns 16kk..16kk+15). */
__device__ __forceinline__ void lds_a(uint32_t a[4], const bf16 *tile, int P, int r0, int kk, int g,
                                      int q)
{
    const bf16 *p0 = tile + (r0 + g) * P + kk * 16 + 2 * q;
    const bf16 *p1 = p0 + 8 * P;
    a[0] = lds32(p0);
    a[1] = lds32(p1);
    a[2] = lds32(p0 + 8);
    a[3] = lds32(p1 + 8);
}

/* B fragment with k along the columns of a [rows][P] tile: n rows n0..n0+7, k slab kk. */
__device__ __forceinline__ void lds_b(uint32_t &b0, uint32_t &b1, const bf16 *tile, int P, int n0,
                                      int kk, int g, int q)
{
    const bf16 *p = tile + (n0 + g) * P + kk * 16 + 2 * q;
    b0 = lds32(p);
    b1 = lds32(p + 8);
}

/* A fragment of a 16x16 slab (columns 16s..16s+15) of a 16x64 C-layout accumulator. */
__device__ __forceinline__ void c_to_a(uint32_t a[4], const float c[8][4], int s)
{
    a[0] = pack2(c[2 * s][0], c[2 * s][1]);
    a[1] = pack2(c[2 * s][2], c[2 * s][3]);
    a[2] = pack2(c[2 * s + 1][0], c[2 * s + 1][1]);
    a[3] = pack2(c[2 * s + 1][2], c[2 * s + 1][3]);
}

/* Copy 64 rows (t0..t0+63, zero beyond T) of D bf16 each into a [64][D+8] tile. */
template <int D>
__device__ __forceinline__ void load_tile(bf16 *tile, const bf16 *src, size_t stride, int t0, int T)
{
    constexpr int P = D + 8, CPR = D / 8;
    for (int c = threadIdx.x; c < ATT_TILE * CPR; c += ATT_THREADS) {
        const int r = c / CPR, k = (c % CPR) * 8, t = t0 + r;
        int4 v = make_int4(0, 0, 0, 0);
        if (t < T)
            v = *reinterpret_cast<const int4 *>(src + (size_t)t * stride + k);
        *reinterpret_cast<int4 *>(tile + r * P + k) = v;
    }
}

__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

/* ---- forward ------------------------------------------------------------------------- */

template <int D>
__global__ void __launch_bounds__(ATT_THREADS)
    attn_fwd_kernel(bf16 *out, float *lse, const bf16 *qkv, const int *dstart, int T, int Hq,
                    int Hkv, float sl2)
{
    constexpr int P = D + 8, KS = D / 16, ND = D / 8;
    __shared__ __align__(16) bf16 sK[ATT_TILE * P];
    __shared__ __align__(16) bf16 sV[ATT_TILE * P];
    const int qb = gridDim.x - 1 - blockIdx.x; /* the longest rows first */
    const int h = blockIdx.y, b = blockIdx.z, hk = h / (Hq / Hkv);
    const size_t S3 = (size_t)(Hq + 2 * Hkv) * D;
    const bf16 *base = qkv + (size_t)b * T * S3;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const int q0 = qb * ATT_TILE;

    /* the warp's 16 query rows, as A fragments, staged through sK */
    load_tile<D>(sK, base + (size_t)h * D, S3, q0, T);
    __syncthreads();
    uint32_t qf[KS][4];
#pragma unroll
    for (int kk = 0; kk < KS; kk++)
        lds_a(qf[kk], sK, P, warp * 16, kk, g, q);

    float o[ND][4];
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
        o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const int row0 = q0 + warp * 16 + g, row1 = row0 + 8;
    /* documents: row r attends from ds[r]; the tile's first row starts the earliest */
    const int *ds = dstart ? dstart + (size_t)b * T : NULL;
    const int first0 = ds && row0 < T ? ds[row0] : 0, first1 = ds && row1 < T ? ds[row1] : 0;

    for (int kt = ds ? ds[q0] / ATT_TILE : 0; kt <= qb; kt++) {
        const int k0 = kt * ATT_TILE;
        __syncthreads(); /* everyone is done with the previous sK/sV (and the Q staging) */
        load_tile<D>(sK, base + (size_t)(Hq + hk) * D, S3, k0, T);
        load_tile<D>(sV, base + (size_t)(Hq + Hkv + hk) * D, S3, k0, T);
        __syncthreads();

        float s[8][4];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KS; kk++) {
                uint32_t b0, b1;
                lds_b(b0, b1, sK, P, j * 8, kk, g, q);
                mma16816(s[j], qf[kk], b0, b1);
            }
        }
        const bool need_mask = kt == qb || k0 + ATT_TILE > T || ds;
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float x = s[j][e] * sl2;
                if (need_mask) {
                    const int col = k0 + j * 8 + 2 * q + (e & 1);
                    const int row = e < 2 ? row0 : row1;
                    if (col > row || col >= T || col < (e < 2 ? first0 : first1))
                        x = -INFINITY;
                }
                s[j][e] = x;
                if (e < 2)
                    mx0 = fmaxf(mx0, x);
                else
                    mx1 = fmaxf(mx1, x);
            }
        mx0 = quad_max(mx0);
        mx1 = quad_max(mx1);
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        const float base0 = mn0 == -INFINITY ? 0.0f : mn0;
        const float base1 = mn1 == -INFINITY ? 0.0f : mn1;
        const float a0 = exp2f(m0 - base0), a1 = exp2f(m1 - base1);
        m0 = mn0;
        m1 = mn1;
        float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            s[j][0] = exp2f(s[j][0] - base0);
            s[j][1] = exp2f(s[j][1] - base0);
            s[j][2] = exp2f(s[j][2] - base1);
            s[j][3] = exp2f(s[j][3] - base1);
            rs0 += s[j][0] + s[j][1];
            rs1 += s[j][2] + s[j][3];
        }
        l0 = l0 * a0 + quad_sum(rs0);
        l1 = l1 * a1 + quad_sum(rs1);
#pragma unroll
        for (int nd = 0; nd < ND; nd++) {
            o[nd][0] *= a0;
            o[nd][1] *= a0;
            o[nd][2] *= a1;
            o[nd][3] *= a1;
        }
#pragma unroll
        for (int sl = 0; sl < 4; sl++) {
            uint32_t pa[4];
            c_to_a(pa, s, sl);
#pragma unroll
            for (int nd = 0; nd < ND; nd++) {
                uint32_t b0, b1;
                ldsm_x2_trans(b0, b1, sV, P, sl * 16, nd * 8, lane);
                mma16816(o[nd], pa, b0, b1);
            }
        }
    }

    const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
    if (row0 < T) {
        bf16 *op = out + ((size_t)(b * T + row0) * Hq + h) * D + 2 * q;
#pragma unroll
        for (int nd = 0; nd < ND; nd++)
            *reinterpret_cast<uint32_t *>(op + nd * 8) = pack2(o[nd][0] * inv0, o[nd][1] * inv0);
        if (lse && q == 0)
            lse[((size_t)b * Hq + h) * T + row0] = (m0 + log2f(l0)) * LN2_F;
    }
    if (row1 < T) {
        bf16 *op = out + ((size_t)(b * T + row1) * Hq + h) * D + 2 * q;
#pragma unroll
        for (int nd = 0; nd < ND; nd++)
            *reinterpret_cast<uint32_t *>(op + nd * 8) = pack2(o[nd][2] * inv1, o[nd][3] * inv1);
        if (lse && q == 0)
            lse[((size_t)b * Hq + h) * T + row1] = (m1 + log2f(l1)) * LN2_F;
    }
}

/* ---- backward -------------------------------------------------------------------------- */

/* delta[b, h, t] = sum_d dout[b, t, h, d] * out[b, t, h, d]; one warp per (b, t, h). */
__global__ void attn_delta_kernel(float *delta, const bf16 *dout, const bf16 *out, int T, int Hq,
                                  int D, size_t rows)
{
    const size_t idx = (size_t)blockIdx.x * (blockDim.x / 32) + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    if (idx >= rows)
        return;
    const bf16 *a = dout + idx * D, *o = out + idx * D;
    float acc = 0.0f;
    for (int d = lane; d < D; d += 32)
        acc += __bfloat162float(a[d]) * __bfloat162float(o[d]);
    acc = warp_sum(acc);
    if (lane == 0) {
        const int h = (int)(idx % Hq);
        const size_t bt = idx / Hq;
        const int t = (int)(bt % T);
        const size_t b = bt / T;
        delta[(b * Hq + h) * T + t] = acc;
    }
}

template <int D> static constexpr size_t bwd_smem_bytes()
{
    return 4 * (size_t)ATT_TILE * (D + 8) * sizeof(bf16) + 3 * ATT_TILE * sizeof(float);
}

/* One block per (key block, kv head, batch): dK, dV of its 64 keys over every query tile at
 * or after it and every query head of the group. */
template <int D>
__global__ void __launch_bounds__(ATT_THREADS)
    attn_bwd_dkdv_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse,
                         const float *delta, const int *dstart, int T, int Hq, int Hkv, float scale,
                         float sl2)
{
    constexpr int P = D + 8, KS = D / 16, ND = D / 8;
    extern __shared__ __align__(16) unsigned char att_smem[];
    bf16 *sK = reinterpret_cast<bf16 *>(att_smem);
    bf16 *sV = sK + ATT_TILE * P, *sQ = sV + ATT_TILE * P, *sO = sQ + ATT_TILE * P;
    float *sL = reinterpret_cast<float *>(sO + ATT_TILE * P), *sDl = sL + ATT_TILE;
    int *sS = reinterpret_cast<int *>(sDl + ATT_TILE); /* the queries' document starts */
    const int kb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, G = Hq / Hkv;
    const size_t S3 = (size_t)(Hq + 2 * Hkv) * D;
    const bf16 *base = qkv + (size_t)b * T * S3;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const int k0 = kb * ATT_TILE, key0 = k0 + warp * 16 + g, key1 = key0 + 8;
    const int *ds = dstart ? dstart + (size_t)b * T : NULL;
    /* documents: the query tiles whose first query starts its document after the block's
     * last key see none of its keys (starts do not decrease) */
    const int klast = (k0 + ATT_TILE < T ? k0 + ATT_TILE : T) - 1;
    int nqt = (T + ATT_TILE - 1) / ATT_TILE;
    if (ds)
        while (nqt > kb + 1 && ds[(nqt - 1) * ATT_TILE] > klast)
            nqt--;

    load_tile<D>(sK, base + (size_t)(Hq + hk) * D, S3, k0, T);
    load_tile<D>(sV, base + (size_t)(Hq + Hkv + hk) * D, S3, k0, T);
    float dk[ND][4], dv[ND][4];
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            dk[nd][e] = dv[nd][e] = 0.0f;

    for (int hq = hk * G; hq < hk * G + G; hq++) {
        const bf16 *qsrc = base + (size_t)hq * D;
        const bf16 *osrc = dout + (size_t)b * T * Hq * D + (size_t)hq * D;
        const float *lrow = lse + ((size_t)b * Hq + hq) * T;
        const float *drow = delta + ((size_t)b * Hq + hq) * T;
        for (int qt = kb; qt < nqt; qt++) {
            const int q0 = qt * ATT_TILE;
            __syncthreads();
            load_tile<D>(sQ, qsrc, S3, q0, T);
            load_tile<D>(sO, osrc, (size_t)Hq * D, q0, T);
            for (int r = threadIdx.x; r < ATT_TILE; r += ATT_THREADS) {
                const int t = q0 + r;
                sL[r] = t < T ? lrow[t] * LOG2E_F : 0.0f;
                sDl[r] = t < T ? drow[t] : 0.0f;
                sS[r] = ds && t < T ? ds[t] : 0;
            }
            __syncthreads();

            /* S^T = K Q^T (16 keys x 64 queries per warp), then P^T */
            float st[8][4];
#pragma unroll
            for (int j = 0; j < 8; j++)
                st[j][0] = st[j][1] = st[j][2] = st[j][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KS; kk++) {
                uint32_t a[4];
                lds_a(a, sK, P, warp * 16, kk, g, q);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    uint32_t b0, b1;
                    lds_b(b0, b1, sQ, P, j * 8, kk, g, q);
                    mma16816(st[j], a, b0, b1);
                }
            }
            const bool need_mask = qt == kb || q0 + ATT_TILE > T || ds;
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int ql = j * 8 + 2 * q + (e & 1);
                    float p = exp2f(st[j][e] * sl2 - sL[ql]);
                    if (need_mask) {
                        const int qi = q0 + ql, key = e < 2 ? key0 : key1;
                        if (qi < key || qi >= T || key < sS[ql])
                            p = 0.0f;
                    }
                    st[j][e] = p;
                }
                /* dV += P^T dO */
#pragma unroll
            for (int sl = 0; sl < 4; sl++) {
                uint32_t pa[4];
                c_to_a(pa, st, sl);
#pragma unroll
                for (int nd = 0; nd < ND; nd++) {
                    uint32_t b0, b1;
                    ldsm_x2_trans(b0, b1, sO, P, sl * 16, nd * 8, lane);
                    mma16816(dv[nd], pa, b0, b1);
                }
            }
            /* dP^T = V dO^T, then dS^T = P^T (dP^T - delta) */
            float dp[8][4];
#pragma unroll
            for (int j = 0; j < 8; j++)
                dp[j][0] = dp[j][1] = dp[j][2] = dp[j][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KS; kk++) {
                uint32_t a[4];
                lds_a(a, sV, P, warp * 16, kk, g, q);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    uint32_t b0, b1;
                    lds_b(b0, b1, sO, P, j * 8, kk, g, q);
                    mma16816(dp[j], a, b0, b1);
                }
            }
#pragma unroll
            for (int j = 0; j < 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    dp[j][e] = st[j][e] * (dp[j][e] - sDl[j * 8 + 2 * q + (e & 1)]);
                    /* dK += dS^T Q */
#pragma unroll
            for (int sl = 0; sl < 4; sl++) {
                uint32_t pa[4];
                c_to_a(pa, dp, sl);
#pragma unroll
                for (int nd = 0; nd < ND; nd++) {
                    uint32_t b0, b1;
                    ldsm_x2_trans(b0, b1, sQ, P, sl * 16, nd * 8, lane);
                    mma16816(dk[nd], pa, b0, b1);
                }
            }
        }
    }

    if (key0 < T) {
        bf16 *kp = dqkv + ((size_t)b * T + key0) * S3 + (size_t)(Hq + hk) * D + 2 * q;
        bf16 *vp = dqkv + ((size_t)b * T + key0) * S3 + (size_t)(Hq + Hkv + hk) * D + 2 * q;
#pragma unroll
        for (int nd = 0; nd < ND; nd++) {
            *reinterpret_cast<uint32_t *>(kp + nd * 8) =
                pack2(dk[nd][0] * scale, dk[nd][1] * scale);
            *reinterpret_cast<uint32_t *>(vp + nd * 8) = pack2(dv[nd][0], dv[nd][1]);
        }
    }
    if (key1 < T) {
        bf16 *kp = dqkv + ((size_t)b * T + key1) * S3 + (size_t)(Hq + hk) * D + 2 * q;
        bf16 *vp = dqkv + ((size_t)b * T + key1) * S3 + (size_t)(Hq + Hkv + hk) * D + 2 * q;
#pragma unroll
        for (int nd = 0; nd < ND; nd++) {
            *reinterpret_cast<uint32_t *>(kp + nd * 8) =
                pack2(dk[nd][2] * scale, dk[nd][3] * scale);
            *reinterpret_cast<uint32_t *>(vp + nd * 8) = pack2(dv[nd][2], dv[nd][3]);
        }
    }
}

/* One block per (query block, query head, batch): dQ over the key tiles up to the diagonal. */
template <int D>
__global__ void __launch_bounds__(ATT_THREADS)
    attn_bwd_dq_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse,
                       const float *delta, const int *dstart, int T, int Hq, int Hkv, float scale,
                       float sl2)
{
    constexpr int P = D + 8, KS = D / 16, ND = D / 8;
    extern __shared__ __align__(16) unsigned char att_smem[];
    bf16 *sQ = reinterpret_cast<bf16 *>(att_smem);
    bf16 *sO = sQ + ATT_TILE * P, *sK = sO + ATT_TILE * P, *sV = sK + ATT_TILE * P;
    const int qb = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int hk = h / (Hq / Hkv);
    const size_t S3 = (size_t)(Hq + 2 * Hkv) * D;
    const bf16 *base = qkv + (size_t)b * T * S3;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = lane & 3;
    const int q0 = qb * ATT_TILE, row0 = q0 + warp * 16 + g, row1 = row0 + 8;

    load_tile<D>(sQ, base + (size_t)h * D, S3, q0, T);
    load_tile<D>(sO, dout + (size_t)b * T * Hq * D + (size_t)h * D, (size_t)Hq * D, q0, T);
    const float *lrow = lse + ((size_t)b * Hq + h) * T;
    const float *drow = delta + ((size_t)b * Hq + h) * T;
    const float lse0 = row0 < T ? lrow[row0] * LOG2E_F : 0.0f;
    const float lse1 = row1 < T ? lrow[row1] * LOG2E_F : 0.0f;
    const float dl0 = row0 < T ? drow[row0] : 0.0f, dl1 = row1 < T ? drow[row1] : 0.0f;
    float dq[ND][4];
#pragma unroll
    for (int nd = 0; nd < ND; nd++)
        dq[nd][0] = dq[nd][1] = dq[nd][2] = dq[nd][3] = 0.0f;
    const int *ds = dstart ? dstart + (size_t)b * T : NULL;
    const int first0 = ds && row0 < T ? ds[row0] : 0, first1 = ds && row1 < T ? ds[row1] : 0;

    for (int kt = ds ? ds[q0] / ATT_TILE : 0; kt <= qb; kt++) {
        const int k0 = kt * ATT_TILE;
        __syncthreads();
        load_tile<D>(sK, base + (size_t)(Hq + hk) * D, S3, k0, T);
        load_tile<D>(sV, base + (size_t)(Hq + Hkv + hk) * D, S3, k0, T);
        __syncthreads();

        float s[8][4], dp[8][4];
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[j][e] = dp[j][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KS; kk++) {
            uint32_t aq[4], ao[4];
            lds_a(aq, sQ, P, warp * 16, kk, g, q);
            lds_a(ao, sO, P, warp * 16, kk, g, q);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                uint32_t b0, b1;
                lds_b(b0, b1, sK, P, j * 8, kk, g, q);
                mma16816(s[j], aq, b0, b1); /* S = Q K^T */
                lds_b(b0, b1, sV, P, j * 8, kk, g, q);
                mma16816(dp[j], ao, b0, b1); /* dP = dO V^T */
            }
        }
        const bool need_mask = kt == qb || k0 + ATT_TILE > T || ds;
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float p = exp2f(s[j][e] * sl2 - (e < 2 ? lse0 : lse1));
                if (need_mask) {
                    const int col = k0 + j * 8 + 2 * q + (e & 1);
                    const int row = e < 2 ? row0 : row1;
                    if (col > row || col >= T || col < (e < 2 ? first0 : first1))
                        p = 0.0f;
                }
                dp[j][e] = p * (dp[j][e] - (e < 2 ? dl0 : dl1));
            }
            /* dQ += dS K */
#pragma unroll
        for (int sl = 0; sl < 4; sl++) {
            uint32_t pa[4];
            c_to_a(pa, dp, sl);
#pragma unroll
            for (int nd = 0; nd < ND; nd++) {
                uint32_t b0, b1;
                ldsm_x2_trans(b0, b1, sK, P, sl * 16, nd * 8, lane);
                mma16816(dq[nd], pa, b0, b1);
            }
        }
    }

    if (row0 < T) {
        bf16 *p = dqkv + ((size_t)b * T + row0) * S3 + (size_t)h * D + 2 * q;
#pragma unroll
        for (int nd = 0; nd < ND; nd++)
            *reinterpret_cast<uint32_t *>(p + nd * 8) = pack2(dq[nd][0] * scale, dq[nd][1] * scale);
    }
    if (row1 < T) {
        bf16 *p = dqkv + ((size_t)b * T + row1) * S3 + (size_t)h * D + 2 * q;
#pragma unroll
        for (int nd = 0; nd < ND; nd++)
            *reinterpret_cast<uint32_t *>(p + nd * 8) = pack2(dq[nd][2] * scale, dq[nd][3] * scale);
    }
}

/* ---- launchers --------------------------------------------------------------------------- */

extern "C" int attn_own_supported(int D)
{
    return D == 16 || D == 32 || D == 64 || D == 128;
}

extern "C" size_t attn_own_bwd_workspace_size(int B, int T, int Hq)
{
    return ((size_t)B * Hq * T * sizeof(float) + 255) & ~(size_t)255;
}

static bool own_ok(int T, int Hq, int Hkv, int D)
{
    return attn_own_supported(D) && T > 0 && Hkv > 0 && Hq % Hkv == 0;
}

template <int D>
static void own_fwd(sl_bf16 *out, float *lse, const sl_bf16 *qkv, const int *dstart, int B, int T,
                    int Hq, int Hkv, float sl2, cudaStream_t st)
{
    dim3 grid((T + ATT_TILE - 1) / ATT_TILE, Hq, B);
    attn_fwd_kernel<D><<<grid, ATT_THREADS, 0, st>>>(out, lse, qkv, dstart, T, Hq, Hkv, sl2);
    CUDA_CHECK_LAUNCH();
}

template <int D>
static void own_bwd(sl_bf16 *dqkv, float *delta, const sl_bf16 *dout, const sl_bf16 *qkv,
                    const float *lse, const int *dstart, int B, int T, int Hq, int Hkv, float scale,
                    float sl2, cudaStream_t st)
{
    const size_t smem = bwd_smem_bytes<D>();
    /* the shared-memory opt-in is a property of the kernel on a device: set it once per
     * device, not on every call (it is a driver call on the host path of each backward) */
    static unsigned long long attr_set; /* bit d: done on device d (d < 64) */
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= 64 || !(attr_set >> dev & 1)) {
        CUDA_CHECK(cudaFuncSetAttribute(attn_bwd_dkdv_kernel<D>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CUDA_CHECK(cudaFuncSetAttribute(attn_bwd_dq_kernel<D>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        if (dev < 64)
            attr_set |= 1ull << dev;
    }
    const int nb = (T + ATT_TILE - 1) / ATT_TILE;
    attn_bwd_dkdv_kernel<D><<<dim3(nb, Hkv, B), ATT_THREADS, smem, st>>>(
        dqkv, dout, qkv, lse, delta, dstart, T, Hq, Hkv, scale, sl2);
    CUDA_CHECK_LAUNCH();
    attn_bwd_dq_kernel<D><<<dim3(nb, Hq, B), ATT_THREADS, smem, st>>>(
        dqkv, dout, qkv, lse, delta, dstart, T, Hq, Hkv, scale, sl2);
    CUDA_CHECK_LAUNCH();
}

extern "C" int attn_own_fwd(sl_bf16 *out, float *lse, const sl_bf16 *qkv, int B, int T, int Hq,
                            int Hkv, int D, float scale, cudaStream_t st)
{
    return attn_own_fwd_docs(out, lse, qkv, NULL, B, T, Hq, Hkv, D, scale, st);
}

extern "C" int attn_own_fwd_docs(sl_bf16 *out, float *lse, const sl_bf16 *qkv, const int *dstart,
                                 int B, int T, int Hq, int Hkv, int D, float scale, cudaStream_t st)
{
    if (!own_ok(T, Hq, Hkv, D))
        return -1;
    if (B <= 0)
        return 0;
    const float sl2 = scale * LOG2E_F;
    switch (D) {
    case 16:
        own_fwd<16>(out, lse, qkv, dstart, B, T, Hq, Hkv, sl2, st);
        break;
    case 32:
        own_fwd<32>(out, lse, qkv, dstart, B, T, Hq, Hkv, sl2, st);
        break;
    case 64:
        own_fwd<64>(out, lse, qkv, dstart, B, T, Hq, Hkv, sl2, st);
        break;
    default:
        own_fwd<128>(out, lse, qkv, dstart, B, T, Hq, Hkv, sl2, st);
        break;
    }
    return 0;
}

extern "C" int attn_own_bwd(sl_bf16 *dqkv, void *workspace, const sl_bf16 *dout, const sl_bf16 *qkv,
                            const sl_bf16 *out, const float *lse, int B, int T, int Hq, int Hkv,
                            int D, float scale, cudaStream_t st)
{
    return attn_own_bwd_docs(dqkv, workspace, dout, qkv, out, lse, NULL, B, T, Hq, Hkv, D, scale,
                             st);
}

extern "C" int attn_own_bwd_docs(sl_bf16 *dqkv, void *workspace, const sl_bf16 *dout,
                                 const sl_bf16 *qkv, const sl_bf16 *out, const float *lse,
                                 const int *dstart, int B, int T, int Hq, int Hkv, int D,
                                 float scale, cudaStream_t st)
{
    if (!own_ok(T, Hq, Hkv, D))
        return -1;
    if (B <= 0)
        return 0;
    float *delta = (float *)workspace;
    const size_t rows = (size_t)B * T * Hq;
    attn_delta_kernel<<<(unsigned int)((rows + 7) / 8), 256, 0, st>>>(delta, dout, out, T, Hq, D,
                                                                      rows);
    CUDA_CHECK_LAUNCH();
    const float sl2 = scale * LOG2E_F;
    switch (D) {
    case 16:
        own_bwd<16>(dqkv, delta, dout, qkv, lse, dstart, B, T, Hq, Hkv, scale, sl2, st);
        break;
    case 32:
        own_bwd<32>(dqkv, delta, dout, qkv, lse, dstart, B, T, Hq, Hkv, scale, sl2, st);
        break;
    case 64:
        own_bwd<64>(dqkv, delta, dout, qkv, lse, dstart, B, T, Hq, Hkv, scale, sl2, st);
        break;
    default:
        own_bwd<128>(dqkv, delta, dout, qkv, lse, dstart, B, T, Hq, Hkv, scale, sl2, st);
        break;
    }
    return 0;
}

/* ---- run-time choice ------------------------------------------------------------------- */

/* the backend chosen per shape, so that attention_fwd/bwd do not ask cuDNN again (and do
 * not format its refusal message again) on every call */
#define ATTN_MEMO 8
struct attn_memo {
    int B, T, Hq, Hkv, D;
    enum attn_backend be;
};

struct attention {
    enum attn_backend want;
    struct attn_cudnn *cudnn;
    struct attn_memo memo[ATTN_MEMO];
    int nmemo;
    int deterministic;
    const int *dstart; /* attention_set_docs: the document starts of the next calls */
};

extern "C" struct attention *attention_new(enum attn_backend backend)
{
    struct attention *a = (struct attention *)calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->want = backend;
    if (backend != ATTN_OWN) {
        a->cudnn = attn_cudnn_new(0); /* the faster backward; attention_set_deterministic */
        if (!a->cudnn && backend == ATTN_CUDNN) {
            free(a);
            return NULL;
        }
    }
    return a;
}

extern "C" int attention_is_deterministic(struct attention *a, int B, int T, int Hq, int Hkv, int D)
{
    if (attention_backend(a, B, T, Hq, Hkv, D) != ATTN_CUDNN)
        return 1;
    return attn_cudnn_is_deterministic(a->cudnn, B, T, Hq, Hkv, D);
}

extern "C" void attention_set_deterministic(struct attention *a, int deterministic)
{
    if (!a || !a->cudnn || a->deterministic == !!deterministic)
        return;
    a->deterministic = !!deterministic;
    struct attn_cudnn *c = attn_cudnn_new(deterministic);
    if (c) {
        attn_cudnn_free(a->cudnn);
        a->cudnn = c;
        a->nmemo = 0; /* the choices were made with the other handle */
    }
}

extern "C" void attention_set_docs(struct attention *a, const int *dstart)
{
    a->dstart = dstart;
}

extern "C" void attention_free(struct attention *a)
{
    if (!a)
        return;
    attn_cudnn_free(a->cudnn);
    free(a);
}

extern "C" enum attn_backend attention_backend(struct attention *a, int B, int T, int Hq, int Hkv,
                                               int D)
{
    for (int i = 0; i < a->nmemo; i++) {
        const struct attn_memo *m = &a->memo[i];
        if (m->B == B && m->T == T && m->Hq == Hq && m->Hkv == Hkv && m->D == D)
            return m->be;
    }
    size_t f, b;
    enum attn_backend be;
    if (a->want != ATTN_OWN && a->cudnn &&
        attn_cudnn_prepare(a->cudnn, B, T, Hq, Hkv, D, &f, &b) == 0)
        be = ATTN_CUDNN;
    else
        be = a->want == ATTN_CUDNN ? ATTN_AUTO /* none */ : ATTN_OWN;
    if (a->nmemo < ATTN_MEMO)
        a->memo[a->nmemo++] = (struct attn_memo){ B, T, Hq, Hkv, D, be };
    return be;
}

extern "C" int attention_prepare(struct attention *a, int B, int T, int Hq, int Hkv, int D,
                                 size_t *workspace_bytes)
{
    size_t f = 0, b = 0;
    *workspace_bytes = 0;
    if (a->want != ATTN_OWN && a->cudnn &&
        attn_cudnn_prepare(a->cudnn, B, T, Hq, Hkv, D, &f, &b) == 0) {
        *workspace_bytes = f > b ? f : b;
        return 0;
    }
    if (a->want == ATTN_CUDNN || !own_ok(T, Hq, Hkv, D))
        return -1;
    *workspace_bytes = attn_own_bwd_workspace_size(B, T, Hq);
    return 0;
}

extern "C" int attention_fwd(struct attention *a, sl_bf16 *out, float *lse, const sl_bf16 *qkv,
                             int B, int T, int Hq, int Hkv, int D, float scale, void *workspace,
                             size_t workspace_bytes, cudaStream_t st)
{
    if (a->dstart) /* the variable-length form: our kernels only */
        return a->want == ATTN_CUDNN
                   ? -1
                   : attn_own_fwd_docs(out, lse, qkv, a->dstart, B, T, Hq, Hkv, D, scale, st);
    switch (attention_backend(a, B, T, Hq, Hkv, D)) {
    case ATTN_CUDNN:
        return attn_cudnn_fwd(a->cudnn, out, lse, qkv, B, T, Hq, Hkv, D, scale, workspace,
                              workspace_bytes, st);
    case ATTN_OWN:
        return attn_own_fwd(out, lse, qkv, B, T, Hq, Hkv, D, scale, st);
    default:
        return -1;
    }
}

extern "C" int attention_bwd(struct attention *a, sl_bf16 *dqkv, const sl_bf16 *dout,
                             const sl_bf16 *qkv, const sl_bf16 *out, const float *lse, int B, int T,
                             int Hq, int Hkv, int D, float scale, void *workspace,
                             size_t workspace_bytes, cudaStream_t st)
{
    if (a->dstart) {
        if (a->want == ATTN_CUDNN || workspace_bytes < attn_own_bwd_workspace_size(B, T, Hq))
            return -1;
        return attn_own_bwd_docs(dqkv, workspace, dout, qkv, out, lse, a->dstart, B, T, Hq, Hkv, D,
                                 scale, st);
    }
    switch (attention_backend(a, B, T, Hq, Hkv, D)) {
    case ATTN_CUDNN:
        return attn_cudnn_bwd(a->cudnn, dqkv, dout, qkv, out, lse, B, T, Hq, Hkv, D, scale,
                              workspace, workspace_bytes, st);
    case ATTN_OWN:
        if (workspace_bytes < attn_own_bwd_workspace_size(B, T, Hq))
            return -1;
        return attn_own_bwd(dqkv, workspace, dout, qkv, out, lse, B, T, Hq, Hkv, D, scale, st);
    default:
        return -1;
    }
}
