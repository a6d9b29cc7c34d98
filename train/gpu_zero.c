/* The CUDA trainer's data parallelism, ZeRO-1 over the communicator of train/gpu_comm.h: per-bucket reduce-scatter of the gradient, the global norm, the sharded AdamW step
 * and the parameter all-gather; the sharded state in and out of checkpoints.
 */
#include "train/gpu_internal.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/log.h"
#include "core/world.h"

#include <stdlib.h>
#include <string.h>

/* The groups (as train/cpu_train.c makes them) and their communicators, opened in the same
 * order on every rank: data parallel (the ranks of the same tensor and pipeline coordinates:
 * the gradient's reduce-scatter, the parameters' all-gather), the pipeline's stages of one
 * replica, and its two ends when they hold a tied embedding. */
int gpu_setup_comm(struct gt *t)
{
#ifdef SL_HAVE_NCCL
    t->reduce = 1;
#else
    t->reduce = t->W > 1;
#endif
    const struct parallel_config *p = &t->par;
    const struct parallel_coord *c = &t->at;
    int tied = t->a->mc.tied_embeddings && p->pp > 1 && (c->pp == 0 || c->pp == p->pp - 1);
    int rc;
    if ((rc = sl_world_split(t->w, c->tp + p->tp * c->pp, c->dp, &t->dpg)) ||
        (rc = sl_world_split(t->w, c->tp + p->tp * c->dp, c->pp, &t->ppg)) ||
        (rc = sl_world_split(t->w, tied ? c->tp + p->tp * c->dp : -1, c->pp, &t->embg)))
        return rc;
    if ((rc = gcomm_open(&t->dpc, t->comm_be, &t->dpg)))
        return rc;
    if (p->pp > 1 && (rc = gcomm_open(&t->ppc, t->comm_be, &t->ppg)))
        return rc;
    if (tied && (rc = gcomm_open(&t->embc, t->comm_be, &t->embg)))
        return rc;
    return 0;
}

/* Reduce-scatter bucket k's step gradient over data parallel on the communication stream
 * (sum over ranks; each rank keeps its slice, in place): in fp32
 * (train.grad_reduce_dtype=fp32, the default), or cast once to bf16, reduced in bf16 (half
 * the traffic) and the slice widened back. */
static void reduce_bucket(struct gt *t, int k)
{
    const struct gbucket *b = &t->bk[k];
    size_t cnt = b->len / (size_t)t->dW;
    size_t mine = b->dev + (size_t)t->drank * cnt;
    if (t->a->grad_reduce == GPU_REDUCE_BF16)
        cast_f32_to_bf16(t->grads + b->dev, t->main_grad + b->dev, b->len, t->st);
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    if (t->a->grad_reduce == GPU_REDUCE_BF16) {
        gcomm_reduce_scatter(t->dpc, t->grads + b->dev, t->grads + mine, cnt, GCOMM_BF16, t->comm);
        cast_bf16_to_f32(t->main_grad + mine, t->grads + mine, cnt, t->comm);
    } else {
        gcomm_reduce_scatter(t->dpc, t->main_grad + b->dev, t->main_grad + mine, cnt, GCOMM_F32,
                             t->comm);
    }
}

void gpu_tied_reduce(struct gt *t)
{
    if (!t->embc || !t->bk[0].len)
        return;
    const struct model_tensor *e = &t->l.t[t->l.embed];
    float *g = t->main_grad + t->doff[t->l.embed];
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    gcomm_all_reduce(t->embc, g, g, e->numel, GCOMM_F32, GCOMM_SUM, t->comm);
    CUDA_CHECK(cudaEventRecord(t->ev_comm, t->comm));
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_comm, 0));
    reduce_bucket(t, 0);
}

/* Bucket k's gradient of micro-step m (of accum) is complete in t->grads (bf16): add it to
 * the fp32 step gradient t->main_grad (written on the first micro-step), once per bucket and
 * micro-step, so that micro-batches are summed in fp32 whatever their number. After the last
 * micro-step, reduce-scatter the bucket (reduce_bucket). */
