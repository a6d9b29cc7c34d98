/* The CUDA trainer's model: the device layout of the parameters (buckets padded for the
 * ZeRO shards), every device buffer carved from one arena (with the memory report), and the
 * forward and backward passes over the kernels of kernels/, with recomputation; at ZeRO-3
 * each bucket's weights and gradient are where gpu_zero.c gathered or bound them.
 */
#include "train/gpu_internal.h"
#include "train/gpu_plan.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/log.h"
#include "core/progress.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define P gpu_param /* tensor id's weights and gradient (gpu_internal.h) */
#define G gpu_grad

/* ---- device layout, buckets, the arena ----------------------------------------------- */

static int plan_buckets(struct gt *t)
{
    const struct model_layout *l = &t->l;
    t->nbk = t->L + 2;
    t->bk = sl_xcalloc((size_t)t->nbk, sizeof(*t->bk));
    t->doff = sl_xcalloc((size_t)l->n, sizeof(size_t));
    t->tbk = sl_xcalloc((size_t)l->n, sizeof(int));
    struct gpu_plan_bucket *pb = sl_xcalloc((size_t)t->nbk, sizeof(*pb));
    int rc = gpu_plan_buckets(l, t->L, t->DP, pb, &t->dtotal, &t->shard_n);
    for (int k = 0; !rc && k < t->nbk; k++)
        t->bk[k] = (struct gbucket){ pb[k].la, pb[k].lb, pb[k].dev, pb[k].len, pb[k].shard };
    free(pb);
    if (rc)
        return rc;
    size_t end = 0; /* of the tensor before: the AdamW table's offsets must not decrease */
    for (int i = 0; i < l->n; i++) {
        if (!l->t[i].numel) { /* a tensor the stage does not use */
            t->doff[i] = end;
            continue;
        }
        int k = -1;
        for (int j = 0; j < t->nbk; j++)
            if (t->bk[j].lb > t->bk[j].la && l->t[i].offset >= t->bk[j].la &&
                l->t[i].offset < t->bk[j].lb)
                k = j;
        t->doff[i] = t->bk[k].dev + (l->t[i].offset - t->bk[k].la);
        t->tbk[i] = k;
        end = t->doff[i] + l->t[i].numel;
    }
    t->maxb = t->maxl = 0;
    for (int k = 0; k < t->nbk; k++) {
        size_t n = t->bk[k].len;
        t->maxb = n > t->maxb ? n : t->maxb;
        if (k >= 1 && k <= t->L)
            t->maxl = n > t->maxl ? n : t->maxl;
    }
    return 0;
}

/* This rank's slice of bucket k: device start, element count, and the layout range it maps
 * to (n_layout <= count; the rest is padding). */
void gpu_slice_of(const struct gt *t, int k, size_t *dev0, size_t *count, size_t *lay0,
                  size_t *n_layout)
{
    const struct gbucket *b = &t->bk[k];
    size_t cnt = b->len / (size_t)t->DP;
    size_t off = (size_t)t->dpr * cnt;
    *dev0 = b->dev + off;
    *count = cnt;
    *lay0 = b->la + off;
    size_t real = b->lb - b->la;
    *n_layout = off >= real ? 0 : (real - off < cnt ? real - off : cnt);
}

/* The arena's buffers for this rank (train/gpu_plan.h), with the kernels' own sizes. */
static int plan_memory(struct gt *t, struct gpu_plan *p)
{
    struct gpu_plan_in in;
    memset(&in, 0, sizeof(in));
    in.mc = t->sh.local; /* the rank's part (tensor parallel) */
    in.l = &t->l;
    in.micro_batch = t->B;
    in.seq_len = t->T;
    in.accum = t->a->accum;
    in.eval_iters = t->a->eval_iters;
    in.recompute = t->a->recompute;
    in.zero = t->zero; /* 1, 2 or 3: optim.zero 0 is 1 here */
    in.dp = t->DP;
    in.tp = t->tp;
    in.sp = t->sp;
    in.sets = t->nslots;
    in.pipeline = t->par.pp > 1;
    in.docs = t->dm != NULL;
    in.no_head = !t->sh.last_stage;
    in.ws.attn = t->attn_ws_bytes;
    int widths[3] = { t->D, t->QKV, t->FC };
    for (int i = 0; i < 3; i++) {
        size_t s = norm_bwd_scratch_size(t->N, widths[i]);
        in.ws.norm = s > in.ws.norm ? s : in.ws.norm;
    }
    in.ws.embedding = t->emb_scratch_bytes;
    in.ws.gnorm = global_norm_scratch_size();
    in.ws.gemm = GEMM_WORKSPACE_BYTES;
    int rc = gpu_plan_build(p, &in);
    if (!rc && (p->dtotal != t->dtotal || p->shard_n != t->shard_n || p->max_bucket != t->maxb ||
                p->max_layer != t->maxl)) {
        rc = sl_err_set(SL_ERR_STATE,
                        "the memory plan's layout (%zu, %zu elements) is not the "
                        "trainer's (%zu, %zu)",
                        p->dtotal, p->shard_n, t->dtotal, t->shard_n);
        gpu_plan_release(p);
    }
    return rc;
}

