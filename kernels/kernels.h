/* The trainer's CUDA kernels, as C functions: embeddings, norms fused with the residual add,
 * activations, RoPE, bias gradients, the fused classifier, AdamW, the global gradient norm
 * and small utilities. GEMMs are in kernels/gemm.h, attention in kernels/attention.h.
 *
 * Conventions for every launcher here:
 *  - it enqueues work on `st` and returns; it never allocates and never synchronises;
 *  - tensors are row-major, activations bf16 (sl_bf16), statistics and optimizer state fp32;
 *    N is the number of rows (tokens, B*T), C the row width;
 *  - outputs called "+=" accumulate into what is there (gradient accumulation), the rest
 *    overwrite; "scratch" is caller-owned device memory of at least the *_scratch_size() bytes;
 *  - the 16-byte vector path is taken when widths are multiples of 8 and pointers 16-byte
 *    aligned, a scalar path otherwise (any size works);
 *  - launch errors are fatal (CUDA_CHECK, kernels/cuda_common.h);
 *  - results are deterministic (same inputs, same bits), unless a function says otherwise.
 */
#ifndef SL_KERNELS_H
#define SL_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#if defined(__CUDACC__) || defined(SL_CUDA_EMU)
#include <cuda_bf16.h>
typedef __nv_bfloat16 sl_bf16;
#else
typedef uint16_t sl_bf16; /* the bits of a bf16; same size and alignment as __nv_bfloat16 */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- embeddings ------------------------------------------------------------------- */

/* out[n,:] = wte[tokens[n],:] + wpe[n % T,:] for n < B*T; wpe may be NULL (RoPE models).
 * The sum is rounded to bf16 once. A token outside [0, V) gives a row of NaN. */
void embedding_fwd(sl_bf16 *out, const int32_t *tokens, const sl_bf16 *wte, const sl_bf16 *wpe,
                   int B, int T, int C, int V, cudaStream_t st);

size_t embedding_bwd_scratch_size(int B, int T, int V);
/* dwte[v,:] += sum of dout[n,:] over the positions n holding token v, in increasing n;
 * dwpe[t,:] += sum over b of dout[b,t,:]. Either may be NULL. Deterministic without atomics:
 * positions are sorted by token (stable radix sort), then one block sums each token's rows.
 * Needs a device (queries CUB's temporary storage size). */
void embedding_bwd(sl_bf16 *dwte, sl_bf16 *dwpe, void *scratch, size_t scratch_bytes,
                   const sl_bf16 *dout, const int32_t *tokens, int B, int T, int C, int V,
                   cudaStream_t st);

/* Vocab-parallel embedding (Megatron's VocabParallelEmbedding): the rank holds rows
 * [v0, v0 + rows) of the token table. ids[i] = tokens[i] - v0 when the rank holds that row,
 * else -1; embedding_fwd_vp: out[n,:] = wte[ids[n],:], or zeros for -1 (the rows summed over
 * the ranks give every token's row, exactly); embedding_pos_add: x[n,:] += wpe[(row0 + n) %
 * T,:] for n < R, rounded to bf16 once (x = the summed token rows: the bits of embedding_fwd).
 * The backward is embedding_bwd over ids and V = rows (it skips the ids outside [0, V)). */
void embedding_local_ids(int32_t *ids, const int32_t *tokens, int v0, int rows, int n,
                         cudaStream_t st);
void embedding_fwd_vp(sl_bf16 *out, const int32_t *ids, const sl_bf16 *wte, int N, int C,
                      cudaStream_t st);
void embedding_pos_add(sl_bf16 *x, const sl_bf16 *wpe, int row0, int R, int T, int C,
                       cudaStream_t st);
/* The same at given positions: x[n,:] += wpe[pos[row0 + n],:] (device, int32; packed
 * documents, train/docmask.h). Their backward is embedding_bwd over the positions as ids
 * and V = T (rows of equal positions summed in order, deterministically). */
void embedding_pos_add_at(sl_bf16 *x, const sl_bf16 *wpe, const int32_t *pos, int row0, int R,
                          int T, int C, cudaStream_t st);

/* ---- LayerNorm and RMSNorm, fused with the residual add --------------------------- */

