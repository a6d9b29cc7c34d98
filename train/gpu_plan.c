/* The CUDA trainer's device memory as a list of buffers (train/gpu_plan.h). */
#include "train/gpu_plan.h"

#include "core/alloc.h"
#include "core/err.h"
#include "train/train_run.h"

#include <stdlib.h>
#include <string.h>

const char *const gpu_plan_cat_names[GPU_PLAN_NCAT] = { "parameters", "gradients", "optimizer",
                                                        "activations", "workspace" };

/* ---- buckets ------------------------------------------------------------------------- */

static int bucket_of(const struct model_tensor *mt, int n_layers, int seen_layer)
{
    if (mt->layer >= 0)
        return 1 + mt->layer;
    return seen_layer ? n_layers + 1 : 0;
}

int gpu_plan_buckets(const struct model_layout *l, int n_layers, int dp, struct gpu_plan_bucket *bk,
                     size_t *dtotal, size_t *shard_n)
{
    int nbk = n_layers + 2;
    int *first = sl_xmalloc((size_t)nbk * sizeof(int));
    for (int k = 0; k < nbk; k++)
        first[k] = -1;
    int seen = 0, prev = 0;
    for (int i = 0; i < l->n; i++) {
        int k = bucket_of(&l->t[i], n_layers, seen);
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
    /* every rank's slice of a bucket the same multiple of 64 elements (128-byte bf16 and
     * 256-byte fp32 slices: the vector loads of the kernels line up) */
    size_t unit = (size_t)dp * 64, dev = 0, shard = 0;
    for (int k = 0; k < nbk; k++) {
        struct gpu_plan_bucket *b = &bk[k];
        b->la = first[k] < 0 ? 0 : l->t[first[k]].offset;
        size_t end = l->total;
        for (int j = k + 1; j < nbk; j++)
            if (first[j] >= 0) {
                end = l->t[first[j]].offset;
                break;
            }
        b->lb = first[k] < 0 ? b->la : end;
        b->dev = dev;
        b->len = (b->lb - b->la + unit - 1) / unit * unit;
        b->shard = shard;
        dev += b->len;
        shard += b->len / (size_t)dp;
    }
    free(first);
    *dtotal = dev;
    *shard_n = shard;
    return 0;
}

/* ---- the kernels' sizes -------------------------------------------------------------- */

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

/* Mirrors of the own kernels' size functions (tests/cli/t_train_gpu_plan.sh checks them
 * against the trainer's, which calls the kernels):
 *  - kernels/norm.cu norm_bwd_scratch_size: one block per 8 rows (NB_ROWS), at most 512
 *    blocks (NB_MAXBLOCKS), each 2 x C fp32 partials;
 *  - kernels/attention.cu attn_own_bwd_workspace_size: B x H x T fp32, 256-byte rounded;
 *  - kernels/embedding.cu embedding_bwd_scratch_size: six int32 arrays of the N tokens and
 *    the run count, each 256-byte aligned, and CUB's temporary storage (see the header);
 *  - kernels/util.cu global_norm_scratch_size: 1024 blocks' fp32 partials (NORM_BLOCKS);
 *  - kernels/gemm.h GEMM_WORKSPACE_BYTES: 32 MiB for cuBLASLt. */
#define OWN_NB_ROWS      8
#define OWN_NB_MAXBLOCKS 512
#define OWN_GN_BLOCKS    1024
#define OWN_GEMM_WS      ((size_t)32 << 20)
#define OWN_CUB_BASE     256 /* what a CUB call asks for beyond its arrays */

static size_t norm_scratch(long N, long C)
{
    long g = (N + OWN_NB_ROWS - 1) / OWN_NB_ROWS;
    long blocks = g < OWN_NB_MAXBLOCKS ? g : OWN_NB_MAXBLOCKS;
    return (size_t)blocks * 2 * (size_t)C * sizeof(float);
}

void gpu_plan_own_kernels(const struct gpu_plan_in *in, struct gpu_plan_ws *ws)
{
    const struct model_config *c = &in->mc;
    size_t B = (size_t)in->micro_batch, T = (size_t)in->seq_len, N = B * T;
    ws->attn = align256(B * (size_t)c->n_heads * T * sizeof(float));
    long widths[3] = { c->d_model, model_qkv_dim(c), model_fc_dim(c) };
    ws->norm = 0;
    for (int i = 0; i < 3; i++) {
        size_t s = norm_scratch((long)N, widths[i]);
        ws->norm = s > ws->norm ? s : ws->norm;
    }
    size_t arr = align256(N * sizeof(int32_t));
    size_t cub = OWN_CUB_BASE + N * (sizeof(int32_t) + sizeof(int32_t)); /* keys + values */
    ws->embedding = 6 * arr + 256 + align256(cub);
    ws->gnorm = OWN_GN_BLOCKS * sizeof(float);
    ws->gemm = OWN_GEMM_WS;
}

/* ---- the list ------------------------------------------------------------------------ */

static void add(struct gpu_plan *p, enum gpu_plan_id id, int layer, int set, const char *name,
                size_t bytes, enum gpu_plan_cat cat)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->b = sl_xrealloc(p->b, (size_t)p->cap * sizeof(*p->b));
    }
    size_t at = (p->total + GPU_PLAN_ALIGN - 1) / GPU_PLAN_ALIGN * GPU_PLAN_ALIGN;
    p->b[p->n++] = (struct gpu_plan_buf){ id, layer, set, name, bytes, cat, at };
    p->total = at + bytes;
    p->cat[cat] += bytes;
}