void gpu_bucket_done(struct gt *t, int k, long m)
{
    const struct gbucket *b = &t->bk[k];
    if (!b->len)
        return;
    grad_accumulate_f32(t->main_grad + b->dev, t->grads + b->dev, b->len, m == 0, t->st);
    /* the tied embedding's bucket waits for the other end's (gpu_tied_reduce): summing it
     * here would stop this stage's pipeline until the other end finished its backward */
    if (m != t->a->accum - 1 || !t->reduce || (k == 0 && t->embc))
        return;
    reduce_bucket(t, k);
}

/* ---- optimizer ----------------------------------------------------------------------- */

/* After the last micro-step's backward: wait for the reduce-scatters, the squared global
 * norm of the reduced gradient (each rank over its slices, summed over ranks), the losses
 * summed over ranks, and the statistics copied to pinned memory (event ev_stats). */
void gpu_reduce_stats(struct gt *t)
{
    CUDA_CHECK(cudaEventRecord(t->ev_comm, t->comm));
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_comm, 0));
    int first = 1;
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (!cnt || (k == 0 && t->embc && !t->sh.first_stage)) /* the tied copy: counted once */
            continue;
        global_norm_sq_f32(t->d_stats, t->gn_scratch, t->main_grad + d0, cnt, !first, t->st);
        first = 0;
    }
    if (first)
        fill_f32(t->d_stats, 0.0f, 1, t->st);
    if (t->reduce)
        gcomm_all_reduce(t->dpc, t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), GCOMM_F32,
                         GCOMM_SUM, t->st);
    if (t->ppc) /* the stages' norms; the losses, which only the last stage has */
        gcomm_all_reduce(t->ppc, t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), GCOMM_F32,
                         GCOMM_SUM, t->st);
    CUDA_CHECK(cudaMemcpyAsync(t->h_stats, t->d_stats, (size_t)(1 + t->a->accum) * sizeof(float),
                               cudaMemcpyDeviceToHost, t->st));
    CUDA_CHECK(cudaEventRecord(t->ev_stats, t->st));
}

/* Cast this rank's master slices to the bf16 working copy and all-gather the parameters. */
static void gather_params(struct gt *t, int cast)
{
    for (int k = 0; cast && k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (cnt)
            cast_f32_to_bf16(t->params + d0, t->master + t->bk[k].shard, cnt, t->st);
    }
    if (!t->reduce)
        return;
    gcomm_group_begin(t->dpc);
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (cnt)
            gcomm_all_gather(t->dpc, t->params + d0, t->params + t->bk[k].dev, cnt, GCOMM_BF16,
                             t->st);
    }
    gcomm_group_end(t->dpc);
}

void gpu_optimizer_step(struct gt *t, double lr, long adam_step, uint64_t seed)
{
    const struct train_opts *a = t->a;
    struct adamw_hparams hp;
    memset(&hp, 0, sizeof(hp));
    hp.lr = (float)lr;
    hp.beta1 = (float)a->adam.beta1;
    hp.beta2 = (float)a->adam.beta2;
    hp.eps = (float)a->adam.eps;
    hp.weight_decay = (float)a->adam.weight_decay;
    hp.step = adam_step;
    hp.grad_scale = 1.0f;
    hp.max_grad_norm = a->clip > 0 ? (float)a->clip : 0.0f;
    hp.grad_norm_sq = t->d_stats;
    hp.seed = seed;
    hp.stochastic_rounding = 0;
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (!cnt)
            continue;
        size_t s0 = t->bk[k].shard;
        adamw_update_f32(t->params + d0, t->main_grad + d0, t->master + s0, t->m + s0, t->v + s0,
                         (int64_t)cnt, (int64_t)d0, t->d_tensors, t->ntensors, &hp, t->st);
    }
    gather_params(t, 0);
}

/* ---- state: initialisation, resume, checkpoints -------------------------------------- */

