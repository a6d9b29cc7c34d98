/* The CUDA trainer (train/gpu_train.h): device memory in one arena, the model's forward and
 * backward over the kernels of kernels/ with optional recomputation, ZeRO-1 over NCCL
 * (per-layer reduce-scatter on a communication stream during the backward, sharded AdamW,
 * all-gather), a host thread that prefetches batches into pinned memory, sharded
 * checkpoints, and the same log lines as the CPU path (train/train_cmd.c).
 */
#include "train/gpu_train.h"

#include "core/err.h"
#include "core/log.h"

#include <stdio.h>

#ifndef SL_HAVE_CUDA

int gpu_train_available(char *why, size_t n)
{
    snprintf(why, n, "this build has no CUDA (built with CUDA=0 or without nvcc)");
    return 0;
}

int gpu_train_run(const struct gpu_train_args *a, struct sl_world *w)
{
    (void)a;
    (void)w;
    sl_error("train.device=cuda: this build has no CUDA\nhint: rebuild where nvcc is found "
             "(make, not make CUDA=0), or use train.device=cpu");
    return 1;
}

#else /* SL_HAVE_CUDA */

#include "core/alloc.h"
#include "core/buf.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/world.h"
#include "dataset/loader.h"
#include "kernels/attention.h"
#include "kernels/cuda_common.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "train/checkpoint.h"
#include "train/gpu_ops.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#ifdef SL_HAVE_NCCL
#include <nccl.h>
#define NCCL_CHECK(call)                                                                           \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess)                                                                     \
            sl_cuda_fatal("nccl", ncclGetErrorString(r_), #call, __FILE__, __LINE__);              \
    } while (0)
#endif

/* GEMM and attention launchers return -1 for a shape they cannot run: fatal here (the shapes
 * were all checked at start-up, so this is a bug, not bad input). */
#define GEMM_CHECK(call)                                                                           \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("cublaslt", gemm_error(), #call, __FILE__, __LINE__);                    \
    } while (0)
#define ATTN_CHECK(call)                                                                           \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("attention", "shape not supported by the chosen backend", #call,         \
                          __FILE__, __LINE__);                                                     \
    } while (0)

int gpu_train_available(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, n, "no CUDA device: %s", cudaGetErrorString(e));
        cudaGetLastError(); /* clear it */
        return 0;
    }
    if (count < 1) {
        snprintf(why, n, "no CUDA device");
        return 0;
    }
    why[0] = 0;
    return 1;
}

/* ---- the pieces ---------------------------------------------------------------------- */

/* A bucket of the gradient: the tensors before the first layer (embeddings), one layer, or
 * those after the last one (final norm, output layer). Contiguous in the layout and on the
 * device; on the device padded so that every rank's slice has the same multiple of 64
 * elements. Rank r owns [dev + r len/W, dev + (r+1) len/W) of every bucket. */
struct gbucket {
    size_t la, lb;   /* layout range [la, lb) */
    size_t dev, len; /* device range [dev, dev + len) */
    size_t shard;    /* this rank's slice starts here in the master/m/v storage */
};

/* Activations of one layer (shared buffers where recomputation rebuilds them). */
struct gacts {
    sl_bf16 *res;           /* [N, D] layer input (residual stream) */
    sl_bf16 *ln1;           /* [N, D] attention norm output */
    float *m1, *r1;         /* [N] its mean (LayerNorm) and rstd */
    sl_bf16 *qkv;           /* [N, QKV] after RoPE */
    sl_bf16 *atty;          /* [N, H d] attention output */
    float *lse;             /* [B, H, T] */
    sl_bf16 *mid;           /* [N, D] residual after attention */
    sl_bf16 *ln2;           /* [N, D] MLP norm output */
    float *m2, *r2;         /* [N] */
    sl_bf16 *fc;            /* [N, FC] pre-activation */
    sl_bf16 *act;           /* [N, F] */
};

/* The input pipeline: a thread fills pinned buffers (two steps deep) from the data loader. */
struct gloader {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const struct data_loader *data;
    int dev;
    long B, T, accum, W, rank, global;
    int32_t *pinned[2]; /* per slot: accum x [tokens N | targets N] */
    cudaEvent_t copied[2];
    int pending[2]; /* a copy out of the slot was enqueued */
    int ready[2];
    long next, last;    /* steps the thread fills */
    long step0;         /* steps taken before the first one filled */
    uint64_t consumed0; /* samples consumed before step step0 + 1 */
    uint32_t *sample;
    int rc, stop;
    char err[1024];
};

enum { MEM_PARAMS, MEM_GRADS, MEM_OPTIM, MEM_ACTS, MEM_WORK, MEM_N };

struct gt {
    const struct gpu_train_args *a;
    struct sl_world *w;
    int rank, W, dev;
    struct cudaDeviceProp prop;
    struct model_layout l;
    int B, T, N, D, H, Hkv, hd, QKV, QD, F, FC, V, Vp, L;
    float attn_scale;
    /* device layout */
    size_t *doff; /* device offset of each tensor */
    struct gbucket *bk;
    int nbk;
    size_t dtotal, shard_n;
    /* the arena */
    void *arena;
    size_t mem[MEM_N];
    sl_bf16 *params, *grads;
    float *master, *m, *v;
    struct adamw_tensor *d_tensors;
    int ntensors;
    struct gacts *per, shared;
    sl_bf16 *res_final, *nf, *tmp, *logits;
    float *nfm, *nfr, *losses;
    sl_bf16 *dres, *dn, *dqkv, *datty, *dfc, *dact;
    float *rope_cos, *rope_sin;
    void *gemm_ws, *attn_ws, *norm_scratch, *emb_scratch, *gn_scratch;
    size_t attn_ws_bytes, emb_scratch_bytes;
    int32_t *d_tok[2], *d_tok_eval;
    float *d_stats; /* [0] grad norm squared, [1 + a] mean loss of micro-step a */
    float *d_eval;  /* eval_iters x accum mean losses */
    float *h_stats; /* pinned: d_stats then d_eval */
    /* libraries and streams */
    struct gemm *gemm;
    struct attention *attn;
    cudaStream_t st, comm, copy;
    cudaEvent_t ev_grad, ev_comm, ev_stats, step_done[2];
#ifdef SL_HAVE_NCCL
    ncclComm_t nccl;
    int nccl_ok;
#endif
    struct data_loader *data;
    struct gloader ld;
    struct ckpt_state cs;
    struct sl_rng rng;
    FILE *log;
    double flops_per_token;
};

static struct sl_world *fatal_world;
static void fatal_hook(void)
{
    if (fatal_world)
        sl_world_abort(fatal_world, 1);
}

static int local_rank(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                        "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                                        "LOCAL_RANK", NULL };
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

static int all_ok(struct gt *t, int rc)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(t->w, &bad, 1, SL_MAX);
    return bad ? (rc ? rc : SL_ERR_STATE) : 0;
}

static const sl_bf16 *P(const struct gt *t, int id)
{
    return id < 0 ? NULL : t->params + t->doff[id];
}

static sl_bf16 *G(const struct gt *t, int id)
{
    return id < 0 ? NULL : t->grads + t->doff[id];
}

/* ---- device layout, buckets, the arena ----------------------------------------------- */

static int bucket_of(const struct gt *t, const struct model_tensor *mt, int seen_layer)
{
    if (mt->layer >= 0)
        return 1 + mt->layer;
    return seen_layer ? t->L + 1 : 0;
}