/* Parameters, gradients and the optimizer state of the ZeRO stage. */
static void add_state(struct gpu_plan *p, const struct gpu_plan_in *in, int zero)
{
    size_t b2 = 2, f4 = sizeof(float), P = p->dtotal, S = p->shard_n;
    size_t ntab = (size_t)in->l->n * 24; /* struct adamw_tensor: 2 int64 + 2 float */
    if (zero <= 1) {
        add(p, GB_PARAMS, -1, 0, "params (bf16)", P * b2, GPU_PLAN_PARAMS);
        add(p, GB_GRADS, -1, 0, "grads (bf16 micro-batch)", P * b2, GPU_PLAN_GRADS);
        add(p, GB_MAIN_GRAD, -1, 0, "main_grad (fp32)", P * f4, GPU_PLAN_GRADS);
    } else if (zero == 2) {
        add(p, GB_PARAMS, -1, 0, "params (bf16)", P * b2, GPU_PLAN_PARAMS);
        add(p, GB_GRADS, -1, 0, "grads (bf16 micro-batch)", P * b2, GPU_PLAN_GRADS);
        add(p, GB_MAIN_GRAD, -1, 0, "main_grad (fp32 shard)", S * f4, GPU_PLAN_GRADS);
    } else {
        add(p, GB_PARAMS, -1, 0, "params (bf16 shard)", S * b2, GPU_PLAN_PARAMS);
        add(p, GB_P_OUTER, -1, 0, "params gathered (outer buckets)", p->outer * b2,
            GPU_PLAN_PARAMS);
        add(p, GB_P_LAYERS, -1, 0, "params gathered (2 layers)", 2 * p->max_layer * b2,
            GPU_PLAN_PARAMS);
        add(p, GB_G_OUTER, -1, 0, "grads (bf16 outer buckets)", p->outer * b2, GPU_PLAN_GRADS);
        add(p, GB_G_LAYERS, -1, 0, "grads (bf16, 2 layers)", 2 * p->max_layer * b2, GPU_PLAN_GRADS);
        add(p, GB_MAIN_GRAD, -1, 0, "main_grad (fp32 shard)", S * f4, GPU_PLAN_GRADS);
    }
    add(p, GB_MASTER, -1, 0, "master (fp32 shard)", S * f4, GPU_PLAN_OPTIM);
    add(p, GB_M, -1, 0, "adam m (fp32 shard)", S * f4, GPU_PLAN_OPTIM);
    add(p, GB_V, -1, 0, "adam v (fp32 shard)", S * f4, GPU_PLAN_OPTIM);
    add(p, GB_TENSORS, -1, 0, "adamw tensor table", ntab, GPU_PLAN_OPTIM);
    if (zero >= 2)
        add(p, GB_STAGING, -1, 0, "reduce staging (fp32, 2 buckets)", 2 * p->max_bucket * f4,
            GPU_PLAN_GRADS);
}

/* One per-layer activation: per layer and set when recompute <= keep, else shared. */
static void add_layer_field(struct gpu_plan *p, const struct gpu_plan_in *in, enum gpu_plan_id id,
                            const char *name, int keep, size_t bytes)
{
    if (in->recompute <= keep) {
        for (long s = 0; s < in->sets; s++)
            for (int li = 0; li < in->mc.n_layers; li++)
                add(p, id, li, (int)s, name, bytes, GPU_PLAN_ACTS);
    } else {
        add(p, id, -1, 0, name, bytes, GPU_PLAN_ACTS);
    }
}