/* Where the trainer keeps the pointer to buffer b (NULL: a buffer this trainer has none of). */
static void **slot_of(struct gt *t, const struct gpu_plan_buf *b)
{
    static const size_t act_off[] = {
        offsetof(struct gacts, res), offsetof(struct gacts, ln1), offsetof(struct gacts, m1),
        offsetof(struct gacts, r1),  offsetof(struct gacts, qkv), offsetof(struct gacts, atty),
        offsetof(struct gacts, lse), offsetof(struct gacts, mid), offsetof(struct gacts, ln2),
        offsetof(struct gacts, m2),  offsetof(struct gacts, r2),  offsetof(struct gacts, fc),
        offsetof(struct gacts, act),
    };
    _Static_assert(sizeof(act_off) / sizeof(act_off[0]) == GB_LAYER_LAST - GB_LAYER_FIRST + 1,
                   "one struct gacts field per per-layer buffer");
    if (b->id >= GB_LAYER_FIRST && b->id <= GB_LAYER_LAST) {
        char *a = (char *)(b->layer < 0 ? &t->shared : &t->per[b->set * t->L + b->layer]);
        return (void **)(a + act_off[b->id - GB_LAYER_FIRST]);
    }
    switch (b->id) {
#define S(id, field)                                                                               \
    case id:                                                                                       \
        return (void **)&t->field
        S(GB_GRADS, grads); /* GB_PARAMS, GB_MAIN_GRAD and ZeRO-2/3's: carve_zero */
        S(GB_MASTER, master);
        S(GB_M, m);
        S(GB_V, v);
        S(GB_TENSORS, d_tensors);
        S(GB_RES_FINAL, res_final);
        S(GB_NF, nf);
        S(GB_NFM, nfm);
        S(GB_NFR, nfr);
        S(GB_TMP, tmp);
        S(GB_LOGITS, logits);
        S(GB_XOUT, xout);
        S(GB_DXOUT, dxout);
        S(GB_DXIN, dxin);
        S(GB_DHEAD, slot[b->set].dhead);
        S(GB_LOSSES, losses);
        S(GB_DRES, dres);
        S(GB_DN, dn);
        S(GB_DQKV, dqkv);
        S(GB_DATTY, datty);
        S(GB_DFC, dfc);
        S(GB_DACT, dact);
        S(GB_SP_GATHER, sp_gather);
        S(GB_SP_SCATTER, sp_scatter);
        S(GB_TP_IDS, ids);
        S(GB_XENT_STATS, xmx);
        S(GB_ROPE_COS, rope_cos);
        S(GB_ROPE_SIN, rope_sin);
        S(GB_GEMM_WS, gemm_ws);
        S(GB_ATTN_WS, attn_ws);
        S(GB_NORM_SCRATCH, norm_scratch);
        S(GB_EMB_SCRATCH, emb_scratch);
        S(GB_GN_SCRATCH, gn_scratch);
        S(GB_TOK0, d_tok[0]);
        S(GB_TOK1, d_tok[1]);
        S(GB_TOK_EVAL, d_tok_eval);
        S(GB_STATS, d_stats);
        S(GB_EVAL, d_eval);
#undef S
    default:
        return NULL;
    }
}

/* The buffers of the ZeRO stage (docs/trainer.md, "ZeRO-2 and ZeRO-3"): the bf16 weights
 * whole (ZeRO-1/2) or the shard (ZeRO-3), the fp32 gradient whole (ZeRO-1) or the shard
 * (ZeRO-2/3), and the pairs the plan lists as one buffer (two staging buffers of the
 * largest bucket; the outer buckets, bucket 0 then L + 1; two layer slots of the largest
 * layer). Returns 0 for a buffer that is not one of them. */