/* A piece of this rank's shard: full-layout elements [full, full + n), found at shard in the
 * master / m / v storage and at dev in the device layout. */
struct spiece {
    size_t full, n, shard, dev;
};

/* The rank's shard as pieces of the full model's layout: each bucket slice cut where the
 * local tensors start (a tensor with the alignment gap after it), mapped to the full
 * layout, pieces of one slice merged where they stay contiguous (one piece per slice
 * without model parallelism, as the slices were written before). owned: only the tensors
 * whose copy counts (a checkpoint's writers: the tied embedding once), else every tensor the
 * rank holds (its readers). */
static struct spiece *shard_pieces(const struct gt *t, int owned, size_t *np)
{
    const struct model_layout *l = &t->l;
    size_t n = 0;
    struct spiece *p = sl_xcalloc((size_t)(l->n + t->nbk) + 1, sizeof(*p));
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl, first = n;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        for (int i = 0; i < l->n && nl; i++) {
            const struct tensor_shard *x = &t->sh.t[i];
            size_t a = l->t[i].offset, b = i + 1 < l->n ? l->t[i + 1].offset : l->total;
            size_t lo = a > l0 ? a : l0, hi = b < l0 + nl ? b : l0 + nl;
            if (lo >= hi || x->full < 0 || (owned && !x->owner))
                continue;
            struct spiece q = { t->fl.t[x->full].offset + (lo - a), hi - lo,
                                t->bk[k].shard + (lo - l0), d0 + (lo - l0) };
            struct spiece *e = n > first ? &p[n - 1] : NULL;
            if (e && e->full + e->n == q.full && e->shard + e->n == q.shard)
                e->n += q.n;
            else
                p[n++] = q;
        }
    }
    *np = n;
    return p;
}

static struct ckpt_range *piece_ranges(const struct spiece *p, size_t n)
{
    struct ckpt_range *r = sl_xcalloc(n + 1, sizeof(*r));
    for (size_t j = 0; j < n; j++) {
        r[j].first = p[j].full;
        r[j].n = p[j].n;
    }
    return r;
}

/* Fresh weights (the CPU path's initialisation, on every rank) or a checkpoint's. The shard
 * goes to the device one part at a time (master weights, then each moment) through one
 * host buffer of the shard's size. */
int gpu_load_state(struct gt *t, const char *from, uint64_t init_seed)
{
    size_t n = t->shard_n;
    float *host = calloc(n + 1, sizeof(float));
    if (!host)
        return sl_err_set(SL_ERR_NOMEM,
                          "cannot allocate %zu MiB of host memory for the optimizer shard",
                          n * sizeof(float) >> 20);
    size_t np;
    struct spiece *pc = shard_pieces(t, 0, &np);
    struct ckpt_range *r = piece_ranges(pc, np);
    float **dst = sl_xcalloc(np + 1, sizeof(float *));
    for (size_t j = 0; j < np; j++)
        dst[j] = host + pc[j].shard;
    float *dev[3] = { t->master, t->m, t->v };
    static const enum ckpt_part parts[3] = { CKPT_PARAMS, CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };
    int rc = 0;
    for (int p = 0; p < 3 && !rc; p++) {
        memset(host, 0, n * sizeof(float)); /* the padding of every slice stays 0 */
        if (from) {
            rc = ckpt_read_ranges(from, &t->fl, parts[p], r, np, dst);
        } else if (p == 0) {
            float *slab = malloc(t->fl.total * sizeof(float));
            if (!slab) {
                rc = sl_err_set(SL_ERR_NOMEM,
                                "cannot allocate %zu MiB of host memory for the initial weights",
                                t->fl.total * sizeof(float) >> 20);
            } else {
                model_init_params(&t->a->mc, &t->fl, slab, init_seed);
                for (size_t j = 0; j < np; j++)
                    memcpy(dst[j], slab + r[j].first, r[j].n * sizeof(float));
                free(slab);
            }
        } /* fresh moments: zeros */
        /* pageable: returns when the host buffer may be reused */
        if (!rc)
            CUDA_CHECK(cudaMemcpy(dev[p], host, n * sizeof(float), cudaMemcpyHostToDevice));
    }
    free(dst);
    free(r);
    free(pc);
    free(host);
    if (rc)
        return rc;
    /* a pageable cudaMemcpy may return before its DMA is done, and our streams do not wait
     * for the legacy stream */
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemsetAsync(t->params, 0, t->dtotal * sizeof(sl_bf16), t->st));
    gather_params(t, 1);
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    return 0;
}

