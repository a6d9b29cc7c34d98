/* The CUDA trainer's tensor and sequence parallelism, as the CPU path runs them
 * (train/cpu_model.c) and Megatron-Core defines them: the rank's part of the model
 * (train/parallel.h model_shard: its heads, KV heads, d_ff and vocabulary rows), its groups,
 * Megatron's f and g (the column-parallel layers' input and input gradient, the row-parallel
 * layers' output) and their sequence-parallel forms (all-gather / reduce-scatter over the
 * token rows), the vocab-parallel embedding and cross-entropy, the gradient norm that counts
 * each replicated tensor once, and the gathers that turn a rank's part into the full model
 * (checkpoints, train.dump_grads, the weights for evaluation tasks).
 *
 * Every collective runs on the compute stream, except the two Megatron overlaps without
 * splitting a GEMM, in a column-parallel layer's backward, on t->tpst: with SP the input's
 * all-gather while the input gradient's GEMM runs, and the input gradient's all-reduce (SP:
 * reduce-scatter) while the weight gradient's GEMM runs (Megatron's asynchronous
 * tensor-parallel communication in the linear layers' backward).
 */
#include "train/gpu_internal.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "train/gpu_comm.h"

#include <stdlib.h>
#include <string.h>

int gpu_tp_layout(struct gt *t)
{
    const struct train_opts *a = t->a;
    t->par = a->par;
    if (t->par.tp < 1) /* a caller that did not fill in parallel.*: data parallel only */
        t->par = (struct parallel_config){ .tp = 1, .pp = 1, .dp = t->W, .world = t->W };
    parallel_coord_of(&t->par, t->rank, &t->at);
    t->tp = t->par.tp;
    t->tpr = t->at.tp;
    t->sp = t->par.sp && t->tp > 1;
    t->DP = t->par.dp;
    t->dpr = t->at.dp;
    model_layout_init(&t->fl, &a->mc);
    model_shard_init(&t->sh, &t->par, &t->at, &a->mc, &t->fl);
    t->l = t->sh.l; /* borrowed: the shard owns it */
    t->v0 = t->sh.vocab_start;
    t->nchunks = t->sh.nchunks;
    /* activation sets: 1F1B keeps pp - stage micro-batches in flight (stage_sets of
     * train/parallel.c, the estimate); the interleaved schedule's count is the CPU path's */
    long k = t->par.pp - t->at.pp;
    t->nslots = t->nchunks > 1 ? (int)parallel_cpu_slots(&t->par, a->accum)
                               : (int)(k < a->accum ? k : a->accum);
    int N = (int)(a->micro_batch * a->seq_len);
    if (t->sp && N % t->tp)
        return sl_err_set(SL_ERR_CONFIG,
                          "sequence parallel splits the %ld x %ld tokens of a micro-batch into %d "
                          "equal parts: they do not divide\nhint: choose train.seq_len x "
                          "train.micro_batch_size divisible by parallel.tensor",
                          a->micro_batch, a->seq_len, t->tp);
    t->R = t->sp ? N / t->tp : N;
    t->row0 = t->sp ? t->tpr * t->R : 0;
    return 0;
}

/* Groups as train/cpu_train.c makes them: tensor parallel (same dp and pp), data parallel
 * (same tp and pp), the pipeline (same tp and dp), the two pipeline ends holding a tied
 * embedding, and the model-parallel ranks of one replica (same dp; Megatron order, tensor
 * fastest: what parallel_gather_full takes). Every rank splits and opens in the same order. */