static int carve_zero(struct gt *t, const struct gpu_plan_buf *b, char *at)
{
    sl_bf16 *h = (sl_bf16 *)at;
    switch (b->id) {
    case GB_PARAMS:
        *(t->zero == 3 ? &t->pshard : &t->params) = h;
        return 1;
    case GB_MAIN_GRAD:
        *(t->zero >= 2 ? &t->sgrad : &t->main_grad) = (float *)at;
        return 1;
    case GB_STAGING:
        t->stage[0] = (float *)at;
        t->stage[1] = t->stage[0] + t->maxb;
        return 1;
    case GB_P_OUTER:
    case GB_G_OUTER: {
        sl_bf16 **o = b->id == GB_P_OUTER ? t->pouter : t->gouter;
        o[0] = h;
        o[1] = h + t->bk[0].len;
        return 1;
    }
    case GB_P_LAYERS:
    case GB_G_LAYERS: {
        sl_bf16 **o = b->id == GB_P_LAYERS ? t->lp : t->lg;
        o[0] = h;
        o[1] = h + t->maxl;
        return 1;
    }
    default:
        return 0;
    }
}

/* Where each bucket's weights and gradient are: fixed below ZeRO-3; at ZeRO-3 the outer
 * buckets' buffers, the layers bound to their slot when used (gpu_z3_layer, gpu_z3_grad). */
static void bind_buckets(struct gt *t)
{
    for (int k = 0; k < t->nbk; k++) {
        t->pb[k] = t->params ? t->params + t->bk[k].dev : NULL;
        t->gb[k] = t->grads ? t->grads + t->bk[k].dev : NULL;
    }
    if (t->zero == 3) {
        t->pb[0] = t->pouter[0], t->gb[0] = t->gouter[0];
        t->pb[t->L + 1] = t->pouter[1], t->gb[t->L + 1] = t->gouter[1];
    }
}

/* Point every buffer of the plan into the arena at base; the bytes per category. */
static void carve_arena(struct gt *t, const struct gpu_plan *p, char *base)
{
    _Static_assert((int)MEM_PARAMS == GPU_PLAN_PARAMS && (int)MEM_GRADS == GPU_PLAN_GRADS &&
                       (int)MEM_OPTIM == GPU_PLAN_OPTIM && (int)MEM_ACTS == GPU_PLAN_ACTS &&
                       (int)MEM_WORK == GPU_PLAN_WORK && (int)MEM_N == GPU_PLAN_NCAT,
                   "the memory report's categories are the plan's");
    _Static_assert(sizeof(struct adamw_tensor) == 24, "gpu_plan.c counts 24 bytes a tensor");
    memset(&t->shared, 0, sizeof(t->shared));
    memset(t->per, 0, (size_t)(t->nslots * t->L) * sizeof(*t->per));
    for (int i = 0; i < p->n; i++) {
        if (carve_zero(t, &p->b[i], base + p->b[i].offset))
            continue;
        void **s = slot_of(t, &p->b[i]);
        if (s)
            *s = base + p->b[i].offset;
    }
    for (int c = 0; c < MEM_N; c++)
        t->mem[c] = p->cat[c];
    bind_buckets(t);
}

static struct gacts acts(const struct gt *t, int slot, int li)
{
    const struct gacts *p = &t->per[slot * t->L + li], *s = &t->shared;
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
        rmsnorm_fwd(out, rstd, resid_out, x, r, P(t, wid), t->R, t->D, t->a->mc.norm_eps, t->st);
    else
        layernorm_fwd(out, mean, rstd, resid_out, x, r, P(t, wid), P(t, bid), t->R, t->D,
                      t->a->mc.norm_eps, t->st);
}

static void norm_bwd(struct gt *t, const sl_bf16 *dresid, const sl_bf16 *dout, const sl_bf16 *h,
                     int wid, int bid, const float *mean, const float *rstd)
{
    if (t->a->mc.norm == MODEL_RMSNORM)
        rmsnorm_bwd(t->dres, G(t, wid), t->norm_scratch, dresid, dout, h, P(t, wid), rstd, t->R,
                    t->D, t->st);
    else
        layernorm_bwd(t->dres, G(t, wid), G(t, bid), t->norm_scratch, dresid, dout, h, P(t, wid),
                      mean, rstd, t->R, t->D, t->st);
}