/* h = x + r rounded to bf16 and written to resid_out (when r != NULL), else h = x;
 * LayerNorm: out = (h - mean) * rstd * w + b (b may be NULL), rstd = 1/sqrt(var + eps);
 * RMSNorm:   out = h * rstd * w, rstd = 1/sqrt(mean(h^2) + eps).
 * mean and rstd (N floats; may be NULL) are kept for the backward. Any C. */
void layernorm_fwd(sl_bf16 *out, float *mean, float *rstd, sl_bf16 *resid_out, const sl_bf16 *x,
                   const sl_bf16 *r, const sl_bf16 *w, const sl_bf16 *b, int N, int C, float eps,
                   cudaStream_t st);
void rmsnorm_fwd(sl_bf16 *out, float *rstd, sl_bf16 *resid_out, const sl_bf16 *x, const sl_bf16 *r,
                 const sl_bf16 *w, int N, int C, float eps, cudaStream_t st);

size_t norm_bwd_scratch_size(int N, int C);
/* dinp = dresid + (d norm / d h)^T dout; dresid may be NULL or equal dinp (the residual
 * stream's gradient passing through). dw += sum_n dout * norm, db += sum_n dout (db may be
 * NULL). h is the norm's input (resid_out of the forward), mean/rstd what it saved.
 * Deterministic (per-block partial sums, reduced in block order). C <= 8192. */
void layernorm_bwd(sl_bf16 *dinp, sl_bf16 *dw, sl_bf16 *db, void *scratch, const sl_bf16 *dresid,
                   const sl_bf16 *dout, const sl_bf16 *h, const sl_bf16 *w, const float *mean,
                   const float *rstd, int N, int C, cudaStream_t st);
void rmsnorm_bwd(sl_bf16 *dinp, sl_bf16 *dw, void *scratch, const sl_bf16 *dresid,
                 const sl_bf16 *dout, const sl_bf16 *h, const sl_bf16 *w, const float *rstd, int N,
                 int C, cudaStream_t st);

/* dbias[c] += sum_n dout[n,c]. Deterministic; any C; scratch of norm_bwd_scratch_size(N, C). */
void bias_bwd(sl_bf16 *dbias, void *scratch, const sl_bf16 *dout, int N, int C, cudaStream_t st);

/* ---- activations ------------------------------------------------------------------ */

/* GELU, tanh approximation (GPT-2): out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * out may equal x. */
void gelu_fwd(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st);
/* dx = dout * gelu'(x); dx may equal dout. */
void gelu_bwd(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n, cudaStream_t st);

/* GELU, exact (NeMo/Megatron GPT-3): out = 0.5 x (1 + erf(x / sqrt 2)); out may equal x. */
void gelu_erf_fwd(sl_bf16 *out, const sl_bf16 *x, size_t n, cudaStream_t st);
/* dx = dout * (Phi(x) + x phi(x)); dx may equal dout. */
void gelu_erf_bwd(sl_bf16 *dx, const sl_bf16 *dout, const sl_bf16 *x, size_t n, cudaStream_t st);

/* SwiGLU over rows of inp[N, 2F] = [gate | up]: out[N, F] = silu(gate) * up. */
void swiglu_fwd(sl_bf16 *out, const sl_bf16 *inp, int N, int F, cudaStream_t st);
/* dinp[N, 2F] = [dout * up * silu'(gate) | dout * silu(gate)]. */
void swiglu_bwd(sl_bf16 *dinp, const sl_bf16 *dout, const sl_bf16 *inp, int N, int F,
                cudaStream_t st);

/* ---- rotary position embedding ---------------------------------------------------- */

struct rope_config {
    double theta;            /* base, e.g. 10000 or 500000 */
    double factor;           /* Llama-3.1 scaling when > 0 (e.g. 8) */
    double low_freq_factor;  /* e.g. 1 */
    double high_freq_factor; /* e.g. 4 */
    int original_max_pos;    /* e.g. 8192 */
};

/* Host functions (no device work). inv_freq[i] = theta^(-2i/D) for i < D/2, Llama-3.1
 * scaled when cfg->factor > 0; tables cos_t/sin_t[t*(D/2) + i] = cos/sin(t * inv_freq[i])
 * for t < T, computed in double and stored as float (copy them to the device once). */