int gpu_tp_groups(struct gt *t)
{
    const struct parallel_config *p = &t->par;
    const struct parallel_coord *c = &t->at;
    int tied = t->a->mc.tied_embeddings && p->pp > 1 && (c->pp == 0 || c->pp == p->pp - 1);
    int rc;
    if ((rc = sl_world_split(t->w, c->dp + p->dp * c->pp, c->tp, &t->tpg)) ||
        (rc = sl_world_split(t->w, c->tp + p->tp * c->pp, c->dp, &t->dpg)) ||
        (rc = sl_world_split(t->w, c->tp + p->tp * c->dp, c->pp, &t->ppg)) ||
        (rc = sl_world_split(t->w, tied ? c->tp + p->tp * c->dp : -1, c->pp, &t->embg)) ||
        (rc = sl_world_split(t->w, c->dp, c->tp + p->tp * c->pp, &t->mpg)))
        return rc;
    return 0;
}

int gpu_tp_open(struct gt *t, enum gcomm_backend be)
{
    if (t->tp == 1)
        return 0;
    int rc = gcomm_open(&t->tpc, be, &t->tpg);
    if (rc)
        return rc;
    CUDA_CHECK(cudaStreamCreateWithFlags(&t->tpst, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_tp, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&t->ev_tpdone, cudaEventDisableTiming));
    return 0;
}

void gpu_tp_release(struct gt *t)
{
    if (t->tpc)
        gcomm_close(t->tpc);
    if (t->ev_tp)
        cudaEventDestroy(t->ev_tp);
    if (t->ev_tpdone)
        cudaEventDestroy(t->ev_tpdone);
    if (t->tpst)
        cudaStreamDestroy(t->tpst);
    model_shard_release(&t->sh);
    model_layout_release(&t->fl);
    memset(&t->l, 0, sizeof(t->l));
    sl_world_group_free(&t->tpg);
    sl_world_group_free(&t->dpg);
    sl_world_group_free(&t->ppg);
    sl_world_group_free(&t->embg);
    sl_world_group_free(&t->mpg);
}

/* ---- Megatron's f and g -------------------------------------------------------------- */

const sl_bf16 *gpu_tp_gather_rows(struct gt *t, const sl_bf16 *rows, sl_bf16 *full)
{
    if (!t->sp)
        return rows;
    gcomm_all_gather(t->tpc, rows, full, (size_t)t->R * t->D, GCOMM_BF16, t->st);
    return full;
}

const sl_bf16 *gpu_tp_row_out(struct gt *t, sl_bf16 *part)
{
    if (t->tp == 1)
        return part;
    if (!t->sp) {
        gcomm_all_reduce(t->tpc, part, part, (size_t)t->N * t->D, GCOMM_BF16, GCOMM_SUM, t->st);
        return part;
    }
    gcomm_reduce_scatter(t->tpc, part, t->sp_scatter, (size_t)t->R * t->D, GCOMM_BF16, t->st);
    return t->sp_scatter;
}

const sl_bf16 *gpu_tp_full_dres(struct gt *t)
{
    return gpu_tp_gather_rows(t, t->dres, t->sp_gather);
}

#define P gpu_param /* tensor id's weights and gradient (gpu_internal.h) */
#define G gpu_grad