/* A norm whose output feeds a column-parallel layer: over the R rows held, into out (kept
 * for the backward). Returns the layer's input over all N rows: out, or with SP out
 * all-gathered into t->sp_gather. */
static const sl_bf16 *norm_in(struct gt *t, sl_bf16 *out, float *mean, float *rstd,
                              sl_bf16 *resid_out, const sl_bf16 *x, const sl_bf16 *r, int wid,
                              int bid)
{
    norm_fwd(t, out, mean, rstd, resid_out, x, r, wid, bid);
    return gpu_tp_gather_rows(t, out, t->sp_gather);
}

/* A row-parallel layer: x W^T into t->tmp [N, D], the bias added once (by tensor-parallel
 * rank 0, before the reduction: rank 0's biased part plus the others' parts). Returns the
 * output's rows [R, D], summed over the group (gpu_tp_row_out). */
static const sl_bf16 *row_fwd(struct gt *t, const sl_bf16 *x, int wid, int bid, int IC)
{
    GEMM_CHECK(linear_fwd(t->gemm, t->tmp, NULL, x, P(t, wid), t->tpr == 0 ? P(t, bid) : NULL, t->N,
                          IC, t->D, 0, t->st));
    return gpu_tp_row_out(t, t->tmp);
}

static void lin_fwd(struct gt *t, sl_bf16 *y, const sl_bf16 *x, int wid, int bid, int IC, int OC)
{
    GEMM_CHECK(linear_fwd(t->gemm, y, NULL, x, P(t, wid), P(t, bid), t->N, IC, OC, 0, t->st));
}