static int plan_buckets(struct gt *t)
{
    const struct model_layout *l = &t->l;
    t->nbk = t->L + 2;
    t->bk = sl_xcalloc((size_t)t->nbk, sizeof(*t->bk));
    t->doff = sl_xcalloc((size_t)l->n, sizeof(size_t));
    int *first = sl_xmalloc((size_t)t->nbk * sizeof(int));
    for (int k = 0; k < t->nbk; k++)
        first[k] = -1;
    int seen = 0, prev = 0;
    for (int i = 0; i < l->n; i++) {
        int k = bucket_of(t, &l->t[i], seen);
        seen |= l->t[i].layer >= 0;
        if (k < prev) {
            free(first);
            return sl_err_set(SL_ERR_STATE, "the parameter table is not in layer order ('%s')",
                              l->t[i].name);
        }
        prev = k;
        if (first[k] < 0)
            first[k] = i;
    }
    size_t unit = (size_t)t->W * 64, dev = 0, shard = 0;
    for (int k = 0; k < t->nbk; k++) {
        struct gbucket *b = &t->bk[k];
        b->la = first[k] < 0 ? 0 : l->t[first[k]].offset;
        size_t end = l->total;
        for (int j = k + 1; j < t->nbk; j++)
            if (first[j] >= 0) {
                end = l->t[first[j]].offset;
                break;
            }
        b->lb = first[k] < 0 ? b->la : end;
        b->dev = dev;
        b->len = (b->lb - b->la + unit - 1) / unit * unit;
        b->shard = shard;
        dev += b->len;
        shard += b->len / (size_t)t->W;
    }
    free(first);
    for (int i = 0; i < l->n; i++) {
        int k = -1;
        for (int j = 0; j < t->nbk; j++)
            if (t->bk[j].lb > t->bk[j].la && l->t[i].offset >= t->bk[j].la &&
                l->t[i].offset < t->bk[j].lb)
                k = j;
        t->doff[i] = t->bk[k].dev + (l->t[i].offset - t->bk[k].la);
    }
    t->dtotal = dev;
    t->shard_n = shard;
    return 0;
}

/* This rank's slice of bucket k: device start, element count, and the layout range it maps
 * to (n_layout <= count; the rest is padding). */
static void slice_of(const struct gt *t, int k, size_t *dev0, size_t *count, size_t *lay0,
                     size_t *n_layout)
{
    const struct gbucket *b = &t->bk[k];
    size_t cnt = b->len / (size_t)t->W;
    size_t off = (size_t)t->rank * cnt;
    *dev0 = b->dev + off;
    *count = cnt;
    *lay0 = b->la + off;
    size_t real = b->lb - b->la;
    *n_layout = off >= real ? 0 : (real - off < cnt ? real - off : cnt);
}

struct carver {
    char *base;
    size_t off;
    size_t *mem;
};

static void *carve(struct carver *c, size_t bytes, int cat)
{
    size_t a = (c->off + 255) & ~(size_t)255;
    c->off = a + bytes;
    c->mem[cat] += bytes;
    return c->base ? c->base + a : NULL;
}

/* Lay out every device buffer; with base NULL only count. */
static void plan_memory(struct gt *t, char *base)
{
    struct carver c = { base, 0, t->mem };
    memset(t->mem, 0, sizeof(t->mem));
    size_t N = (size_t)t->N, D = (size_t)t->D, b2 = sizeof(sl_bf16), f4 = sizeof(float);
    int rc_mode = (int)t->a->recompute;
    t->params = carve(&c, t->dtotal * b2, MEM_PARAMS);
    t->grads = carve(&c, t->dtotal * b2, MEM_GRADS);
    t->master = carve(&c, t->shard_n * f4, MEM_OPTIM);
    t->m = carve(&c, t->shard_n * f4, MEM_OPTIM);
    t->v = carve(&c, t->shard_n * f4, MEM_OPTIM);
    t->d_tensors = carve(&c, (size_t)t->ntensors * sizeof(struct adamw_tensor), MEM_OPTIM);
    /* per layer when recompute <= keep, else one shared buffer */
#define FIELD(f, keep, bytes)                                                                      \
    do {                                                                                           \
        if (rc_mode <= (keep)) {                                                                   \
            t->shared.f = NULL;                                                                    \
            for (int li = 0; li < t->L; li++)                                                      \
                t->per[li].f = carve(&c, (bytes), MEM_ACTS);                                       \
        } else {                                                                                   \
            for (int li = 0; li < t->L; li++)                                                      \
                t->per[li].f = NULL;                                                               \
            t->shared.f = carve(&c, (bytes), MEM_ACTS);                                            \
        }                                                                                          \
    } while (0)
    size_t mean_bytes = t->a->mc.norm == MODEL_RMSNORM ? 0 : N * f4;
    FIELD(res, GPU_RECOMPUTE_FULL, N * D * b2);
    FIELD(ln1, GPU_RECOMPUTE_NONE, N * D * b2);
    FIELD(m1, GPU_RECOMPUTE_SELECTIVE, mean_bytes);
    FIELD(r1, GPU_RECOMPUTE_SELECTIVE, N * f4);
    FIELD(qkv, GPU_RECOMPUTE_SELECTIVE, N * (size_t)t->QKV * b2);
    FIELD(atty, GPU_RECOMPUTE_SELECTIVE, N * (size_t)t->QD * b2);
    FIELD(lse, GPU_RECOMPUTE_SELECTIVE, N * (size_t)t->H * f4);
    FIELD(mid, GPU_RECOMPUTE_SELECTIVE, N * D * b2);
    FIELD(ln2, GPU_RECOMPUTE_NONE, N * D * b2);
    FIELD(m2, GPU_RECOMPUTE_SELECTIVE, mean_bytes);
    FIELD(r2, GPU_RECOMPUTE_SELECTIVE, N * f4);
    FIELD(fc, GPU_RECOMPUTE_SELECTIVE, N * (size_t)t->FC * b2);
    FIELD(act, GPU_RECOMPUTE_NONE, N * (size_t)t->F * b2);
#undef FIELD
    t->res_final = carve(&c, N * D * b2, MEM_ACTS);
    t->nf = carve(&c, N * D * b2, MEM_ACTS);
    t->nfm = carve(&c, N * f4, MEM_ACTS);
    t->nfr = carve(&c, N * f4, MEM_ACTS);
    t->tmp = carve(&c, N * D * b2, MEM_ACTS);
    t->logits = carve(&c, N * (size_t)t->Vp * b2, MEM_ACTS);
    t->losses = carve(&c, N * f4, MEM_ACTS);
    t->dres = carve(&c, N * D * b2, MEM_ACTS);
    t->dn = carve(&c, N * D * b2, MEM_ACTS);
    t->dqkv = carve(&c, N * (size_t)t->QKV * b2, MEM_ACTS);
    t->datty = carve(&c, N * (size_t)t->QD * b2, MEM_ACTS);
    t->dfc = carve(&c, N * (size_t)t->FC * b2, MEM_ACTS);
    t->dact = carve(&c, N * (size_t)t->F * b2, MEM_ACTS);
    /* workspace */
    size_t half = (size_t)t->hd / 2;
    t->rope_cos = carve(&c, (size_t)t->T * half * f4, MEM_WORK);
    t->rope_sin = carve(&c, (size_t)t->T * half * f4, MEM_WORK);
    t->gemm_ws = carve(&c, GEMM_WORKSPACE_BYTES, MEM_WORK);
    t->attn_ws = carve(&c, t->attn_ws_bytes, MEM_WORK);
    int widths[3] = { t->D, t->QKV, t->FC };
    size_t ns = 0;
    for (int i = 0; i < 3; i++) {
        size_t s = norm_bwd_scratch_size(t->N, widths[i]);
        ns = s > ns ? s : ns;
    }
    t->norm_scratch = carve(&c, ns, MEM_WORK);
    t->emb_scratch = carve(&c, t->emb_scratch_bytes, MEM_WORK);
    t->gn_scratch = carve(&c, global_norm_scratch_size(), MEM_WORK);
    size_t tok = (size_t)t->a->accum * 2 * N * sizeof(int32_t);
    t->d_tok[0] = carve(&c, tok, MEM_WORK);
    t->d_tok[1] = carve(&c, tok, MEM_WORK);
    t->d_tok_eval = carve(&c, 2 * N * sizeof(int32_t), MEM_WORK);
    t->d_stats = carve(&c, (size_t)(1 + t->a->accum) * f4, MEM_WORK);
    t->d_eval = carve(&c, (size_t)(t->a->eval_iters * t->a->accum) * f4, MEM_WORK);
}

static struct gacts acts(const struct gt *t, int li)
{
    const struct gacts *p = &t->per[li], *s = &t->shared;
    struct gacts a;
#define PICK(f) a.f = p->f ? p->f : s->f
    PICK(res);
    PICK(ln1);
    PICK(m1);
    PICK(r1);
    PICK(qkv);
    PICK(atty);
    PICK(lse);
    PICK(mid);
    PICK(ln2);
    PICK(m2);
    PICK(r2);
    PICK(fc);
    PICK(act);
#undef PICK
    return a;
}