const sl_bf16 *gpu_tp_col_bwd(struct gt *t, sl_bf16 *dx, const sl_bf16 *dy, const sl_bf16 *x,
                              int x_rows, int wid, int bid, int IC, int OC)
{
    if (t->sp && x_rows) {
        /* the input's rows gathered on the tensor-parallel stream while dx is computed
         * (t->sp_gather's last reader, the previous row-parallel layer's backward, is
         * before the event) */
        CUDA_CHECK(cudaEventRecord(t->ev_tp, t->st));
        CUDA_CHECK(cudaStreamWaitEvent(t->tpst, t->ev_tp, 0));
        gcomm_all_gather(t->tpc, x, t->sp_gather, (size_t)t->R * IC, GCOMM_BF16, t->tpst);
        CUDA_CHECK(cudaEventRecord(t->ev_tpdone, t->tpst));
        x = t->sp_gather;
    }
    GEMM_CHECK(linear_bwd_data(t->gemm, dx, NULL, dy, P(t, wid), NULL, t->N, IC, OC, 0, t->st));
    if (t->sp && x_rows)
        CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_tpdone, 0));
    const sl_bf16 *out = dx;
    if (t->tp > 1) {
        /* the sum over ranks on the tensor-parallel stream, while dW and db run */
        CUDA_CHECK(cudaEventRecord(t->ev_tp, t->st));
        CUDA_CHECK(cudaStreamWaitEvent(t->tpst, t->ev_tp, 0));
        if (t->sp) {
            gcomm_reduce_scatter(t->tpc, dx, t->sp_scatter, (size_t)t->R * IC, GCOMM_BF16, t->tpst);
            out = t->sp_scatter;
        } else {
            gcomm_all_reduce(t->tpc, dx, dx, (size_t)t->N * IC, GCOMM_BF16, GCOMM_SUM, t->tpst);
        }
        CUDA_CHECK(cudaEventRecord(t->ev_tpdone, t->tpst));
    }
    gpu_bwd_weight(t, dy, x, wid, bid, IC, OC);
    if (t->tp > 1)
        CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_tpdone, 0));
    return out;
}

/* ---- the vocab-parallel embedding and cross-entropy ------------------------------------ */

void gpu_tp_embed_fwd(struct gt *t, sl_bf16 *x0, const int32_t *tok)
{
    const struct model_layout *l = &t->l;
    if (t->tp == 1 && t->dpos && l->pos >= 0) { /* documents: the positions reset */
        embedding_fwd(x0, tok, P(t, l->embed), NULL, t->B, t->T, t->D, t->V, t->st);
        embedding_pos_add_at(x0, P(t, l->pos), t->dpos, 0, t->N, t->T, t->D, t->st);
        return;
    }
    if (t->tp == 1) {
        embedding_fwd(x0, tok, P(t, l->embed), P(t, l->pos), t->B, t->T, t->D, t->V, t->st);
        return;
    }
    /* the rows of this rank's ids, zeros for the others, summed over the group (exact:
     * one rank's row and zeros), then the positions of the rows held */
    sl_bf16 *e = t->sp ? t->tmp : x0;
    embedding_local_ids(t->ids, tok, t->v0, t->Vp, t->N, t->st);
    embedding_fwd_vp(e, t->ids, P(t, l->embed), t->N, t->D, t->st);
    if (t->sp)
        gcomm_reduce_scatter(t->tpc, e, x0, (size_t)t->R * t->D, GCOMM_BF16, t->st);
    else
        gcomm_all_reduce(t->tpc, x0, x0, (size_t)t->N * t->D, GCOMM_BF16, GCOMM_SUM, t->st);
    if (l->pos >= 0)
        embedding_pos_add_at(x0, P(t, l->pos), t->dpos, t->row0, t->R, t->T, t->D, t->st);
}

void gpu_tp_embed_bwd(struct gt *t, const int32_t *tok)
{
    const struct model_layout *l = &t->l;
    /* documents: the position table's gradient over the reset positions as ids */
    int reset = t->dpos && l->pos >= 0;
    if (t->tp == 1) {
        embedding_bwd(G(t, l->embed), reset ? NULL : G(t, l->pos), t->emb_scratch,
                      t->emb_scratch_bytes, t->dres, tok, t->B, t->T, t->D, t->V, t->st);
        if (reset)
            embedding_bwd(G(t, l->pos), NULL, t->emb_scratch, t->emb_scratch_bytes, t->dres,
                          t->dpos, t->B, t->T, t->D, t->T, t->st);
        return;
    }
    /* every token's gradient (gathered with SP): this rank's rows of the table, and the
     * whole position table on every rank */
    const sl_bf16 *dx = gpu_tp_full_dres(t);
    embedding_local_ids(t->ids, tok, t->v0, t->Vp, t->N, t->st);
    embedding_bwd(G(t, l->embed), reset ? NULL : G(t, l->pos), t->emb_scratch, t->emb_scratch_bytes,
                  dx, t->ids, t->B, t->T, t->D, t->Vp, t->st);
    if (reset)
        embedding_bwd(G(t, l->pos), NULL, t->emb_scratch, t->emb_scratch_bytes, dx, t->dpos, t->B,
                      t->T, t->D, t->T, t->st);
}