void rope_inv_freq(double *inv_freq, int D, const struct rope_config *cfg);
void rope_tables(float *cos_t, float *sin_t, int T, int D, const struct rope_config *cfg);

/* Rotate, in place, the first Hq + Hkv heads (q then k) of every row of
 * qkv[B*T, (Hq + 2 Hkv) * D], rotate-half pairs (i, i + D/2), position t = row % T:
 *   (a, b) -> (a cos - b sin, a sin + b cos).
 * rope_bwd applies the transpose to the gradient dqkv. D even. cos_t/sin_t on the device. */
void rope_fwd(sl_bf16 *qkv, const float *cos_t, const float *sin_t, int B, int T, int Hq, int Hkv,
              int D, cudaStream_t st);
void rope_bwd(sl_bf16 *dqkv, const float *cos_t, const float *sin_t, int B, int T, int Hq, int Hkv,
              int D, cudaStream_t st);
/* The same at given positions: row n at position pos[n] < T (device, B*T int32; packed
 * documents, train/docmask.h), or n % T where pos is NULL. */
void rope_fwd_at(sl_bf16 *qkv, const float *cos_t, const float *sin_t, const int32_t *pos, int B,
                 int T, int Hq, int Hkv, int D, cudaStream_t st);
void rope_bwd_at(sl_bf16 *dqkv, const float *cos_t, const float *sin_t, const int32_t *pos, int B,
                 int T, int Hq, int Hkv, int D, cudaStream_t st);

/* ---- fused classifier ------------------------------------------------------------- */

/* Softmax + cross-entropy over logits[N, Vp] (bf16; columns >= V are padding), one block per
 * row, fp32 math, no fp32 copy of the logits:
 *   losses[n] = logsumexp(logits[n, :V]) - logits[n, targets[n]]   (0 when targets[n] < 0)
 * and when write_dlogits, logits is overwritten in place with
 *   dloss * (softmax(logits[n, :V]) - onehot(targets[n]))   (padding columns 0; rows with a
 *   negative target all 0).
 * Targets must be < V. */
void classifier_fwd_bwd(float *losses, sl_bf16 *logits, const int32_t *targets, int N, int V,
                        int Vp, float dloss, int write_dlogits, cudaStream_t st);

/* Vocab-parallel cross-entropy (Megatron's vocab_parallel_cross_entropy): the rank holds
 * columns [v0, v0 + V) of the vocabulary in logits[N, Vp] (bf16; columns >= V padding);
 * targets are full-vocabulary ids (negative: ignored). Three steps with reductions over the
 * tensor-parallel group between them (the caller's):
 *   phase 0: mx[n] = max of the row's V logits, tlogit[n] = logits[n, targets[n] - v0] when
 *            the rank holds it, else 0      -> mx all-reduced (max), tlogit (sum);
 *   phase 1: sumexp[n] = sum over the V columns of exp(logits - mx[n])  -> all-reduced (sum);
 *   classifier_vp_finish: losses[n] = log(sumexp[n]) + mx[n] - tlogit[n] (0 when ignored) and,
 *            when write_dlogits, the logits overwritten with
 *            dloss * (exp(logits - mx) / sumexp - onehot(targets - v0)) (padding 0).
 * One block per row, fixed reduction order (deterministic). At one rank (v0 0, no
 * reduction) the same loss and gradient as classifier_fwd_bwd up to fp32 summation order. */
void classifier_vp_partial(float *mx, float *sumexp, float *tlogit, const sl_bf16 *logits,
                           const int32_t *targets, int v0, int N, int V, int Vp, int phase,
                           cudaStream_t st);
void classifier_vp_finish(float *losses, sl_bf16 *logits, const int32_t *targets, const float *mx,
                          const float *sumexp, const float *tlogit, int v0, int N, int V, int Vp,
                          float dloss, int write_dlogits, cudaStream_t st);

/* ---- optimizer -------------------------------------------------------------------- */

/* One parameter tensor of the flat parameter buffer (a table sorted by offset, kept on the
 * device by the caller). Elements covered by no entry are left unchanged. */