/* ---- forward and backward ------------------------------------------------------------ */

static void norm_fwd(struct gt *t, sl_bf16 *out, float *mean, float *rstd, sl_bf16 *resid_out,
                     const sl_bf16 *x, const sl_bf16 *r, int wid, int bid)
{
    if (t->a->mc.norm == MODEL_RMSNORM)
        rmsnorm_fwd(out, rstd, resid_out, x, r, P(t, wid), t->N, t->D, t->a->mc.norm_eps, t->st);
    else
        layernorm_fwd(out, mean, rstd, resid_out, x, r, P(t, wid), P(t, bid), t->N, t->D,
                      t->a->mc.norm_eps, t->st);
}

static void norm_bwd(struct gt *t, const sl_bf16 *dresid, const sl_bf16 *dout, const sl_bf16 *h,
                     int wid, int bid, const float *mean, const float *rstd)
{
    if (t->a->mc.norm == MODEL_RMSNORM)
        rmsnorm_bwd(t->dres, G(t, wid), t->norm_scratch, dresid, dout, h, P(t, wid), rstd, t->N,
                    t->D, t->st);
    else
        layernorm_bwd(t->dres, G(t, wid), G(t, bid), t->norm_scratch, dresid, dout, h, P(t, wid),
                      mean, rstd, t->N, t->D, t->st);
}

static void lin_fwd(struct gt *t, sl_bf16 *y, const sl_bf16 *x, int wid, int bid, int IC, int OC)
{
    GEMM_CHECK(linear_fwd(t->gemm, y, NULL, x, P(t, wid), P(t, bid), t->N, IC, OC, 0, t->st));
}

/* dx = dy W; dW += dy^T x; db += column sums of dy. */
static void lin_bwd(struct gt *t, sl_bf16 *dx, const sl_bf16 *dy, const sl_bf16 *x, int wid,
                    int bid, int IC, int OC)
{
    GEMM_CHECK(linear_bwd_data(t->gemm, dx, NULL, dy, P(t, wid), NULL, t->N, IC, OC, 0, t->st));
    GEMM_CHECK(linear_bwd_weight(t->gemm, G(t, wid), NULL, dy, x, t->N, IC, OC, 1, t->st));
    if (bid >= 0)
        bias_bwd(G(t, bid), t->norm_scratch, dy, t->N, OC, t->st);
}

static void act_fwd(struct gt *t, sl_bf16 *act, const sl_bf16 *fc)
{
    size_t n = (size_t)t->N * t->F;
    switch (t->a->mc.act) {
    case MODEL_SWIGLU:
        swiglu_fwd(act, fc, t->N, t->F, t->st);
        break;
    case MODEL_GELU_TANH:
        gelu_fwd(act, fc, n, t->st);
        break;
    case MODEL_GELU:
        gelu_erf_fwd(act, fc, n, t->st);
        break;
    }
}

static void act_bwd(struct gt *t, sl_bf16 *dfc, const sl_bf16 *dact, const sl_bf16 *fc)
{
    size_t n = (size_t)t->N * t->F;
    switch (t->a->mc.act) {
    case MODEL_SWIGLU:
        swiglu_bwd(dfc, dact, fc, t->N, t->F, t->st);
        break;
    case MODEL_GELU_TANH:
        gelu_bwd(dfc, dact, fc, n, t->st);
        break;
    case MODEL_GELU:
        gelu_erf_bwd(dfc, dact, fc, n, t->st);
        break;
    }
}

/* Layer li up to the MLP activation. Its input is x + r written to a->res (r != NULL), or
 * x == a->res. The MLP output projection (into t->tmp) is the caller's. */
static void layer_fwd(struct gt *t, int li, const struct gacts *a, const sl_bf16 *x,
                      const sl_bf16 *r)
{
    const struct model_layer_ids *id = &t->l.layer[li];
    norm_fwd(t, a->ln1, a->m1, a->r1, r ? a->res : NULL, x, r, id->attn_norm_w, id->attn_norm_b);
    lin_fwd(t, a->qkv, a->ln1, id->qkv_w, id->qkv_b, t->D, t->QKV);
    if (t->a->mc.pos == MODEL_POS_ROPE)
        rope_fwd(a->qkv, t->rope_cos, t->rope_sin, t->B, t->T, t->H, t->Hkv, t->hd, t->st);
    ATTN_CHECK(attention_fwd(t->attn, a->atty, a->lse, a->qkv, t->B, t->T, t->H, t->Hkv, t->hd,
                             t->attn_scale, t->attn_ws, t->attn_ws_bytes, t->st));
    lin_fwd(t, t->tmp, a->atty, id->attn_proj_w, id->attn_proj_b, t->QD, t->D);
    norm_fwd(t, a->ln2, a->m2, a->r2, a->mid, a->res, t->tmp, id->mlp_norm_w, id->mlp_norm_b);
    lin_fwd(t, a->fc, a->ln2, id->fc_w, id->fc_b, t->D, t->FC);
    act_fwd(t, a->act, a->fc);
}

/* Forward to the logits of tokens tok[N] (targets follow at tok + N). */
static void model_fwd(struct gt *t, const int32_t *tok)
{
    const struct model_layout *l = &t->l;
    struct gacts a0 = acts(t, 0);
    embedding_fwd(a0.res, tok, P(t, l->embed), P(t, l->pos), t->B, t->T, t->D, t->V, t->st);
    for (int li = 0; li < t->L; li++) {
        struct gacts a = acts(t, li);
        if (li == 0) {
            layer_fwd(t, 0, &a, a.res, NULL);
        } else {
            struct gacts p = acts(t, li - 1);
            layer_fwd(t, li, &a, p.mid, t->tmp);
        }
        lin_fwd(t, t->tmp, a.act, l->layer[li].mlp_proj_w, l->layer[li].mlp_proj_b, t->F, t->D);
    }
    struct gacts last = acts(t, t->L - 1);
    norm_fwd(t, t->nf, t->nfm, t->nfr, t->res_final, last.mid, t->tmp, l->final_norm_w,
             l->final_norm_b);
    int head = t->a->mc.tied_embeddings ? l->embed : l->lm_head;
    lin_fwd(t, t->logits, t->nf, head, -1, t->D, t->Vp);
}

/* Bucket k's gradient is final for this step: reduce-scatter it on the communication stream
 * (sum over ranks; each rank keeps its slice, in place). */
static void bucket_reduce(struct gt *t, int k)
{
#ifdef SL_HAVE_NCCL
    const struct gbucket *b = &t->bk[k];
    if (!b->len)
        return;
    size_t cnt = b->len / (size_t)t->W;
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    NCCL_CHECK(ncclReduceScatter(t->grads + b->dev, t->grads + b->dev + (size_t)t->rank * cnt, cnt,
                                 ncclBfloat16, ncclSum, t->nccl, t->comm));
#else
    (void)t;
    (void)k;
#endif
}

static void layer_bwd(struct gt *t, int li, const struct gacts *a)
{
    const struct model_layer_ids *id = &t->l.layer[li];
    /* t->dres: the gradient of the layer output (and, through the skip, of a->mid) */
    lin_bwd(t, t->dact, t->dres, a->act, id->mlp_proj_w, id->mlp_proj_b, t->F, t->D);
    act_bwd(t, t->dfc, t->dact, a->fc);
    lin_bwd(t, t->dn, t->dfc, a->ln2, id->fc_w, id->fc_b, t->D, t->FC);
    norm_bwd(t, t->dres, t->dn, a->mid, id->mlp_norm_w, id->mlp_norm_b, a->m2, a->r2);
    /* t->dres: the gradient of a->mid (and, through the skip, of a->res) */
    lin_bwd(t, t->datty, t->dres, a->atty, id->attn_proj_w, id->attn_proj_b, t->QD, t->D);
    ATTN_CHECK(attention_bwd(t->attn, t->dqkv, t->datty, a->qkv, a->atty, a->lse, t->B, t->T, t->H,
                             t->Hkv, t->hd, t->attn_scale, t->attn_ws, t->attn_ws_bytes, t->st));
    if (t->a->mc.pos == MODEL_POS_ROPE)
        rope_bwd(t->dqkv, t->rope_cos, t->rope_sin, t->B, t->T, t->H, t->Hkv, t->hd, t->st);
    lin_bwd(t, t->dn, t->dqkv, a->ln1, id->qkv_w, id->qkv_b, t->D, t->QKV);
    norm_bwd(t, t->dres, t->dn, a->res, id->attn_norm_w, id->attn_norm_b, a->m1, a->r1);
}