void gpu_tp_classifier(struct gt *t, const int32_t *targets, float dloss, int write_dlogits)
{
    if (t->tp == 1) {
        classifier_fwd_bwd(t->losses, t->logits, targets, t->N, t->V, t->Vp, dloss, write_dlogits,
                           t->st);
        return;
    }
    size_t N = (size_t)t->N;
    float *mx = t->xmx, *se = mx + N, *tl = se + N;
    classifier_vp_partial(mx, se, tl, t->logits, targets, t->v0, t->N, t->V, t->Vp, 0, t->st);
    gcomm_all_reduce(t->tpc, mx, mx, N, GCOMM_F32, GCOMM_MAX, t->st);
    gcomm_all_reduce(t->tpc, tl, tl, N, GCOMM_F32, GCOMM_SUM, t->st);
    classifier_vp_partial(mx, se, tl, t->logits, targets, t->v0, t->N, t->V, t->Vp, 1, t->st);
    gcomm_all_reduce(t->tpc, se, se, N, GCOMM_F32, GCOMM_SUM, t->st);
    classifier_vp_finish(t->losses, t->logits, targets, mx, se, tl, t->v0, t->N, t->V, t->Vp, dloss,
                         write_dlogits, t->st);
}

/* ---- gradients ----------------------------------------------------------------------- */

void gpu_tp_norm_grads(struct gt *t, int k)
{
    if (!t->sp)
        return;
    const struct gbucket *b = &t->bk[k];
    for (int i = 0; i < t->l.n; i++) {
        const struct model_tensor *x = &t->l.t[i];
        if ((x->kind == MODEL_T_NORM_W || x->kind == MODEL_T_NORM_B) && x->numel &&
            t->doff[i] >= b->dev && t->doff[i] < b->dev + b->len)
            gcomm_all_reduce(t->tpc, G(t, i), G(t, i), x->numel, GCOMM_BF16, GCOMM_SUM, t->st);
    }
}

void gpu_tp_norm_sq(struct gt *t)
{
    int first = 1;
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        for (int i = 0; cnt && i < t->l.n; i++) {
            if (!t->sh.t[i].owner || !t->l.t[i].numel)
                continue;
            size_t lo = t->doff[i], hi = lo + t->l.t[i].numel;
            lo = lo > d0 ? lo : d0;
            hi = hi < d0 + cnt ? hi : d0 + cnt;
            if (lo >= hi)
                continue;
            global_norm_sq_f32(t->d_stats, t->gn_scratch, gpu_grad_slice(t, k) + (lo - d0), hi - lo,
                               !first, t->st);
            first = 0;
        }
    }
    if (first)
        fill_f32(t->d_stats, 0.0f, 1, t->st);
}

/* ---- the full model from the ranks' parts -------------------------------------------- */

int gpu_tp_gather_full(struct gt *t, const float *local, float *full)
{
    if (t->dpr != 0) /* the other replicas hold the same */
        return 0;
    return parallel_gather_full(&t->mpg, &t->par, &t->a->mc, &t->fl, local, t->l.total, full);
}

/* The rank's bf16 working weights widened (exactly) into local, laid out by its layout t->l
 * (gpu_params_local: collective over the data-parallel group at ZeRO-3). gpu_params_host
 * would place whole tensors by the full layout with a pipeline, which a tensor-parallel part
 * is not. */
static int tp_local_params(struct gt *t, float *local)
{
    memset(local, 0, t->l.total * sizeof(float)); /* the alignment gaps too */
    return gpu_params_local(t, local);
}