/* Tensor i of model.safetensors: the bf16 working weights of layout tensor i, widened
 * (exactly) to fp32. */
struct model_fill {
    struct gt *t;
    uint16_t *bits; /* the largest tensor's bf16 bits */
};

static int fill_model(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct model_fill *f = arg;
    struct gt *t = f->t;
    const struct model_tensor *mt = &t->l.t[i];
    if (nbytes != mt->numel * sizeof(float))
        return sl_err_set(SL_ERR_STATE, "checkpoint: tensor '%s' has %zu bytes, expected %zu",
                          mt->name, nbytes, mt->numel * sizeof(float));
    CUDA_CHECK(cudaMemcpy(f->bits, t->params + t->doff[i], mt->numel * sizeof(uint16_t),
                          cudaMemcpyDeviceToHost));
    uint32_t *out = buf;
    for (size_t k = 0; k < mt->numel; k++)
        out[k] = (uint32_t)f->bits[k] << 16;
    return 0;
}

/* The local tensors widened into dst, laid out by the local layout, or with place by the full
 * one (the owned ones only). */
static int widen_params(struct gt *t, float *dst, int place)
{
    size_t most = 0;
    for (int i = 0; i < t->l.n; i++)
        most = t->l.t[i].numel > most ? t->l.t[i].numel : most;
    struct model_fill f = { t, malloc((most + 1) * sizeof(uint16_t)) };
    if (!f.bits)
        return sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory for the weights",
                          most * sizeof(uint16_t) >> 20);
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    int rc = 0;
    for (int i = 0; i < t->l.n && !rc; i++) {
        const struct tensor_shard *x = &t->sh.t[i];
        if (place && (x->full < 0 || !x->owner))
            continue;
        size_t off = place ? t->fl.t[x->full].offset : t->l.t[i].offset;
        rc = fill_model(&f, (size_t)i, dst + off, t->l.t[i].numel * sizeof(float));
    }
    free(f.bits);
    return rc;
}

int gpu_params_host(struct gt *t, float *dst)
{
    if (t->par.pp == 1)
        return dst ? widen_params(t, dst, 0) : 0;
    /* every stage's tensors, zeros elsewhere, summed over the pipeline: exact */
    float *full = calloc(t->fl.total + 1, sizeof(float));
    int rc =
        full ? widen_params(t, full, 1)
             : sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory for the weights",
                          t->fl.total * sizeof(float) >> 20);
    if ((rc = gpu_all_ok(t, rc)) == 0)
        rc = sl_world_allreduce_f32(&t->ppg, full, t->fl.total, SL_SUM);
    if (!rc && dst)
        memcpy(dst, full, t->fl.total * sizeof(float));
    free(full);
    return rc;
}

/* Tensor i of this rank's optimizer shard: for each piece in order, its master weights,
 * exp_avg and exp_avg_sq (ckpt_write_shard_fill's order). */
struct shard_fill {
    struct gt *t;
    const struct spiece *p;
};

static int fill_shard(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct shard_fill *f = arg;
    struct gt *t = f->t;
    const struct spiece *p = &f->p[i / 3];
    const float *src[3] = { t->master, t->m, t->v };
    if (nbytes != p->n * sizeof(float))
        return sl_err_set(SL_ERR_STATE, "checkpoint: shard piece %zu has %zu bytes, expected %zu",
                          i / 3, nbytes, p->n * sizeof(float));
    CUDA_CHECK(cudaMemcpy(buf, src[i % 3] + p->shard, nbytes, cudaMemcpyDeviceToHost));
    return 0;
}