/* dx = dy W; dW += dy^T x; db = column sums of dy (gpu_bwd_weight). */
static void lin_bwd(struct gt *t, sl_bf16 *dx, const sl_bf16 *dy, const sl_bf16 *x, int wid,
                    int bid, int IC, int OC)
{
    GEMM_CHECK(linear_bwd_data(t->gemm, dx, NULL, dy, P(t, wid), NULL, t->N, IC, OC, 0, t->st));
    gpu_bwd_weight(t, dy, x, wid, bid, IC, OC);
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

/* The MLP's fc layer and activation: fc = x W^T + b, act = act(fc); with the GELU epilogue
 * one GEMM writes both (fc as its aux output). */
static void mlp_up_fwd(struct gt *t, const struct gacts *a, const sl_bf16 *x, int wid, int bid)
{
    if (t->fuse & GPU_FUSE_GELU) {
        GEMM_CHECK(linear_fwd(t->gemm, a->act, a->fc, x, P(t, wid), P(t, bid), t->N, t->D, t->FC, 1,
                              t->st));
        return;
    }
    lin_fwd(t, a->fc, x, wid, bid, t->D, t->FC);
    act_fwd(t, a->act, a->fc);
}

/* Layer li up to the MLP activation. Its input is x + r written to a->res (r != NULL), or
 * x == a->res. The MLP output projection (row_fwd) is the caller's. */
static void layer_fwd(struct gt *t, int li, const struct gacts *a, const sl_bf16 *x,
                      const sl_bf16 *r)
{
    const struct model_layer_ids *id = &t->l.layer[li];
    const sl_bf16 *in =
        norm_in(t, a->ln1, a->m1, a->r1, r ? a->res : NULL, x, r, id->attn_norm_w, id->attn_norm_b);
    lin_fwd(t, a->qkv, in, id->qkv_w, id->qkv_b, t->D, t->QKV);
    if (t->a->mc.pos == MODEL_POS_ROPE)
        rope_fwd_at(a->qkv, t->rope_cos, t->rope_sin, t->dpos, t->B, t->T, t->H, t->Hkv, t->hd,
                    t->st);
    ATTN_CHECK(attention_fwd(t->attn, a->atty, a->lse, a->qkv, t->B, t->T, t->H, t->Hkv, t->hd,
                             t->attn_scale, t->attn_ws, t->attn_ws_bytes, t->st));
    const sl_bf16 *y = row_fwd(t, a->atty, id->attn_proj_w, id->attn_proj_b, t->QD);
    in = norm_in(t, a->ln2, a->m2, a->r2, a->mid, a->res, y, id->mlp_norm_w, id->mlp_norm_b);
    mlp_up_fwd(t, a, in, id->fc_w, id->fc_b);
}

int gpu_first_virtual(const struct gt *t, int c)
{
    return t->sh.first_stage && c == 0;
}

int gpu_last_virtual(const struct gt *t, int c)
{
    return t->sh.last_stage && c == t->nchunks - 1;
}

sl_bf16 *gpu_chunk_input(struct gt *t, int c, int s)
{
    return acts(t, s, t->sh.chunk_local[c]).res;
}

/* The documents of the micro-batch tok (train/docmask.h) to RoPE and attention. */
static void gpu_docs(struct gt *t, const int32_t *tok)
{
    t->dpos = t->dm && t->dm->reset_pos ? tok + 2 * (size_t)t->N : NULL;
    t->dstart = t->dm && t->dm->reset_attn ? tok + 3 * (size_t)t->N : NULL;
    attention_set_docs(t->attn, t->dstart);
}

void gpu_chunk_fwd(struct gt *t, int c, int s, const int32_t *tok)
{
    const struct model_layout *l = &t->l;
    int l0 = t->sh.chunk_local[c], l1 = l0 + t->sh.chunk_n[c];
    struct gacts a0 = acts(t, s, l0);
    gpu_docs(t, tok);
    gpu_z3_outer(t);
    if (gpu_first_virtual(t, c))
        gpu_tp_embed_fwd(t, a0.res, tok);
    const sl_bf16 *y = NULL; /* the MLP output's rows */
    for (int li = l0; li < l1; li++) {
        struct gacts a = acts(t, s, li);
        gpu_z3_layer(t, li, li + 1 < t->L ? li + 1 : -1);
        if (li == l0) {
            layer_fwd(t, li, &a, a.res, NULL);
        } else {
            struct gacts p = acts(t, s, li - 1);
            layer_fwd(t, li, &a, p.mid, y);
        }
        y = row_fwd(t, a.act, l->layer[li].mlp_proj_w, l->layer[li].mlp_proj_b, t->F);
    }
    struct gacts last = acts(t, s, l1 - 1);
    if (!gpu_last_virtual(t, c)) {
        /* the next layer's input, as its norm would round it: bf16(mid + mlp output) */
        add_bf16(t->xout, last.mid, y, (size_t)t->R * t->D, t->st);
        return;
    }
    /* the final norm's output is kept gathered for the output layer's backward; with SP its
     * rows go through t->dn (free until the backward) */
    norm_fwd(t, t->sp ? t->dn : t->nf, t->nfm, t->nfr, t->res_final, last.mid, y, l->final_norm_w,
             l->final_norm_b);
    gpu_tp_gather_rows(t, t->dn, t->nf);
    int head = t->a->mc.tied_embeddings ? l->embed : l->lm_head;
    lin_fwd(t, t->logits, t->nf, head, -1, t->D, t->Vp);
}

/* Backward of layer li from the gradient of its output in t->dres; leaves the gradient of
 * its input there. */
static void layer_bwd(struct gt *t, int li, const struct gacts *a)
{
    const struct model_layer_ids *id = &t->l.layer[li];
    /* t->dres: the gradient of the layer output (and, through the skip, of a->mid); the
     * row-parallel layers take it over all N rows, the column-parallel ones give the sum of
     * their input gradients over the group (SP: this rank's rows) */
    int fc_b = id->fc_b;
    if (t->fuse & GPU_FUSE_DGELU) {
        /* dfc = (dres W) * gelu'(fc) in one GEMM, which writes fc's bias gradient too */
        const sl_bf16 *dres = gpu_tp_full_dres(t);
        sl_bf16 *dfc_b = (t->fuse & GPU_FUSE_BGRAD) ? G(t, fc_b) : NULL;
        GEMM_CHECK(linear_bwd_data(t->gemm, t->dfc, dfc_b, dres, P(t, id->mlp_proj_w), a->fc, t->N,
                                   t->F, t->D, 0, t->st));
        gpu_bwd_weight(t, dres, a->act, id->mlp_proj_w, id->mlp_proj_b, t->F, t->D);
        if (dfc_b)
            fc_b = -1;
    } else {
        lin_bwd(t, t->dact, gpu_tp_full_dres(t), a->act, id->mlp_proj_w, id->mlp_proj_b, t->F,
                t->D);
        act_bwd(t, t->dfc, t->dact, a->fc);
    }
    const sl_bf16 *dn = gpu_tp_col_bwd(t, t->dn, t->dfc, a->ln2, 1, id->fc_w, fc_b, t->D, t->FC);
    norm_bwd(t, t->dres, dn, a->mid, id->mlp_norm_w, id->mlp_norm_b, a->m2, a->r2);
    /* t->dres: the gradient of a->mid (and, through the skip, of a->res) */
    lin_bwd(t, t->datty, gpu_tp_full_dres(t), a->atty, id->attn_proj_w, id->attn_proj_b, t->QD,
            t->D);
    ATTN_CHECK(attention_bwd(t->attn, t->dqkv, t->datty, a->qkv, a->atty, a->lse, t->B, t->T, t->H,
                             t->Hkv, t->hd, t->attn_scale, t->attn_ws, t->attn_ws_bytes, t->st));
    if (t->a->mc.pos == MODEL_POS_ROPE)
        rope_bwd_at(t->dqkv, t->rope_cos, t->rope_sin, t->dpos, t->B, t->T, t->H, t->Hkv, t->hd,
                    t->st);
    dn = gpu_tp_col_bwd(t, t->dn, t->dqkv, a->ln1, 1, id->qkv_w, id->qkv_b, t->D, t->QKV);
    norm_bwd(t, t->dres, dn, a->res, id->attn_norm_w, id->attn_norm_b, a->m1, a->r1);
}

static void zero_bucket(struct gt *t, int k)
{
    if (t->zero == 3 && k >= 1 && k <= t->L)
        return; /* a layer's gradient slot: gpu_z3_grad zeroes it */
    if (t->bk[k].len)
        CUDA_CHECK(cudaMemsetAsync(t->gb[k], 0, t->bk[k].len * sizeof(sl_bf16), t->st));
}

void gpu_head_bwd(struct gt *t, int s, long m)
{
    const struct model_layout *l = &t->l;
    int tied = t->a->mc.tied_embeddings, head = tied ? l->embed : l->lm_head;
    zero_bucket(t, t->L + 1); /* the kernels add into the gradient: zero it first */
    if (tied)
        zero_bucket(t, 0); /* the output layer's share first, the embedding's after */
    const sl_bf16 *dn = gpu_tp_col_bwd(t, t->dn, t->logits, t->nf, 0, head, -1, t->D, t->Vp);
    norm_bwd(t, NULL, dn, t->res_final, l->final_norm_w, l->final_norm_b, t->nfm, t->nfr);
    gpu_tp_norm_grads(t, t->L + 1);
    gpu_bucket_done(t, t->L + 1, m);
    if (t->par.pp == 1)
        return; /* the backward follows at once from t->dres */
    if (tied)   /* the last stage's copy: the output layer's use only */
        gpu_bucket_done(t, 0, m);
    CUDA_CHECK(cudaMemcpyAsync(t->slot[s].dhead, t->dres, (size_t)t->R * t->D * sizeof(sl_bf16),
                               cudaMemcpyDeviceToDevice, t->st));
}

void gpu_chunk_bwd(struct gt *t, int c, int s, const int32_t *tok, long m)
{
    const struct model_layout *l = &t->l;
    int l0 = t->sh.chunk_local[c], l1 = l0 + t->sh.chunk_n[c];
    int first = gpu_first_virtual(t, c), last = gpu_last_virtual(t, c);
    gpu_docs(t, tok);
    for (int k = 1 + l0; k <= l1; k++) /* the kernels add into the gradient: zero it first */
        zero_bucket(t, k);
    if (first && !(last && t->a->mc.tied_embeddings)) /* (else gpu_head_bwd zeroed it) */
        zero_bucket(t, 0);
    const sl_bf16 *dout = last ? (t->par.pp > 1 ? t->slot[s].dhead : NULL) : t->dxin;
    if (dout)
        CUDA_CHECK(cudaMemcpyAsync(t->dres, dout, (size_t)t->R * t->D * sizeof(sl_bf16),
                                   cudaMemcpyDeviceToDevice, t->st));
    for (int li = l1 - 1; li >= l0; li--) {
        struct gacts a = acts(t, s, li);
        const struct model_layer_ids *id = &l->layer[li];
        gpu_z3_layer(t, li, li > 0 ? li - 1 : -1);
        gpu_z3_grad(t, li);
        if (t->a->recompute == GPU_RECOMPUTE_SELECTIVE) {
            norm_fwd(t, a.ln1, NULL, NULL, NULL, a.res, NULL, id->attn_norm_w, id->attn_norm_b);
            norm_fwd(t, a.ln2, NULL, NULL, NULL, a.mid, NULL, id->mlp_norm_w, id->mlp_norm_b);
            act_fwd(t, a.act, a.fc);
        } else if (t->a->recompute == GPU_RECOMPUTE_FULL) {
            layer_fwd(t, li, &a, a.res, NULL);
        }
        layer_bwd(t, li, &a);
        gpu_tp_norm_grads(t, 1 + li);
        gpu_bucket_done(t, 1 + li, m);
    }
    if (first) {
        gpu_tp_embed_bwd(t, tok);
        gpu_bucket_done(t, 0, m);
    } else {
        CUDA_CHECK(cudaMemcpyAsync(t->dxout, t->dres, (size_t)t->R * t->D * sizeof(sl_bf16),
                                   cudaMemcpyDeviceToDevice, t->st));
    }
}

static void memory_report(struct gt *t, size_t arena_bytes)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (t->rank != 0) {
        /* a pipeline's other stages (-v): against the estimate's lines of their stage */
        if (t->par.pp > 1 && t->at.tp == 0 && t->at.dp == 0)
            sl_debug("GPU memory bytes of stage %d: parameters %zu, gradients %zu, optimizer "
                     "%zu, activations %zu, workspace %zu, arena %zu",
                     t->at.pp, t->mem[MEM_PARAMS], t->mem[MEM_GRADS], t->mem[MEM_OPTIM],
                     t->mem[MEM_ACTS], t->mem[MEM_WORK], arena_bytes);
        return;
    }
    static const char *const rc_names[] = { "none", "selective", "full" };
    char b[MEM_N][32], tot[32], fr[32], all[32];
    for (int i = 0; i < MEM_N; i++)
        sl_human_bytes((double)t->mem[i], b[i], sizeof(b[i]));
    /* one rank of a build without NCCL reduces nothing: train.grad_reduce_dtype changes
     * nothing (said here, where tests/gpu/t_train_gpu.sh reads which reduction ran) */
    const char *reduce = !t->reduce ? "not reduced: this build has no NCCL"
                         : t->a->grad_reduce == GPU_REDUCE_BF16 ? "reduced in bf16"
                                                                : "reduced in fp32";
    static const char *const what[3][2] = {
        { "bf16, whole", "bf16 micro-batch + fp32 accumulation, whole" },
        { "bf16, whole", "bf16 micro-batch whole + fp32 shard + 2 fp32 bucket stages" },
        { "bf16 shard + outer buckets + 2 layer slots",
          "bf16 outer buckets + 2 layer slots + fp32 shard + 2 fp32 bucket stages" },
    };
    sl_info("GPU memory per rank: parameters %s (ZeRO-%d: %s), gradients %s (%s, %s), "
            "optimizer state %s (fp32 master + AdamW moments, 1/%d shard), activations %s "
            "(recompute %s), workspace %s",
            b[MEM_PARAMS], t->zero, what[t->zero - 1][0], b[MEM_GRADS], what[t->zero - 1][1],
            reduce, b[MEM_OPTIM], t->DP, b[MEM_ACTS], rc_names[t->a->recompute], b[MEM_WORK]);
    /* the same in bytes (-v), as `sluice train --print-config` prints its estimate */
    sl_debug("GPU memory bytes: parameters %zu, gradients %zu, optimizer %zu, activations %zu, "
             "workspace %zu, arena %zu",
             t->mem[MEM_PARAMS], t->mem[MEM_GRADS], t->mem[MEM_OPTIM], t->mem[MEM_ACTS],
             t->mem[MEM_WORK], arena_bytes);
    sl_info("GPU memory: %s in one arena; %s free of %s on the device after allocating",
            sl_human_bytes((double)arena_bytes, tot, sizeof(tot)),
            sl_human_bytes((double)free_b, fr, sizeof(fr)),
            sl_human_bytes((double)total_b, all, sizeof(all)));
}