int gpu_tp_params_full(struct gt *t, float *full)
{
    float *local = malloc((t->l.total + 1) * sizeof(float));
    int rc = local ? tp_local_params(t, local)
                   : sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB for the weights",
                                t->l.total * sizeof(float) >> 20);
    if (!(rc = gpu_all_ok(t, rc)))
        rc = gpu_tp_gather_full(t, local, full);
    free(local);
    return rc;
}

/* ---- checkpoints of a tensor-parallel layout ------------------------------------------- */

/* One part (weights, or a moment) of this rank's ZeRO-1 slices r[k] (ranges of the local
 * layout) into dst[k]: the full model's part (a checkpoint's, or for fresh weights the
 * initialisation of the full model, so that every layout starts from the same weights),
 * cut to this rank's tensors (model_shard_slice). Host memory: the full model and the local
 * one, in fp32, as the CPU path's load takes. */
int gpu_tp_read_part(struct gt *t, const char *from, enum ckpt_part part, uint64_t seed,
                     const struct ckpt_range *r, size_t nr, float *const *dst)
{
    if (!from && part != CKPT_PARAMS)
        return 0; /* fresh moments: zeros */
    size_t n = t->fl.total;
    float *full = malloc((n + 1) * sizeof(float)),
          *local = malloc((t->l.total + 1) * sizeof(float));
    int rc = 0;
    if (!full || !local) {
        rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory to load the model",
                        (n + t->l.total) * sizeof(float) >> 20);
        goto out;
    }
    if (from) {
        struct ckpt_range all = { 0, n, NULL, NULL, NULL };
        rc = ckpt_read_ranges(from, &t->fl, part, &all, 1, &full);
    } else {
        model_init_params(&t->a->mc, &t->fl, full, seed);
    }
    if (rc)
        goto out;
    memset(local, 0, t->l.total * sizeof(float));
    model_shard_slice(&t->sh, &t->fl, full, local);
    for (size_t k = 0; k < nr; k++)
        if (r[k].n)
            memcpy(dst[k], local + r[k].first, r[k].n * sizeof(float));
out:
    free(full);
    free(local);
    return rc;
}

/* A range of the full layout this rank's optimizer shard holds: full elements
 * [first, first + n), of which the first `real` come from the shard storage at `src` (the
 * rest: the alignment gap after a tensor, written as zeros by the rank holding its end, so
 * that the shards of all ranks tile the full layout). */
struct tp_range {
    size_t first, n, real, src;
};

struct tp_ranges {
    struct tp_range *r;
    size_t n, cap;
};

static void add_range(struct tp_ranges *rs, size_t first, size_t real, size_t pad, size_t src)
{
    struct tp_range *p = rs->n ? &rs->r[rs->n - 1] : NULL;
    if (p && p->n == p->real && p->first + p->n == first && p->src + p->real == src) {
        p->n += real + pad;
        p->real += real;
        return;
    }
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 64;
        rs->r = sl_xrealloc(rs->r, rs->cap * sizeof(*rs->r));
    }
    rs->r[rs->n++] = (struct tp_range){ first, real + pad, real, src };
}

/* Local layout elements [lo, lo + len) of tensor i = full elements from ffirst on, cut to
 * the slice [s0, s1) of bucket k (its shard storage from `shard`). */
static void map_piece(struct gt *t, struct tp_ranges *rs, int i, size_t lo, size_t len,
                      size_t ffirst, size_t s0, size_t s1, size_t shard)
{
    size_t a = lo > s0 ? lo : s0, b = lo + len < s1 ? lo + len : s1;
    if (a >= b)
        return;
    const struct model_tensor *ft = &t->fl.t[t->sh.t[i].full];
    size_t f = ffirst + (a - lo), pad = 0;
    size_t fend = ft->offset + ft->numel;
    if (f + (b - a) == fend) /* the tensor's end: its alignment gap too */
        pad = (ft->numel + MODEL_ALIGN - 1) / MODEL_ALIGN * MODEL_ALIGN - ft->numel;
    add_range(rs, f, b - a, pad, shard + (a - s0));
}