/* Backward of the last model_fwd, after the classifier turned the logits into their
 * gradient. Gradients accumulate (+=). On the last micro-step every bucket is
 * reduce-scattered as soon as its gradient is complete. */
static void model_bwd(struct gt *t, const int32_t *tok, int reduce)
{
    const struct model_layout *l = &t->l;
    int head = t->a->mc.tied_embeddings ? l->embed : l->lm_head;
    GEMM_CHECK(linear_bwd_data(t->gemm, t->dn, NULL, t->logits, P(t, head), NULL, t->N, t->D,
                               t->Vp, 0, t->st));
    GEMM_CHECK(linear_bwd_weight(t->gemm, G(t, head), NULL, t->logits, t->nf, t->N, t->D, t->Vp,
                                 1, t->st));
    norm_bwd(t, NULL, t->dn, t->res_final, l->final_norm_w, l->final_norm_b, t->nfm, t->nfr);
    if (reduce)
        bucket_reduce(t, t->L + 1);
    for (int li = t->L - 1; li >= 0; li--) {
        struct gacts a = acts(t, li);
        const struct model_layer_ids *id = &l->layer[li];
        if (t->a->recompute == GPU_RECOMPUTE_SELECTIVE) {
            norm_fwd(t, a.ln1, NULL, NULL, NULL, a.res, NULL, id->attn_norm_w, id->attn_norm_b);
            norm_fwd(t, a.ln2, NULL, NULL, NULL, a.mid, NULL, id->mlp_norm_w, id->mlp_norm_b);
            act_fwd(t, a.act, a.fc);
        } else if (t->a->recompute == GPU_RECOMPUTE_FULL) {
            layer_fwd(t, li, &a, a.res, NULL);
        }
        layer_bwd(t, li, &a);
        if (reduce)
            bucket_reduce(t, 1 + li);
    }
    embedding_bwd(G(t, l->embed), G(t, l->pos), t->emb_scratch, t->emb_scratch_bytes, t->dres, tok,
                  t->B, t->T, t->D, t->V, t->st);
    if (reduce)
        bucket_reduce(t, 0);
}

/* ---- the input pipeline -------------------------------------------------------------- */

static void fill_tokens(int32_t *dst, const uint32_t *sample, long b, long T, long N)
{
    for (long k = 0; k < T; k++) {
        dst[b * T + k] = (int32_t)sample[k];
        dst[N + b * T + k] = (int32_t)sample[k + 1];
    }
}

static void loader_fail(struct gloader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void loader_fail(struct gloader *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&L->mu);
    vsnprintf(L->err, sizeof(L->err), fmt, ap);
    L->rc = SL_ERR_STATE;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    va_end(ap);
}

static void *loader_main(void *arg)
{
    struct gloader *L = arg;
    cudaError_t e = cudaSetDevice(L->dev);
    if (e != cudaSuccess) {
        loader_fail(L, "data thread: cudaSetDevice: %s", cudaGetErrorString(e));
        return NULL;
    }
    long N = L->B * L->T;
    for (long s = L->next; s <= L->last; s++) {
        int slot = (int)(s & 1);
        pthread_mutex_lock(&L->mu);
        while (L->ready[slot] && !L->stop)
            pthread_cond_wait(&L->cv, &L->mu);
        int stop = L->stop, pend = L->pending[slot];
        pthread_mutex_unlock(&L->mu);
        if (stop)
            break;
        if (pend && (e = cudaEventSynchronize(L->copied[slot])) != cudaSuccess) {
            loader_fail(L, "data thread: waiting for a copy: %s", cudaGetErrorString(e));
            return NULL;
        }
        uint64_t base = L->consumed0 + (uint64_t)(s - L->step0 - 1) * (uint64_t)L->global;
        for (long a = 0; a < L->accum; a++)
            for (long b = 0; b < L->B; b++) {
                uint64_t i = base + (uint64_t)(a * L->B * L->W + L->rank * L->B + b);
                if (data_loader_sample(L->data, DATA_TRAIN, i, L->sample)) {
                    loader_fail(L, "%s", sl_err_msg());
                    return NULL;
                }
                fill_tokens(L->pinned[slot] + (size_t)a * 2 * N, L->sample, b, L->T, N);
            }
        pthread_mutex_lock(&L->mu);
        L->ready[slot] = 1;
        pthread_cond_broadcast(&L->cv);
        pthread_mutex_unlock(&L->mu);
    }
    return NULL;
}

/* Step s's batch onto the device (copy stream), ordered before the compute stream's work. */
static int loader_take(struct gt *t, long s)
{
    struct gloader *L = &t->ld;
    int slot = (int)(s & 1);
    pthread_mutex_lock(&L->mu);
    while (!L->ready[slot] && !L->rc)
        pthread_cond_wait(&L->cv, &L->mu);
    int ready = L->ready[slot];
    pthread_mutex_unlock(&L->mu);
    if (!ready)
        return sl_err_set(SL_ERR_STATE, "%s", L->err);
    size_t bytes = (size_t)L->accum * 2 * (size_t)t->N * sizeof(int32_t);
    /* the device buffer was last read by step s - 2 */
    CUDA_CHECK(cudaStreamWaitEvent(t->copy, t->step_done[slot], 0));
    CUDA_CHECK(cudaMemcpyAsync(t->d_tok[slot], L->pinned[slot], bytes, cudaMemcpyHostToDevice,
                               t->copy));
    CUDA_CHECK(cudaEventRecord(L->copied[slot], t->copy));
    CUDA_CHECK(cudaStreamWaitEvent(t->st, L->copied[slot], 0));
    pthread_mutex_lock(&L->mu);
    L->ready[slot] = 0;
    L->pending[slot] = 1;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    return 0;
}

static int loader_start(struct gt *t)
{
    struct gloader *L = &t->ld;
    const struct gpu_train_args *a = t->a;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    L->data = t->data;
    L->dev = t->dev;
    L->B = a->micro_batch;
    L->T = a->seq_len;
    L->accum = a->accum;
    L->W = t->W;
    L->rank = t->rank;
    L->global = a->global_batch;
    size_t bytes = (size_t)a->accum * 2 * (size_t)t->N * sizeof(int32_t);
    for (int i = 0; i < 2; i++) {
        CUDA_CHECK(cudaHostAlloc((void **)&L->pinned[i], bytes, cudaHostAllocDefault));
        CUDA_CHECK(cudaEventCreateWithFlags(&L->copied[i], cudaEventDisableTiming));
    }
    L->sample = sl_xmalloc((size_t)(a->seq_len + 1) * sizeof(uint32_t));
    L->step0 = t->cs.step;
    L->consumed0 = t->cs.consumed_samples;
    L->next = t->cs.step + 1;
    L->last = a->steps;
    if (pthread_create(&L->th, NULL, loader_main, L) != 0)
        return sl_err_set(SL_ERR_STATE, "cannot start the data thread: %s", strerror(errno));
    L->started = 1;
    return 0;
}

static void loader_stop(struct gt *t)
{
    struct gloader *L = &t->ld;
    if (L->started) {
        pthread_mutex_lock(&L->mu);
        L->stop = 1;
        pthread_cond_broadcast(&L->cv);
        pthread_mutex_unlock(&L->mu);
        pthread_join(L->th, NULL);
        L->started = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (L->pinned[i])
            cudaFreeHost(L->pinned[i]);
        if (L->copied[i])
            cudaEventDestroy(L->copied[i]);
    }
    free(L->sample);
    if (L->data) {
        pthread_mutex_destroy(&L->mu);
        pthread_cond_destroy(&L->cv);
    }
}

/* ---- optimizer ----------------------------------------------------------------------- */

/* After the last micro-step's backward: wait for the reduce-scatters, the squared global
 * norm of the reduced gradient (each rank over its slices, summed over ranks), the losses
 * summed over ranks, and the statistics copied to pinned memory (event ev_stats). */
static void reduce_stats(struct gt *t)
{
    CUDA_CHECK(cudaEventRecord(t->ev_comm, t->comm));
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_comm, 0));
    int first = 1;
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (!cnt)
            continue;
        global_norm_sq(t->d_stats, t->gn_scratch, t->grads + d0, cnt, !first, t->st);
        first = 0;
    }
    if (first)
        fill_f32(t->d_stats, 0.0f, 1, t->st);