/* The rank's part of the model (train/parallel.h model_shard): its layers (by pipeline stage
 * and virtual stage), and the tensors its stage uses; the whole model without model
 * parallelism. */
int gpu_setup_model(struct gt *t)
{
    const struct train_opts *a = t->a;
    const struct model_config *c = &t->sh.local; /* this rank's part (gpu_tp_layout) */
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
    int rc = gpu_fuse_setup(t);
    if (rc)
        return rc;
    rc = plan_buckets(t);
    if (rc)
        return rc;
    t->ntensors = t->l.n;
    t->per = sl_xcalloc((size_t)(t->nslots * t->L), sizeof(*t->per));
    t->slot = sl_xcalloc((size_t)t->nslots, sizeof(*t->slot));
    t->zero = a->par.zero >= 2 ? a->par.zero : 1;
    t->pb = sl_xcalloc((size_t)t->nbk, sizeof(*t->pb));
    t->gb = sl_xcalloc((size_t)t->nbk, sizeof(*t->gb));
    t->lp_layer[0] = t->lp_layer[1] = -1;
    t->outer_ok = 0;

    static const enum attn_backend backends[] = { ATTN_AUTO, ATTN_CUDNN, ATTN_OWN };
    /* the document mask runs in our kernels' variable-length form (gpu_setup refused cuDNN) */
    t->attn = attention_new(t->dm && t->dm->reset_attn ? ATTN_OWN : backends[a->attention]);
    if (t->attn)
        attention_set_deterministic(t->attn, a->deterministic);
    if (!t->attn)
        return sl_err_set(SL_ERR_UNSUPPORTED, "train.attention=%s: %s",
                          a->attention == GPU_ATTN_CUDNN ? "cudnn" : "flash", attn_cudnn_error());
    if (attention_prepare(t->attn, t->B, t->T, t->H, t->Hkv, t->hd, &t->attn_ws_bytes) != 0)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "attention cannot run batch %d x %d tokens, %d/%d heads of %d%s%s\n"
                          "hint: our kernels take head sizes 16, 32, 64, 128; train.attention=auto "
                          "uses cuDNN where it can",
                          t->B, t->T, t->H, t->Hkv, t->hd,
                          a->attention == GPU_ATTN_CUDNN ? ": " : "",
                          a->attention == GPU_ATTN_CUDNN ? attn_cudnn_error() : "");
    t->emb_scratch_bytes = embedding_bwd_scratch_size(t->B, t->T, t->V);

    struct gpu_plan plan;
    if ((rc = plan_memory(t, &plan)))
        return rc;
    size_t bytes = plan.total;
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    cudaError_t e = cudaMalloc(&t->arena, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        gpu_plan_release(&plan);
        char need[32], fr[32];
        return sl_err_set(SL_ERR_NOMEM,
                          "cannot allocate %s of GPU memory (%s free)\nhint: lower "
                          "train.micro_batch_size, or set train.recompute=selective or full",
                          sl_human_bytes((double)bytes, need, sizeof(need)),
                          sl_human_bytes((double)free_b, fr, sizeof(fr)));
    }
    carve_arena(t, &plan, t->arena);
    gpu_plan_release(&plan);
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
    CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_issue, cudaEventDisableTiming));
    for (int i = 0; i < 3; i++)
        CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_gathered[i], cudaEventDisableTiming));
    for (int i = 0; i < 2; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_sfree[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventRecord(t->ev_sfree[i], t->comm));
    }
    for (int i = 0; i < 2; i++) {
        CUDA_CHECK(cudaEventCreateWithFlags(&t->step_done[i], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventRecord(t->step_done[i], t->st));
    }
    size_t nstats = (size_t)(1 + a->accum + a->eval_iters * a->accum);
    CUDA_CHECK(cudaHostAlloc((void **)&t->h_stats, nstats * sizeof(float), cudaHostAllocDefault));
    /* the validation staging buffer, once: cudaFreeHost synchronises the whole device */
    CUDA_CHECK(cudaHostAlloc((void **)&t->h_eval, (size_t)(t->tw * t->N) * sizeof(int32_t),
                             cudaHostAllocDefault));
    t->eval_sample = sl_xmalloc((size_t)(t->T + 1) * sizeof(uint32_t));

    /* the AdamW table, in device offsets */
    struct adamw_tensor *tab = sl_xcalloc((size_t)t->ntensors, sizeof(*tab));
    for (int i = 0; i < t->l.n; i++) {
        tab[i].offset = (int64_t)t->doff[i];
        tab[i].size = (int64_t)t->l.t[i].numel;
        tab[i].wd_mult = t->l.t[i].decay ? 1.0f : 0.0f;
        tab[i].lr_mult = 1.0f;
    }
    CUDA_CHECK(
        cudaMemcpy(t->d_tensors, tab, (size_t)t->ntensors * sizeof(*tab), cudaMemcpyHostToDevice));
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
    /* the set-up copies and the arena's memset ran on the legacy stream */
    CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}
