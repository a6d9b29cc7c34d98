/* The CPU reference kernels: a blocked matrix product, norms, activations, RoPE, causal
 * attention and the fused softmax + cross-entropy, forward and backward, in fp32.
 *
 * Every kernel parallelises (OpenMP) over outputs only, each output being summed in one
 * fixed order, so results are bit-identical for any number of threads. No kernel
 * allocates; scratch lives on the stack or in buffers the caller passes.
 */
#ifndef SL_TRAIN_CPU_OPS_H
#define SL_TRAIN_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

/* C[M,N] (+)= A[M,K] . B[K,N] (+ bias[N]) with general strides:
 * A(m,k) = A[m*sam + k*sak], B(k,n) = B[k*sbk + n*sbn], C(m,n) = C[m*ldc + n].
 * accumulate = 0 overwrites C. bias may be NULL. */
void cpu_gemm(int M, int N, int K, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B,
              ptrdiff_t sbk, ptrdiff_t sbn, float *C, ptrdiff_t ldc, int accumulate,
              const float *bias);

/* Linear layer y[N,OC] = x[N,IC] . W[OC,IC]^T + b, and its backward:
 * dx = dy . W (overwrites dx; skipped when dx is NULL), dW += dy^T . x, db += sum dy.
 * scratch (IC * OC floats, or NULL) lets dW be computed transposed first, which is faster
 * when OC is much larger than IC (the output layer). */
void cpu_linear_fwd(float *y, const float *x, const float *W, const float *b, int N, int IC, int OC);
void cpu_linear_bwd(float *dx, float *dW, float *db, const float *dy, const float *x, const float *W,
                    int N, int IC, int OC, float *scratch);

/* LayerNorm (b may be NULL) or RMSNorm (rms = 1) over rows of D; saves mean and rstd. */
void cpu_norm_fwd(float *y, float *mean, float *rstd, const float *x, const float *w,
                  const float *b, int N, int D, float eps, int rms);
/* dx += grad wrt x; dw += ..., db += ... (db may be NULL). */
void cpu_norm_bwd(float *dx, float *dw, float *db, const float *dy, const float *x,
                  const float *mean, const float *rstd, const float *w, int N, int D, int rms);

/* GELU (erf or tanh form) y = gelu(x), and dx = dy * gelu'(x). */
void cpu_gelu_fwd(float *y, const float *x, size_t n, int tanh_form);
void cpu_gelu_bwd(float *dx, const float *dy, const float *x, size_t n, int tanh_form);
/* SwiGLU over rows: h[N,F] = silu(g) * u where fc[N,2F] holds g then u per row. */
void cpu_swiglu_fwd(float *h, const float *fc, int N, int F);
void cpu_swiglu_bwd(float *dfc, const float *dh, const float *fc, int N, int F);

/* Rotate the q and k heads of qkv rows in place (rotate-half pairs i, i + hd/2) with the
 * tables cos/sin[T, hd/2]; inverse = 1 applies the transpose (for gradients). Rows are
 * B*T tokens, position t = row % T, or pos[row] when pos is not NULL. */
void cpu_rope(float *qkv, const float *cos_t, const float *sin_t, int B, int T, int n_heads,
              int n_kv_heads, int hd, int inverse, const int32_t *pos);

/* Causal attention over qkv[B,T,(H+2Hkv)*hd] -> y[B,T,H*hd]; att[B,H,T,T] keeps the
 * probabilities (row t holds t+1 values). start[B*T] (NULL: all 0): row t of sample b
 * attends to keys start[b*T+t]..t only (its document; train/docmask.h), its probabilities
 * at those columns. */
void cpu_attention_fwd(float *y, float *att, const float *qkv, int B, int T, int H, int Hkv, int hd,
                       const int32_t *start);
/* One row of causal attention, shared by cpu_attention_fwd and the decoder (train/decode.c):
 * query q[hd] over positions 0..n-1, whose keys and values start at k and v, `stride`
 * floats apart; the probabilities go to p[n], the output to o[hd]. */
void cpu_attention_row(float *o, float *p, const float *q, const float *k, const float *v,
                       size_t stride, int n, int hd, float scale);
/* dqkv (overwritten) from dy; scratch is T floats per thread (omp_get_max_threads()); start
 * as the forward's. */
void cpu_attention_bwd(float *dqkv, const float *dy, const float *qkv, const float *att, int B,
                       int T, int H, int Hkv, int hd, float *scratch, const int32_t *start);

/* Cross-entropy of logits[N,V] against targets: lse[n] = log-sum-exp of row n, losses[n] =
 * lse[n] - logit[target]. Targets must be < V. */
void cpu_xent_fwd(float *losses, float *lse, const float *logits, const int32_t *targets, int N,
                  int V);
/* The vocab-parallel cross-entropy's local parts over a rank's columns logits[N,V]: pass 0
 * sets mx[n] (the row maximum, -inf for V = 0) and tlogit[n] (the target's logit, 0 where
 * targets[n] < 0: another rank holds it); pass 1, after mx was reduced to the global maximum,
 * sets sumexp[n] = sum exp(logit - mx[n]). lse = log(sum of every rank's sumexp) + mx. */
void cpu_xent_partial(float *mx, double *sumexp, float *tlogit, const float *logits,
                      const int32_t *targets, int N, int V, int pass);
/* In place, with lse from the forward pass: logits become dloss * (softmax - onehot); rows
 * with a negative target get no onehot (vocab-parallel: another rank's column). */
void cpu_xent_bwd(float *logits, const float *lse, const int32_t *targets, int N, int V,
                  float dloss);

#endif