static void add_acts(struct gpu_plan *p, const struct gpu_plan_in *in)
{
    const struct model_config *c = &in->mc;
    size_t b2 = 2, f4 = sizeof(float);
    size_t N = (size_t)in->micro_batch * (size_t)in->seq_len, D = (size_t)c->d_model;
    size_t R = in->sp && in->tp > 1 ? N / (size_t)in->tp : N; /* rows of the residual stream */
    size_t QKV = (size_t)model_qkv_dim(c), QD = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t F = (size_t)c->d_ff, FC = (size_t)model_fc_dim(c), H = (size_t)c->n_heads;
    size_t Vp = (size_t)c->padded_vocab_size;
    size_t mean = c->norm == MODEL_RMSNORM ? 0 : R * f4; /* LayerNorm only */
    enum { NONE = GPU_RECOMPUTE_NONE, SEL = GPU_RECOMPUTE_SELECTIVE, FULL = GPU_RECOMPUTE_FULL };
    add_layer_field(p, in, GB_RES, "res", FULL, R * D * b2);
    add_layer_field(p, in, GB_LN1, "ln1", NONE, R * D * b2);
    add_layer_field(p, in, GB_M1, "ln1 mean", SEL, mean);
    add_layer_field(p, in, GB_R1, "ln1 rstd", SEL, R * f4);
    add_layer_field(p, in, GB_QKV, "qkv", SEL, N * QKV * b2);
    add_layer_field(p, in, GB_ATTY, "attention out", SEL, N * QD * b2);
    add_layer_field(p, in, GB_LSE, "attention lse", SEL, N * H * f4);
    add_layer_field(p, in, GB_MID, "mid", SEL, R * D * b2);
    add_layer_field(p, in, GB_LN2, "ln2", NONE, R * D * b2);
    add_layer_field(p, in, GB_M2, "ln2 mean", SEL, mean);
    add_layer_field(p, in, GB_R2, "ln2 rstd", SEL, R * f4);
    add_layer_field(p, in, GB_FC, "fc", SEL, N * FC * b2);
    add_layer_field(p, in, GB_ACT, "mlp act", NONE, N * F * b2);
    /* the final norm's and the logits: on the stage that runs the loss only */
    if (!in->no_head) {
        add(p, GB_RES_FINAL, -1, 0, "final residual", R * D * b2, GPU_PLAN_ACTS);
        add(p, GB_NF, -1, 0, "final norm out", N * D * b2, GPU_PLAN_ACTS);
        add(p, GB_NFM, -1, 0, "final norm mean", R * f4, GPU_PLAN_ACTS);
        add(p, GB_NFR, -1, 0, "final norm rstd", R * f4, GPU_PLAN_ACTS);
    }
    add(p, GB_TMP, -1, 0, "gemm out", N * D * b2, GPU_PLAN_ACTS);
    if (!in->no_head)
        add(p, GB_LOGITS, -1, 0, "logits", N * Vp * b2, GPU_PLAN_ACTS);
    add(p, GB_LOSSES, -1, 0, "losses", N * f4, GPU_PLAN_ACTS);
    add(p, GB_DRES, -1, 0, "d res", R * D * b2, GPU_PLAN_ACTS);
    add(p, GB_DN, -1, 0, "d norm out", N * D * b2, GPU_PLAN_ACTS);
    add(p, GB_DQKV, -1, 0, "d qkv", N * QKV * b2, GPU_PLAN_ACTS);
    add(p, GB_DATTY, -1, 0, "d attention out", N * QD * b2, GPU_PLAN_ACTS);
    add(p, GB_DFC, -1, 0, "d fc", N * FC * b2, GPU_PLAN_ACTS);
    add(p, GB_DACT, -1, 0, "d mlp act", N * F * b2, GPU_PLAN_ACTS);
    if (R != N) {
        add(p, GB_SP_GATHER, -1, 0, "sp gathered norm out", N * D * b2, GPU_PLAN_ACTS);
        add(p, GB_SP_SCATTER, -1, 0, "sp scattered gemm out", R * D * b2, GPU_PLAN_ACTS);
    }
    if (in->pipeline) { /* the stage boundary's activation out, its gradient out and in:
                         * the residual stream's rows (SP: the rank's) */
        add(p, GB_XOUT, -1, 0, "pipeline activation out", R * D * b2, GPU_PLAN_ACTS);
        add(p, GB_DXOUT, -1, 0, "pipeline gradient out", R * D * b2, GPU_PLAN_ACTS);
        add(p, GB_DXIN, -1, 0, "pipeline gradient in", R * D * b2, GPU_PLAN_ACTS);
        /* the last stage: each set's gradient of the last layer's output, from the loss's
         * backward right after its forward to the chunk's backward */
        for (long s = 0; !in->no_head && s < in->sets; s++)
            add(p, GB_DHEAD, -1, (int)s, "head gradient", R * D * b2, GPU_PLAN_ACTS);
    }
}