#ifdef SL_HAVE_NCCL
    NCCL_CHECK(ncclAllReduce(t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), ncclFloat, ncclSum,
                             t->nccl, t->st));
#endif
    CUDA_CHECK(cudaMemcpyAsync(t->h_stats, t->d_stats, (size_t)(1 + t->a->accum) * sizeof(float),
                               cudaMemcpyDeviceToHost, t->st));
    CUDA_CHECK(cudaEventRecord(t->ev_stats, t->st));
}

/* Cast this rank's master slices to the bf16 working copy and all-gather the parameters. */
static void gather_params(struct gt *t, int cast)
{
    for (int k = 0; cast && k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (cnt)
            cast_f32_to_bf16(t->params + d0, t->master + t->bk[k].shard, cnt, t->st);
    }
#ifdef SL_HAVE_NCCL
    NCCL_CHECK(ncclGroupStart());
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (cnt)
            NCCL_CHECK(ncclAllGather(t->params + d0, t->params + t->bk[k].dev, cnt, ncclBfloat16,
                                     t->nccl, t->st));
    }
    NCCL_CHECK(ncclGroupEnd());
#endif
}

static void optimizer_step(struct gt *t, double lr)
{
    const struct gpu_train_args *a = t->a;
    struct adamw_hparams hp;
    memset(&hp, 0, sizeof(hp));
    hp.lr = (float)lr;
    hp.beta1 = (float)a->adam.beta1;
    hp.beta2 = (float)a->adam.beta2;
    hp.eps = (float)a->adam.eps;
    hp.weight_decay = (float)a->adam.weight_decay;
    hp.step = t->cs.adam_step;
    hp.grad_scale = 1.0f;
    hp.max_grad_norm = a->clip > 0 ? (float)a->clip : 0.0f;
    hp.grad_norm_sq = t->d_stats;
    hp.seed = (uint64_t)t->cs.step;
    hp.stochastic_rounding = 0;
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (!cnt)
            continue;
        size_t s0 = t->bk[k].shard;
        adamw_update(t->params + d0, t->grads + d0, t->master + s0, t->m + s0, t->v + s0,
                     (int64_t)cnt, (int64_t)d0, t->d_tensors, t->ntensors, &hp, t->st);
    }
    gather_params(t, 0);
}

/* ---- state: initialisation, resume, checkpoints -------------------------------------- */

/* The ranges of the layout this rank's shard covers, and where each lands in host buffers
 * laid out like the shard storage. */
static struct ckpt_range *shard_ranges(struct gt *t, float *master, float *m, float *v)
{
    struct ckpt_range *r = sl_xcalloc((size_t)t->nbk, sizeof(*r));
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        slice_of(t, k, &d0, &cnt, &l0, &nl);
        r[k].first = l0;
        r[k].n = nl;
        r[k].master = master + t->bk[k].shard;
        r[k].m = m + t->bk[k].shard;
        r[k].v = v + t->bk[k].shard;
    }
    return r;
}

/* Fill the device state from host buffers shaped like the shard storage. */
static void upload_state(struct gt *t, const float *master, const float *m, const float *v)
{
    size_t bytes = t->shard_n * sizeof(float);
    CUDA_CHECK(cudaMemcpy(t->master, master, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t->m, m, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t->v, v, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemsetAsync(t->params, 0, t->dtotal * sizeof(sl_bf16), t->st));
    gather_params(t, 1);
    CUDA_CHECK(cudaStreamSynchronize(t->st));
}

/* Fresh weights (the CPU path's initialisation, on every rank) or a checkpoint's. */
static int load_state(struct gt *t, const char *from)
{
    size_t n = t->shard_n;
    float *host = calloc(3 * n + 1, sizeof(float));
    if (!host)
        return sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory for the "
                                        "optimizer shard", 3 * n * sizeof(float) >> 20);
    float *hm = host, *mm = host + n, *vv = host + 2 * n;
    struct ckpt_range *r = shard_ranges(t, hm, mm, vv);
    int rc = 0;
    if (from) {
        float **dst = sl_xcalloc((size_t)t->nbk, sizeof(float *));
        for (int k = 0; k < t->nbk; k++)
            dst[k] = (float *)r[k].master;
        rc = ckpt_read_ranges(from, &t->l, CKPT_PARAMS, r, (size_t)t->nbk, dst);
        for (int k = 0; k < t->nbk; k++)
            dst[k] = (float *)r[k].m;
        if (!rc)
            rc = ckpt_read_ranges(from, &t->l, CKPT_EXP_AVG, r, (size_t)t->nbk, dst);
        for (int k = 0; k < t->nbk; k++)
            dst[k] = (float *)r[k].v;
        if (!rc)
            rc = ckpt_read_ranges(from, &t->l, CKPT_EXP_AVG_SQ, r, (size_t)t->nbk, dst);
        free(dst);
    } else {
        float *slab = malloc(t->l.total * sizeof(float));
        if (!slab) {
            rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory for the "
                                          "initial weights", t->l.total * sizeof(float) >> 20);
        } else {
            model_init_params(&t->a->mc, &t->l, slab, sl_rng_u64(&t->rng));
            for (int k = 0; k < t->nbk; k++)
                if (r[k].n)
                    memcpy((float *)r[k].master, slab + r[k].first, r[k].n * sizeof(float));
            free(slab);
        }
    }
    if (!rc)
        upload_state(t, hm, mm, vv);
    free(r);
    free(host);
    return rc;
}