static void shard_ranges_full(struct gt *t, struct tp_ranges *rs)
{
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        size_t s0 = l0, s1 = l0 + nl, shard = t->bk[k].shard;
        for (int i = 0; nl && i < t->l.n; i++) {
            const struct tensor_shard *x = &t->sh.t[i];
            const struct model_tensor *lt = &t->l.t[i];
            if (x->full < 0 || !x->owner || !lt->numel)
                continue;
            if (lt->offset + lt->numel <= s0 || lt->offset >= s1)
                continue;
            const struct model_tensor *ft = &t->fl.t[x->full];
            size_t lc = (size_t)lt->shape[1], fc = (size_t)ft->shape[1];
            for (int p = 0; p < x->nrows; p++) {
                const struct shard_rows *sr = &x->rows[p];
                if (x->col >= 0) { /* a column split: each row its own range */
                    for (int64_t row = 0; row < sr->nrows; row++)
                        map_piece(t, rs, i, lt->offset + (size_t)(sr->lrow + row) * lc, lc,
                                  ft->offset + (size_t)(sr->frow + row) * fc + (size_t)x->col, s0,
                                  s1, shard);
                } else {
                    map_piece(t, rs, i, lt->offset + (size_t)sr->lrow * lc, (size_t)sr->nrows * lc,
                              ft->offset + (size_t)sr->frow * fc, s0, s1, shard);
                }
            }
        }
    }
}

struct tp_fill {
    struct gt *t;
    const struct tp_range *r;
};

static int fill_range(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct tp_fill *f = arg;
    const struct tp_range *r = &f->r[i / 3];
    const float *src[3] = { f->t->master, f->t->m, f->t->v };
    if (nbytes != r->n * sizeof(float))
        return sl_err_set(SL_ERR_STATE, "checkpoint: range at %zu has %zu bytes, expected %zu",
                          r->first, nbytes, r->n * sizeof(float));
    CUDA_CHECK(
        cudaMemcpy(buf, src[i % 3] + r->src, r->real * sizeof(float), cudaMemcpyDeviceToHost));
    memset((float *)buf + r->real, 0, (r->n - r->real) * sizeof(float));
    return 0;
}

/* This rank's optimizer shard as ranges of the full layout (every world rank writes one
 * file; a tensor replicated over the tensor-parallel group is written by its owner). */
int gpu_tp_write_shard(struct gt *t, long step)
{
    struct tp_ranges rs = { NULL, 0, 0 };
    shard_ranges_full(t, &rs);
    struct ckpt_range *cr = sl_xcalloc(rs.n + 1, sizeof(*cr));
    for (size_t i = 0; i < rs.n; i++) {
        cr[i].first = rs.r[i].first;
        cr[i].n = rs.r[i].n;
    }
    struct tp_fill f = { t, rs.r };
    int rc = ckpt_write_shard_fill(t->a->ckpt_dir, step, t->rank, t->W, cr, rs.n, fill_range, &f);
    free(cr);
    free(rs.r);
    return rc;
}

/* model.safetensors of the full model, gathered to world rank 0. Collective. */
int gpu_tp_write_model(struct gt *t, long step)
{
    float *full = NULL;
    int rc = 0;
    if (t->rank == 0 && !(full = malloc((t->fl.total + 1) * sizeof(float))))
        rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory for the checkpoint",
                        t->fl.total * sizeof(float) >> 20);
    if ((rc = gpu_all_ok(t, rc)) == 0)
        rc = gpu_tp_params_full(t, full);
    if (!rc && t->rank == 0)
        rc = ckpt_write_model(t->a->ckpt_dir, step, &t->fl, full);
    free(full);
    return rc;
}