/* model.safetensors by rank 0: one tensor at a time from its own weights, or with a pipeline
 * gathered from every stage (the full model in host memory). Collective. */
static int write_model(struct gt *t, long step)
{
    const struct train_opts *a = t->a;
    int rc = 0;
    if (t->par.pp > 1) {
        float *full = t->rank == 0 ? malloc(t->fl.total * sizeof(float) + 1) : NULL;
        if (t->rank == 0 && !full)
            rc = sl_err_set(SL_ERR_NOMEM,
                            "cannot allocate %zu MiB of host memory for the checkpoint",
                            t->fl.total * sizeof(float) >> 20);
        if ((rc = gpu_all_ok(t, rc)) == 0)
            rc = gpu_params_host(t, full);
        if (!rc && t->rank == 0)
            rc = ckpt_write_model(a->ckpt_dir, step, &t->fl, full);
        free(full);
        return rc;
    }
    if (t->rank != 0)
        return 0;
    size_t most = 0;
    for (int i = 0; i < t->l.n; i++)
        most = t->l.t[i].numel > most ? t->l.t[i].numel : most;
    struct model_fill mf = { t, malloc((most + 1) * sizeof(uint16_t)) };
    if (!mf.bits)
        rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate %zu MiB of host memory for the checkpoint",
                        most * sizeof(uint16_t) >> 20);
    else
        rc = ckpt_write_model_fill(a->ckpt_dir, step, &t->l, fill_model, &mf);
    free(mf.bits);
    return rc;
}

/* Every rank writes its optimizer shard (ranges of the full model's layout, so that any
 * layout reads it), rank 0 also model.safetensors, one tensor at a time without a pipeline:
 * host memory is the largest tensor (fp32, and its bf16 bits for the model), never the model
 * or the shard (for Llama-3-8B on one rank: 3 GB instead of about 144 GB). */
int gpu_save_checkpoint(struct gt *t, const struct ckpt_state *st)
{
    const struct train_opts *a = t->a;
    long step = st->step;
    int rc = t->rank == 0 ? ckpt_begin(a->ckpt_dir, step) : 0;
    if ((rc = gpu_all_ok(t, rc)))
        return rc;
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    size_t np;
    struct spiece *pc = shard_pieces(t, 1, &np);
    struct ckpt_range *r = piece_ranges(pc, np);
    struct shard_fill f = { t, pc };
    rc = ckpt_write_shard_fill(a->ckpt_dir, step, t->rank, t->W, r, np, fill_shard, &f);
    free(r);
    free(pc);
    if ((rc = gpu_all_ok(t, rc)) == 0)
        rc = write_model(t, step);
    if ((rc = gpu_all_ok(t, rc))) {
        if (t->rank == 0)
            ckpt_abort(a->ckpt_dir, step);
        return rc;
    }
    if (t->rank == 0)
        rc = ckpt_commit(a->ckpt_dir, &a->mc, st, a->config_json, a->optim_json, 1, t->W);
    return gpu_all_ok(t, rc);
}

/* The whole fp32 gradient of the step (after the reduce-scatter, before clipping), laid out
 * like the full model's layout, on every rank: each rank's pieces (the tied embedding's
 * once), summed over ranks (the other ranks contribute zeros, so the sum is exact).
 * Collective. */
int gpu_gather_grads(struct gt *t, float *host)
{
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    memset(host, 0, t->fl.total * sizeof(float));
    size_t np;
    struct spiece *pc = shard_pieces(t, 1, &np);
    for (size_t j = 0; j < np; j++)
        CUDA_CHECK(cudaMemcpy(host + pc[j].full, t->main_grad + pc[j].dev, pc[j].n * sizeof(float),
                              cudaMemcpyDeviceToHost));
    free(pc);
    return sl_world_allreduce_f32(t->w, host, t->fl.total, SL_SUM);
}