static void add_work(struct gpu_plan *p, const struct gpu_plan_in *in)
{
    size_t f4 = sizeof(float), T = (size_t)in->seq_len, N = (size_t)in->micro_batch * T;
    size_t half = (size_t)in->mc.head_dim / 2, accum = (size_t)in->accum;
    add(p, GB_ROPE_COS, -1, 0, "rope cos", T * half * f4, GPU_PLAN_WORK);
    add(p, GB_ROPE_SIN, -1, 0, "rope sin", T * half * f4, GPU_PLAN_WORK);
    add(p, GB_GEMM_WS, -1, 0, "gemm workspace", in->ws.gemm, GPU_PLAN_WORK);
    add(p, GB_ATTN_WS, -1, 0, "attention workspace", in->ws.attn, GPU_PLAN_WORK);
    add(p, GB_NORM_SCRATCH, -1, 0, "norm scratch", in->ws.norm, GPU_PLAN_WORK);
    add(p, GB_EMB_SCRATCH, -1, 0, "embedding scratch", in->ws.embedding, GPU_PLAN_WORK);
    add(p, GB_GN_SCRATCH, -1, 0, "global norm scratch", in->ws.gnorm, GPU_PLAN_WORK);
    /* the step's tokens and targets, two steps deep (the loader fills one while the other
     * trains), and one validation micro-batch */
    size_t rows = in->docs ? 4 : 2, tok = accum * rows * N * sizeof(int32_t);
    add(p, GB_TOK0, -1, 0, "tokens (step a)", tok, GPU_PLAN_WORK);
    add(p, GB_TOK1, -1, 0, "tokens (step b)", tok, GPU_PLAN_WORK);
    add(p, GB_TOK_EVAL, -1, 0, "tokens (validation)", rows * N * sizeof(int32_t), GPU_PLAN_WORK);
    add(p, GB_STATS, -1, 0, "step statistics", (1 + accum) * f4, GPU_PLAN_WORK);
    add(p, GB_EVAL, -1, 0, "validation losses", (size_t)in->eval_iters * accum * f4, GPU_PLAN_WORK);
    if (in->tp > 1) { /* the vocab-parallel embedding's ids, the cross-entropy's statistics */
        add(p, GB_TP_IDS, -1, 0, "local vocabulary ids", N * sizeof(int32_t), GPU_PLAN_WORK);
        add(p, GB_XENT_STATS, -1, 0, "cross-entropy max, sum, target", 3 * N * f4, GPU_PLAN_WORK);
    }
}

int gpu_plan_build(struct gpu_plan *p, const struct gpu_plan_in *in)
{
    memset(p, 0, sizeof(*p));
    if (in->zero < 0 || in->zero > 3)
        return sl_err_set(SL_ERR_CONFIG, "ZeRO stage %d: the GPU trainer has stages 1, 2 and 3",
                          in->zero);
    int L = in->mc.n_layers;
    p->nbk = L + 2;
    p->bk = sl_xcalloc((size_t)p->nbk, sizeof(*p->bk));
    int rc = gpu_plan_buckets(in->l, L, in->dp, p->bk, &p->dtotal, &p->shard_n);
    if (rc) {
        gpu_plan_release(p);
        return rc;
    }
    for (int k = 0; k < p->nbk; k++) {
        size_t len = p->bk[k].len;
        p->max_bucket = len > p->max_bucket ? len : p->max_bucket;
        if (k > 0 && k < p->nbk - 1)
            p->max_layer = len > p->max_layer ? len : p->max_layer;
    }
    p->outer = p->bk[0].len + p->bk[p->nbk - 1].len;
    add_state(p, in, in->zero);
    add_acts(p, in);
    add_work(p, in);
    return 0;
}

void gpu_plan_release(struct gpu_plan *p)
{
    free(p->b);
    free(p->bk);
    memset(p, 0, sizeof(*p));
}