static int save_checkpoint(struct gt *t)
{
    const struct gpu_train_args *a = t->a;
    long step = t->cs.step;
    int rc = t->rank == 0 ? ckpt_begin(a->ckpt_dir, step) : 0;
    if ((rc = all_ok(t, rc)))
        return rc;
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    size_t n = t->shard_n;
    float *host = malloc((3 * n + 1) * sizeof(float));
    float *slab = NULL;
    uint16_t *bits = NULL;
    if (!host) {
        rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate host memory for the checkpoint");
        goto done;
    }
    CUDA_CHECK(cudaMemcpy(host, t->master, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(host + n, t->m, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(host + 2 * n, t->v, n * sizeof(float), cudaMemcpyDeviceToHost));
    struct ckpt_range *r = shard_ranges(t, host, host + n, host + 2 * n);
    rc = ckpt_write_shard(a->ckpt_dir, step, t->rank, t->W, r, (size_t)t->nbk);
    free(r);
    if (!rc && t->rank == 0) {
        /* model.safetensors: the bf16 working weights, widened (exact) to fp32 */
        slab = calloc(t->l.total + 1, sizeof(float));
        bits = malloc(t->dtotal * sizeof(uint16_t));
        if (!slab || !bits) {
            rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate host memory for the checkpoint");
            goto done;
        }
        CUDA_CHECK(cudaMemcpy(bits, t->params, t->dtotal * sizeof(uint16_t),
                              cudaMemcpyDeviceToHost));
        for (int i = 0; i < t->l.n; i++) {
            const struct model_tensor *mt = &t->l.t[i];
            for (size_t k = 0; k < mt->numel; k++) {
                uint32_t u = (uint32_t)bits[t->doff[i] + k] << 16;
                memcpy(&slab[mt->offset + k], &u, sizeof(u));
            }
        }
        rc = ckpt_write_model(a->ckpt_dir, step, &t->l, slab);
    }
done:
    free(host);
    free(slab);
    free(bits);
    if (rc)
        sl_error("%s", sl_err_msg());
    if ((rc = all_ok(t, rc))) {
        if (t->rank == 0)
            ckpt_abort(a->ckpt_dir, step);
        return rc;
    }
    if (t->rank == 0) {
        memcpy(t->cs.rng, t->rng.s, sizeof(t->cs.rng));
        rc = ckpt_commit(a->ckpt_dir, &a->mc, &t->cs, a->config_json, a->optim_json, 1, t->W);
        if (!rc)
            rc = ckpt_prune(a->ckpt_dir, (int)a->keep_last);
        if (!rc)
            sl_info("saved checkpoint '%s/step-%08ld'", a->ckpt_dir, step);
        else
            sl_error("%s", sl_err_msg());
    }
    return all_ok(t, rc);
}

/* ---- the loop ------------------------------------------------------------------------ */

static void log_json(struct gt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_json(struct gt *t, const char *fmt, ...)
{
    if (!t->log)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(t->log, fmt, ap);
    va_end(ap);
    fflush(t->log);
}

static void jnum(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.9g", v);
    else
        snprintf(buf, n, "null");
}

static void read_stats(struct gt *t, double *loss, double *norm)
{
    CUDA_CHECK(cudaEventSynchronize(t->ev_stats));
    double s = 0.0;
    for (long a = 0; a < t->a->accum; a++)
        s += t->h_stats[1 + a];
    *loss = s / (double)(t->a->accum * t->W);
    *norm = sqrt((double)t->h_stats[0]);
}

static int evaluate(struct gt *t, double *loss)
{
    const struct gpu_train_args *a = t->a;
    long B = a->micro_batch, T = a->seq_len, N = B * T;
    int32_t *stage = NULL;
    uint32_t *sample = sl_xmalloc((size_t)(T + 1) * sizeof(uint32_t));
    CUDA_CHECK(cudaHostAlloc((void **)&stage, (size_t)(2 * N) * sizeof(int32_t),
                             cudaHostAllocDefault));
    int rc = 0;
    long n = 0;
    for (long it = 0; it < a->eval_iters && !rc; it++) {
        uint64_t base = (uint64_t)it * (uint64_t)a->global_batch;
        for (long m = 0; m < a->accum && !rc; m++, n++) {
            uint64_t first = base + (uint64_t)(m * B * t->W + t->rank * B);
            CUDA_CHECK(cudaStreamSynchronize(t->st)); /* the stage is free again */
            for (long b = 0; b < B && !rc; b++) {
                rc = data_loader_sample(t->data, DATA_VALID, first + (uint64_t)b, sample);
                if (!rc)
                    fill_tokens(stage, sample, b, T, N);
            }
            if (rc)
                break;
            CUDA_CHECK(cudaMemcpyAsync(t->d_tok_eval, stage, (size_t)(2 * N) * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, t->st));
            model_fwd(t, t->d_tok_eval);
            classifier_fwd_bwd(t->losses, t->logits, t->d_tok_eval + N, t->N, t->V, t->Vp, 1.0f,
                               0, t->st);
            sum_f32(t->d_eval + n, t->losses, (size_t)t->N, 1.0f / (float)t->N, t->st);
        }
    }
    if (rc)
        sl_error("validation failed: %s", sl_err_msg());
    rc = all_ok(t, rc);
    if (!rc) {
#ifdef SL_HAVE_NCCL
        NCCL_CHECK(ncclAllReduce(t->d_eval, t->d_eval, (size_t)n, ncclFloat, ncclSum, t->nccl,
                                 t->st));
#endif
        float *h = t->h_stats + 1 + a->accum;
        CUDA_CHECK(cudaMemcpyAsync(h, t->d_eval, (size_t)n * sizeof(float),
                                   cudaMemcpyDeviceToHost, t->st));
        CUDA_CHECK(cudaStreamSynchronize(t->st));
        double s = 0.0;
        for (long i = 0; i < n; i++)
            s += h[i];
        *loss = s / ((double)n * t->W);
    }
    cudaFreeHost(stage);
    free(sample);
    return rc;
}

static int train_loop(struct gt *t)
{
    const struct gpu_train_args *a = t->a;
    long T = a->seq_len;
    float scale = (float)(1.0 / ((double)a->micro_batch * T * a->accum * t->W));
    double t_last = sl_now();
    long step_last = t->cs.step;
    int rc;
    while (t->cs.step < a->steps) {
        long step = t->cs.step + 1;
        int slot = (int)(step & 1);
        if ((rc = loader_take(t, step))) {
            sl_error("%s", sl_err_msg());
            sl_world_abort(t->w, 1); /* the other ranks wait in NCCL: stop them */
        }
        CUDA_CHECK(cudaMemsetAsync(t->grads, 0, t->dtotal * sizeof(sl_bf16), t->st));
        for (long m = 0; m < a->accum; m++) {
            const int32_t *tok = t->d_tok[slot] + (size_t)m * 2 * t->N;
            model_fwd(t, tok);
            classifier_fwd_bwd(t->losses, t->logits, tok + t->N, t->N, t->V, t->Vp, scale, 1, t->st);
            sum_f32(t->d_stats + 1 + m, t->losses, (size_t)t->N, 1.0f / (float)t->N, t->st);
            model_bwd(t, tok, m == a->accum - 1);
        }
        CUDA_CHECK(cudaEventRecord(t->step_done[slot], t->st));
        reduce_stats(t);
        double lr = lr_at(&a->lr, step);
        int logged = step % a->log_interval == 0 || step == a->steps;
        int saving = a->ckpt_dir && ((a->ckpt_interval && step % a->ckpt_interval == 0) ||
                                     step == a->steps);
        double loss = NAN, norm = NAN;
        int finite = 1;
        if (a->on_nan_skip) {
            /* the decision needs the numbers before the update: one wait per step */
            read_stats(t, &loss, &norm);
            finite = isfinite(loss) && isfinite(norm);
        }
        if (finite) {
            t->cs.adam_step++;
            optimizer_step(t, lr);
        } else {
            sl_warn("%s at step %ld: update skipped (train.on_nan=skip)",
                    isfinite(loss) ? "gradient norm is not finite" : "loss is not finite", step);
            t->cs.skipped++;
        }
        t->cs.step = step;
        t->cs.consumed_samples += (uint64_t)a->global_batch;
        if (logged || saving || (a->eval_interval && step % a->eval_interval == 0)) {
            read_stats(t, &loss, &norm);
            t->cs.loss = loss;
            if (!a->on_nan_skip && !(isfinite(loss) && isfinite(norm))) {
                sl_error("%s at step %ld: stopping (train.on_nan=stop)\n"
                         "hint: lower optim.lr or raise optim.warmup_steps; train.on_nan=skip "
                         "skips such steps instead",
                         isfinite(loss) ? "gradient norm is not finite" : "loss is not finite",
                         step);
                return SL_ERR_STATE;
            }
        }
        if (logged) {
            CUDA_CHECK(cudaStreamSynchronize(t->st));
            double now = sl_now();
            double dt = (now - t_last) / (double)(step - step_last);
            t_last = now;
            step_last = step;
            double tok_s = (double)a->global_batch * T / dt;
            double tflops = t->flops_per_token * tok_s / 1e12 / t->W;
            double mfu = a->peak_tflops > 0 ? tflops / a->peak_tflops : NAN;
            if (t->rank == 0) {
                char mfu_s[32] = "-";
                if (isfinite(mfu))
                    snprintf(mfu_s, sizeof(mfu_s), "%.2f%%", 100.0 * mfu);
                printf("step %ld/%ld | consumed_samples %llu | loss %.4f | lr %.4e | grad_norm "
                       "%.4f | step_time %.3f s | tokens/s %.0f | TFLOP/s/rank %.4f | MFU %s%s\n",
                       step, a->steps, (unsigned long long)t->cs.consumed_samples, loss, lr, norm,
                       dt, tok_s, tflops, mfu_s, finite ? "" : " | skipped");
                fflush(stdout);
                char jl[32], jn[32], jm[32];
                jnum(jl, sizeof(jl), loss);
                jnum(jn, sizeof(jn), norm);
                jnum(jm, sizeof(jm), mfu);
                log_json(t,
                         "{\"type\":\"train\",\"step\":%ld,\"consumed_samples\":%llu,\"loss\":%s,"
                         "\"lr\":%.9g,\"grad_norm\":%s,\"step_time_s\":%.6f,\"tokens_per_s\":%.3f,"
                         "\"tflops_per_rank\":%.6f,\"mfu\":%s,\"skipped\":%s}\n",
                         step, (unsigned long long)t->cs.consumed_samples, jl, lr, jn, dt, tok_s,
                         tflops, jm, finite ? "false" : "true");
            }
        }
        if (a->eval_interval && (step % a->eval_interval == 0 || step == a->steps)) {
            double vl;
            if ((rc = evaluate(t, &vl)))
                return rc;
            if (t->rank == 0) {
                printf("validation at step %ld | val_loss %.4f | val_ppl %.2f\n", step, vl,
                       exp(vl));
                fflush(stdout);
                char jv[32];
                jnum(jv, sizeof(jv), vl);
                log_json(t, "{\"type\":\"valid\",\"step\":%ld,\"val_loss\":%s}\n", step, jv);
            }
            t_last = sl_now(); /* validation is not step time */
        }
        if (saving) {
            if ((rc = save_checkpoint(t)))
                return rc;
            t_last = sl_now();
        }
    }
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    return 0;
}

/* ---- set-up -------------------------------------------------------------------------- */

static int setup_device(struct gt *t)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1)
        return sl_err_set(SL_ERR_STATE,
                          "train.device=cuda: no CUDA device (%s)\nhint: train.device=auto "
                          "falls back to the CPU",
                          e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    int lr = local_rank();
    if (lr >= count)
        return sl_err_set(SL_ERR_STATE,
                          "local rank %d has no GPU of its own (%d on this node)\nhint: start "
                          "one rank per GPU (mpirun -np <GPUs per node> ..., srun "
                          "--ntasks-per-node=<GPUs>)",
                          lr, count);
    t->dev = lr;
    CUDA_CHECK(cudaSetDevice(t->dev));
    CUDA_CHECK(cudaGetDeviceProperties(&t->prop, t->dev));
    return 0;
}

static int setup_nccl(struct gt *t)
{
#ifdef SL_HAVE_NCCL
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (t->rank == 0)
        NCCL_CHECK(ncclGetUniqueId(&id));
    int rc = sl_world_bcast(t->w, &id, sizeof(id), 0);
    if (rc)
        return rc;
    NCCL_CHECK(ncclCommInitRank(&t->nccl, t->W, id, t->rank));
    t->nccl_ok = 1;
    return 0;
#else
    if (t->W > 1)
        return sl_err_set(SL_ERR_UNSUPPORTED, "this build has no NCCL: the GPU trainer runs "
                                              "one rank only\nhint: install NCCL and rebuild");
    return 0;
#endif
}

static void memory_report(struct gt *t, size_t arena_bytes)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (t->rank != 0)
        return;
    static const char *const rc_names[] = { "none", "selective", "full" };
    char b[MEM_N][32], tot[32], fr[32], all[32];
    for (int i = 0; i < MEM_N; i++)
        sl_human_bytes((double)t->mem[i], b[i], sizeof(b[i]));
    sl_info("GPU memory per rank: parameters %s (bf16), gradients %s (bf16), optimizer state %s "
            "(fp32 master + AdamW moments, 1/%d shard), activations %s (recompute %s), "
            "workspace %s",
            b[MEM_PARAMS], b[MEM_GRADS], b[MEM_OPTIM], t->W, b[MEM_ACTS],
            rc_names[t->a->recompute], b[MEM_WORK]);
    sl_info("GPU memory: %s in one arena; %s free of %s on the device after allocating",
            sl_human_bytes((double)arena_bytes, tot, sizeof(tot)),
            sl_human_bytes((double)free_b, fr, sizeof(fr)),
            sl_human_bytes((double)total_b, all, sizeof(all)));
}

static int setup_model(struct gt *t)
{
    const struct gpu_train_args *a = t->a;
    const struct model_config *c = &a->mc;
    t->B = (int)a->micro_batch;
    t->T = (int)a->seq_len;
    t->N = t->B * t->T;
    t->D = c->d_model;
    t->H = c->n_heads;
    t->Hkv = c->n_kv_heads;
    t->hd = c->head_dim;
    t->QKV = model_qkv_dim(c);
    t->QD = c->n_heads * c->head_dim;
    t->F = c->d_ff;
    t->FC = model_fc_dim(c);
    t->V = c->vocab_size;
    t->Vp = c->padded_vocab_size;
    t->L = c->n_layers;
    t->attn_scale = (float)(1.0 / sqrt((double)t->hd));
    if (t->L < 1)
        return sl_err_set(SL_ERR_CONFIG, "the GPU trainer needs at least one layer");
    if (t->D > 8192)
        return sl_err_set(SL_ERR_CONFIG, "hidden size %d: the GPU norms support up to 8192", t->D);
    model_layout_init(&t->l, c);
    int rc = plan_buckets(t);
    if (rc)
        return rc;
    t->ntensors = t->l.n;
    t->per = sl_xcalloc((size_t)t->L, sizeof(*t->per));

    static const enum attn_backend backends[] = { ATTN_AUTO, ATTN_CUDNN, ATTN_OWN };
    t->attn = attention_new(backends[a->attention]);
    if (!t->attn)
        return sl_err_set(SL_ERR_UNSUPPORTED, "train.attention=%s: %s",
                          a->attention == GPU_ATTN_CUDNN ? "cudnn" : "flash",
                          attn_cudnn_error());
    if (attention_prepare(t->attn, t->B, t->T, t->H, t->Hkv, t->hd, &t->attn_ws_bytes) != 0)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "attention cannot run batch %d x %d tokens, %d/%d heads of %d%s%s\n"
                          "hint: our kernels take head sizes 16, 32, 64, 128; train.attention=auto "
                          "uses cuDNN where it can",
                          t->B, t->T, t->H, t->Hkv, t->hd,
                          a->attention == GPU_ATTN_CUDNN ? ": " : "",
                          a->attention == GPU_ATTN_CUDNN ? attn_cudnn_error() : "");
    t->emb_scratch_bytes = embedding_bwd_scratch_size(t->B, t->T, t->V);

    plan_memory(t, NULL);
    size_t bytes = 0;
    for (int i = 0; i < MEM_N; i++)
        bytes += t->mem[i];
    bytes += 256 * 128; /* alignment of every carve */
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    cudaError_t e = cudaMalloc(&t->arena, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        char need[32], fr[32];
        return sl_err_set(SL_ERR_NOMEM,
                          "cannot allocate %s of GPU memory (%s free)\nhint: lower "
                          "train.micro_batch_size, or set train.recompute=selective or full",
                          sl_human_bytes((double)bytes, need, sizeof(need)),
                          sl_human_bytes((double)free_b, fr, sizeof(fr)));
    }
    plan_memory(t, t->arena);
    CUDA_CHECK(cudaMemset(t->arena, 0, bytes));
    memory_report(t, bytes);

    t->gemm = gemm_new(t->gemm_ws, GEMM_WORKSPACE_BYTES);
    if (!t->gemm)
        return sl_err_set(SL_ERR_STATE, "cuBLASLt: %s", gemm_error());
    CUDA_CHECK(cudaStreamCreateWithFlags(&t->st, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&t->comm, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&t->copy, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_grad, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_comm, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_stats, cudaEventDisableTiming));
    for (int i = 0; i < 2; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&t->step_done[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventRecord(t->step_done[i], t->st));
    }
    size_t nstats = (size_t)(1 + a->accum + a->eval_iters * a->accum);
    CUDA_CHECK(cudaHostAlloc((void **)&t->h_stats, nstats * sizeof(float), cudaHostAllocDefault));

    /* the AdamW table, in device offsets */
    struct adamw_tensor *tab = sl_xcalloc((size_t)t->ntensors, sizeof(*tab));
    for (int i = 0; i < t->l.n; i++) {
        tab[i].offset = (int64_t)t->doff[i];
        tab[i].size = (int64_t)t->l.t[i].numel;
        tab[i].wd_mult = t->l.t[i].decay ? 1.0f : 0.0f;
        tab[i].lr_mult = 1.0f;
    }
    CUDA_CHECK(cudaMemcpy(t->d_tensors, tab, (size_t)t->ntensors * sizeof(*tab),
                          cudaMemcpyHostToDevice));
    free(tab);

    if (c->pos == MODEL_POS_ROPE) {
        /* as the CPU path builds them: the angle in fp32, then cos/sin */
        int half = t->hd / 2;
        double *inv = sl_xmalloc(((size_t)half + 1) * sizeof(double));
        float *cs = sl_xmalloc(2 * (size_t)t->T * (size_t)half * sizeof(float));
        model_rope_inv_freq(c, inv);
        for (int p = 0; p < t->T; p++)
            for (int i = 0; i < half; i++) {
                float ang = (float)p * (float)inv[i];
                cs[(size_t)p * half + i] = cosf(ang);
                cs[(size_t)t->T * half + (size_t)p * half + i] = sinf(ang);
            }
        size_t tb = (size_t)t->T * (size_t)half * sizeof(float);
        CUDA_CHECK(cudaMemcpy(t->rope_cos, cs, tb, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(t->rope_sin, cs + (size_t)t->T * half, tb, cudaMemcpyHostToDevice));
        free(cs);
        free(inv);
    }
    return 0;
}

static int open_data(struct gt *t)
{
    const struct gpu_train_args *a = t->a;
    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.prefix = a->prefix;
    dopt.split = a->split;
    dopt.seq_len = (uint64_t)a->seq_len;
    dopt.seed = (uint32_t)a->data_seed;
    dopt.num_samples[DATA_TRAIN] = (uint64_t)(a->steps > 0 ? a->steps : 1) * (uint64_t)a->global_batch;
    if (a->eval_interval)
        dopt.num_samples[DATA_VALID] = (uint64_t)a->eval_iters * (uint64_t)a->global_batch;
    dopt.vocab_size = (uint64_t)a->mc.vocab_size;
    dopt.cache_dir = a->cache_dir;
    dopt.normalize_weights = a->normalize_weights;
    dopt.write_cache = t->rank == 0;
    double td = sl_now();
    int rc = data_loader_open(&t->data, &dopt);
    if ((rc = all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        return rc;
    }
    if (t->rank == 0) {
        if (data_loader_synthetic(t->data)) {
            sl_info("data: synthetic (uniform random token ids below %d)", a->mc.vocab_size);
        } else {
            sl_info("data: %d prefix%s, %llu tokens, split %s; train index: %d epoch%s (%s, %.2f s)",
                    data_loader_prefixes(t->data), data_loader_prefixes(t->data) > 1 ? "es" : "",
                    (unsigned long long)data_loader_tokens(t->data), a->split,
                    data_loader_epochs(t->data, DATA_TRAIN),
                    data_loader_epochs(t->data, DATA_TRAIN) == 1 ? "" : "s",
                    data_loader_cached(t->data) ? "from the cache" : "built", sl_now() - td);
            if (data_loader_note(t->data))
                sl_warn("%s", data_loader_note(t->data));
        }
    }
    return 0;
}

/* The checkpoint to resume from (NULL: start fresh); its metadata into t->cs. */
static int find_resume(struct gt *t, char **from)
{
    const struct gpu_train_args *a = t->a;
    *from = NULL;
    if (!strcmp(a->resume, "none"))
        return 0;
    if (!strcmp(a->resume, "auto")) {
        if (a->ckpt_dir) {
            int rc = ckpt_find_latest(a->ckpt_dir, from);
            if (rc)
                return rc;
        }
    } else {
        *from = sl_xstrdup(a->resume);
    }
    if (!*from)
        return 0;
    struct model_config saved;
    int rc = ckpt_read_meta(*from, &saved, &t->cs);
    if (!rc) {
        struct sl_buf x = SL_BUF_INIT, y = SL_BUF_INIT;
        model_config_to_json(&saved, &x);
        model_config_to_json(&a->mc, &y);
        if (strcmp(x.data, y.data) != 0)
            rc = sl_err_set(SL_ERR_CONFIG,
                            "checkpoint '%s' holds another model than the config\n"
                            "hint: checkpoint: %s\n      config:     %s",
                            *from, x.data, y.data);
        sl_buf_release(&x);
        sl_buf_release(&y);
    }
    return rc;
}

static void release(struct gt *t)
{
    loader_stop(t);
    if (t->st)
        cudaStreamSynchronize(t->st);
    if (t->log)
        fclose(t->log);
#ifdef SL_HAVE_NCCL
    if (t->nccl_ok)
        ncclCommDestroy(t->nccl);
#endif
    gemm_free(t->gemm);
    if (t->attn)
        attention_free(t->attn);
    if (t->h_stats)
        cudaFreeHost(t->h_stats);
    cudaEvent_t evs[5] = { t->ev_grad, t->ev_comm, t->ev_stats, t->step_done[0], t->step_done[1] };
    for (int i = 0; i < 5; i++)
        if (evs[i])
            cudaEventDestroy(evs[i]);
    cudaStream_t sts[3] = { t->st, t->comm, t->copy };
    for (int i = 0; i < 3; i++)
        if (sts[i])
            cudaStreamDestroy(sts[i]);
    if (t->arena)
        cudaFree(t->arena);
    data_loader_free(t->data);
    model_layout_release(&t->l);
    free(t->doff);
    free(t->bk);
    free(t->per);
}

int gpu_train_run(const struct gpu_train_args *a, struct sl_world *w)
{
    struct gt tr;
    memset(&tr, 0, sizeof(tr));
    struct gt *t = &tr;
    t->a = a;
    t->w = w;
    t->rank = w->rank;
    t->W = w->size;
    fatal_world = w;
    sl_cuda_set_fatal_hook(fatal_hook);
    static const char *const attn_names[] = { "auto", "cudnn", "flash" };
    static const char *const rc_names[] = { "none", "selective", "full" };
    char *from = NULL;
    int rc = setup_device(t);
    if ((rc = all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        goto out;
    }
    if (t->rank == 0)
        sl_info("training on the GPU: %s (sm_%d%d, %.0f GiB) x %d rank%s, one per GPU",
                t->prop.name, t->prop.major, t->prop.minor,
                (double)t->prop.totalGlobalMem / (1u << 30), t->W, t->W > 1 ? "s" : "");
    if ((rc = all_ok(t, setup_nccl(t))) || (rc = all_ok(t, setup_model(t)))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        goto out;
    }
    if (t->rank == 0) {
        enum attn_backend be = attention_backend(t->attn, t->B, t->T, t->H, t->Hkv, t->hd);
        sl_info("attention: %s (train.attention=%s); recompute: %s; ZeRO-1 over %d rank%s "
                "(%zu parameters per shard)",
                be == ATTN_CUDNN ? "cuDNN fused flash attention" : "own flash-attention kernels",
                attn_names[a->attention], rc_names[a->recompute], t->W, t->W > 1 ? "s" : "",
                t->shard_n);
    }
    t->flops_per_token = model_flops_per_token(&a->mc, (int)a->seq_len);
    if ((rc = open_data(t)))
        goto out;

    sl_rng_seed(&t->rng, a->seed, 0);
    rc = find_resume(t, &from);
    if (!rc)
        rc = load_state(t, from);
    if ((rc = all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("cannot %s: %s", from ? "resume" : "initialise the model", sl_err_msg());
        goto out;
    }
    if (from) {
        memcpy(t->rng.s, t->cs.rng, sizeof(t->rng.s));
        if (t->rank == 0)
            sl_info("resumed from '%s' at step %ld (%llu samples consumed)", from, t->cs.step,
                    (unsigned long long)t->cs.consumed_samples);
    }
    if (t->rank == 0) {
        char mem[32];
        sl_info("model: %llu parameters (%llu without embeddings), %d layers, hidden %d, heads "
                "%d/%d, %s, %s, %s; activations %s",
                (unsigned long long)t->l.params, (unsigned long long)model_params_nonembed(&a->mc),
                a->mc.n_layers, a->mc.d_model, a->mc.n_heads, a->mc.n_kv_heads,
                model_norm_name(a->mc.norm), model_act_name(a->mc.act), model_pos_name(a->mc.pos),
                sl_human_bytes((double)t->mem[MEM_ACTS], mem, sizeof(mem)));
        sl_info("batch: global %ld = micro %ld x %d ranks x %ld accumulation steps, seq_len %ld; "
                "%.3g GFLOP per token",
                a->global_batch, a->micro_batch, t->W, a->accum, a->seq_len,
                t->flops_per_token / 1e9);
        if (a->log_file) {
            t->log = fopen(a->log_file, "a");
            if (!t->log)
                rc = sl_err_set(SL_ERR_IO, "cannot open log file '%s': %s", a->log_file,
                                strerror(errno));
        }
    }
    if ((rc = all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        goto out;
    }
    if ((rc = loader_start(t))) {
        sl_error("%s", sl_err_msg());
        sl_world_abort(w, 1);
    }
    rc = train_loop(t);
out:
    free(from);
    release(t);
    sl_cuda_set_fatal_hook(NULL);
    fatal_world = NULL;
    return rc ? 1 : 0;
}

#endif /* SL_HAVE_CUDA */