struct adamw_tensor {
    int64_t offset; /* first element, in the flat (global) index space */
    int64_t size;   /* elements */
    float wd_mult;  /* weight decay multiplier: 1 for matrices, 0 for norms and biases */
    float lr_mult;  /* learning-rate multiplier, usually 1 */
};

struct adamw_hparams {
    float lr, beta1, beta2, eps, weight_decay;
    int64_t step;              /* 1 for the first update (bias correction) */
    float grad_scale;          /* gradients are multiplied by this first (usually 1) */
    float max_grad_norm;       /* clip when > 0 and grad_norm_sq != NULL */
    const float *grad_norm_sq; /* device: squared global norm of the stored gradients */
    uint64_t seed;             /* stochastic rounding stream; change it every step */
    int stochastic_rounding;   /* 1: bf16 params rounded stochastically from the master */
};

/* AdamW over n elements whose global indices are first .. first+n-1 (a ZeRO-1 shard, or
 * everything with first = 0). All pointers point at element `first`'s slot:
 *   g = grads * grad_scale * clip, clip = min(1, max_norm / (sqrt(norm_sq) * grad_scale + 1e-6))
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   w -= lr*lr_mult * (m / (1-b1^t) / (sqrt(v / (1-b2^t)) + eps) + weight_decay*wd_mult * w)
 * with w the fp32 master (or the bf16 param when master is NULL); params gets the bf16 copy
 * (round-to-nearest-even, or stochastic rounding seeded by (seed, global index), which is
 * deterministic). One launch for all tensors. */
void adamw_update(sl_bf16 *params, const sl_bf16 *grads, float *master, float *m, float *v,
                  int64_t n, int64_t first, const struct adamw_tensor *tensors, int ntensors,
                  const struct adamw_hparams *hp, cudaStream_t st);

/* The same with fp32 gradients (the trainer's fp32 accumulation buffer). */
void adamw_update_f32(sl_bf16 *params, const float *grads, float *master, float *m, float *v,
                      int64_t n, int64_t first, const struct adamw_tensor *tensors, int ntensors,
                      const struct adamw_hparams *hp, cudaStream_t st);

size_t global_norm_scratch_size(void);
/* out[0] (=, or += when accumulate) sum of g[i]^2 over n elements, in fp32. Two stages with a
 * fixed grid, so deterministic for a given n. */
void global_norm_sq(float *out, void *scratch, const sl_bf16 *g, size_t n, int accumulate,
                    cudaStream_t st);

/* The same over fp32 values (fixed grid, deterministic). */
void global_norm_sq_f32(float *out, void *scratch, const float *g, size_t n, int accumulate,
                        cudaStream_t st);

/* Gradient accumulation in fp32: acc[i] = g[i] (overwrite) or acc[i] + g[i], exact in fp32,
 * so that micro-batch gradients computed in bf16 are summed without bf16 rounding. */
void grad_accumulate_f32(float *acc, const sl_bf16 *g, size_t n, int overwrite, cudaStream_t st);

/* ---- utilities -------------------------------------------------------------------- */

void cast_f32_to_bf16(sl_bf16 *dst, const float *src, size_t n, cudaStream_t st); /* RNE */
void cast_bf16_to_f32(float *dst, const sl_bf16 *src, size_t n, cudaStream_t st);
void fill_f32(float *dst, float value, size_t n, cudaStream_t st);
void fill_bf16(sl_bf16 *dst, float value, size_t n, cudaStream_t st);
void copy_bf16(sl_bf16 *dst, const sl_bf16 *src, size_t n, cudaStream_t st);
/* out = a + b, rounded once; out may equal a or b. */
void add_bf16(sl_bf16 *out, const sl_bf16 *a, const sl_bf16 *b, size_t n, cudaStream_t st);
/* out = a + b in fp32; out may equal a or b (ZeRO-2/3: a micro-batch's reduced gradient slice
 * added to the step's). */
void add_f32(float *out, const float *a, const float *b, size_t n, cudaStream_t st);
/* out[0] = scale * sum of in[0..n), one block in a fixed order (deterministic); for the mean
 * loss over the per-token losses. */
void sum_f32(float *out, const float *in, size_t n, float scale, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
