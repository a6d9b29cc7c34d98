/* The CUDA trainer's data parallelism over the communicator of train/gpu_comm.h, ZeRO-1, 2
 * and 3: per-bucket reduce-scatter of the gradient, the global norm, the sharded AdamW step
 * and the parameter all-gather (ZeRO-3: where each bucket is used); the sharded state in and
 * out of checkpoints.
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
    /* data parallel over the ranks with the same tensor-parallel coordinate; the
     * tensor-parallel communicator next, with the same backend (every rank opens its
     * communicators in the same order) */
    int rc;
    if ((rc = gcomm_open(&t->dpc, t->comm_be, &t->dpg)) || (rc = gpu_tp_open(t, t->comm_be)))
        return rc;
    if (t->par.pp > 1 && (rc = gcomm_open(&t->ppc, t->comm_be, &t->ppg)))
        return rc;
    if (t->embg.size > 1 && (rc = gcomm_open(&t->embc, t->comm_be, &t->embg)))
        return rc;
    return 0;
}

/* ---- the collectives over the data-parallel ranks -------------------------------------- */

/* Reduce-scatter (sum) count x W elements of send into count elements of recv, or all-gather
 * count elements of send into count x W of recv, on stream s (one rank: a copy). */
static void dp_reduce_scatter(struct gt *t, const void *send, void *recv, size_t count, int bf16,
                              cudaStream_t s)
{
    gcomm_reduce_scatter(t->dpc, send, recv, count, bf16 ? GCOMM_BF16 : GCOMM_F32, s);
}

static void dp_all_gather_bf16(struct gt *t, const sl_bf16 *send, sl_bf16 *recv, size_t count,
                               cudaStream_t s)
{
    gcomm_all_gather(t->dpc, send, recv, count, GCOMM_BF16, s);
}

/* ---- the gradient: ZeRO-1, ZeRO-2/3 ------------------------------------------------------ */

float *gpu_grad_slice(const struct gt *t, int k)
{
    const struct gbucket *b = &t->bk[k];
    if (t->zero >= 2)
        return t->sgrad + b->shard;
    return t->main_grad + b->dev + (size_t)t->dpr * (b->len / (size_t)t->DP);
}

/* ZeRO-2/3. Every micro-step, bucket k's bf16 gradient (t->gb[k]) is widened on t->st into a
 * staging buffer (copied as it is with train.grad_reduce_dtype=bf16), which frees the
 * gradient buffer for the next micro-batch or layer; the communication stream then
 * reduce-scatters the staging buffer and adds this rank's slice to the fp32 shard gradient
 * (written on the first micro-step): sum over ranks per micro-batch, then over micro-batches
 * (DeepSpeed's ZeRO-2 order). Two staging buffers alternate: a bucket's widening waits only
 * for the reduction two buckets back, and the backward of the next bucket runs meanwhile. */
static void bucket_done_z23(struct gt *t, int k, long m)
{
    const struct gbucket *b = &t->bk[k];
    size_t cnt = b->len / (size_t)t->DP, off = (size_t)t->dpr * cnt;
    int x = t->sslot;
    t->sslot ^= 1;
    float *dst = t->sgrad + b->shard;
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_sfree[x], 0));
    if (t->a->grad_reduce == GPU_REDUCE_BF16)
        copy_bf16((sl_bf16 *)t->stage[x], t->gb[k], b->len, t->st);
    else
        grad_accumulate_f32(t->stage[x], t->gb[k], b->len, 1, t->st);
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    if (t->a->grad_reduce == GPU_REDUCE_BF16) {
        sl_bf16 *h = (sl_bf16 *)t->stage[x];
        dp_reduce_scatter(t, h, h + off, cnt, 1, t->comm);
        grad_accumulate_f32(dst, h + off, cnt, m == 0, t->comm);
    } else if (m == 0) {
        dp_reduce_scatter(t, t->stage[x], dst, cnt, 0, t->comm);
    } else {
        dp_reduce_scatter(t, t->stage[x], t->stage[x] + off, cnt, 0, t->comm);
        add_f32(dst, dst, t->stage[x] + off, cnt, t->comm);
    }
    CUDA_CHECK(cudaEventRecord(t->ev_sfree[x], t->comm));
}

/* Reduce-scatter bucket k's step gradient over data parallel on the communication stream
 * (sum over ranks; each rank keeps its slice, in place): in fp32
 * (train.grad_reduce_dtype=fp32, the default), or cast once to bf16, reduced in bf16 (half
 * the traffic) and the slice widened back. */
static void reduce_bucket(struct gt *t, int k)
{
    const struct gbucket *b = &t->bk[k];
    size_t cnt = b->len / (size_t)t->DP;
    size_t mine = b->dev + (size_t)t->dpr * cnt;
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

/* ZeRO-2/3: each end has reduce-scattered its bucket 0 over data parallel every micro-step
 * (bucket_done_z23), into its shard gradient. The two ends' buckets differ (the first
 * stage's holds the learned positions too, and the padding follows the length), so a
 * rank's slices do not cover the same elements of the embedding: the bucket's reduced
 * gradient is all-gathered whole into staging buffer 0 on the communication stream, the
 * embedding summed over the two ends there, and the rank's slice copied back. fp32 sums in
 * another order than ZeRO-1's (the micro-batches and ranks of each end, then the ends). */
static void tied_reduce_z23(struct gt *t)
{
    const struct gbucket *b = &t->bk[0];
    size_t cnt = b->len / (size_t)t->DP, e0 = t->doff[t->l.embed] - b->dev;
    float *whole = t->stage[0];
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    gcomm_all_gather(t->dpc, t->sgrad + b->shard, whole, cnt, GCOMM_F32, t->comm);
    gcomm_all_reduce(t->embc, whole + e0, whole + e0, t->l.t[t->l.embed].numel, GCOMM_F32,
                     GCOMM_SUM, t->comm);
    CUDA_CHECK(cudaMemcpyAsync(t->sgrad + b->shard, whole + (size_t)t->dpr * cnt,
                               cnt * sizeof(float), cudaMemcpyDeviceToDevice, t->comm));
    CUDA_CHECK(cudaEventRecord(t->ev_sfree[0], t->comm));
}

void gpu_tied_reduce(struct gt *t)
{
    if (!t->embc || !t->bk[0].len)
        return;
    if (t->zero >= 2) {
        tied_reduce_z23(t);
        return;
    }
    const struct model_tensor *e = &t->l.t[t->l.embed];
    float *g = t->main_grad + t->doff[t->l.embed];
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    gcomm_all_reduce(t->embc, g, g, e->numel, GCOMM_F32, GCOMM_SUM, t->comm);
    CUDA_CHECK(cudaEventRecord(t->ev_comm, t->comm));
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_comm, 0));
    reduce_bucket(t, 0);
}

/* ZeRO-1. Bucket k's gradient of micro-step m (of accum) is complete in t->grads (bf16): add
 * it to the fp32 step gradient t->main_grad (written on the first micro-step), once per
 * bucket and micro-step, so that micro-batches are summed in fp32 whatever their number.
 * After the last micro-step, reduce-scatter the bucket on the communication stream (sum over
 * ranks; each rank keeps its slice, in place): in fp32 (train.grad_reduce_dtype=fp32, the
 * default), or cast once to bf16, reduced in bf16 (half the traffic) and the slice widened
 * back. */
static void bucket_done_z1(struct gt *t, int k, long m)
{
    const struct gbucket *b = &t->bk[k];
    grad_accumulate_f32(t->main_grad + b->dev, t->grads + b->dev, b->len, m == 0, t->st);
    /* the tied embedding's bucket waits for the other end's (gpu_tied_reduce): summing it
     * here would stop this stage's pipeline until the other end finished its backward */
    if (m != t->a->accum - 1 || !t->reduce || (k == 0 && t->embc))
        return;
    reduce_bucket(t, k);
}

void gpu_bucket_done(struct gt *t, int k, long m)
{
    if (!t->bk[k].len)
        return;
    if (t->zero >= 2)
        bucket_done_z23(t, k, m);
    else
        bucket_done_z1(t, k, m);
}

/* ---- ZeRO-3: the weights gathered where they are used -------------------------------- */

/* All-gather bucket k's bf16 shard into dst on the communication stream, after everything
 * t->st has been given so far (the optimizer step that wrote the shard, the last use of
 * dst); *ev (when not NULL) is recorded when it is done. */
static void z3_gather(struct gt *t, int k, sl_bf16 *dst, const cudaEvent_t *ev)
{
    const struct gbucket *b = &t->bk[k];
    CUDA_CHECK(cudaEventRecord(t->ev_issue, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_issue, 0));
    if (b->len)
        dp_all_gather_bf16(t, t->pshard + b->shard, dst, b->len / (size_t)t->DP, t->comm);
    if (ev)
        CUDA_CHECK(cudaEventRecord(*ev, t->comm));
}

void gpu_z3_outer(struct gt *t)
{
    if (t->zero < 3 || t->outer_ok)
        return;
    z3_gather(t, 0, t->pouter[0], NULL);
    z3_gather(t, t->L + 1, t->pouter[1], &t->ev_gathered[2]);
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_gathered[2], 0));
    t->outer_ok = 1;
}

static int z3_slot_of(const struct gt *t, int li)
{
    return t->lp_layer[0] == li ? 0 : t->lp_layer[1] == li ? 1 : -1;
}

/* A layer still in a slot (the last layer of the forward, which the backward takes first;
 * a prefetched one) is not gathered again; the optimizer step empties the slots. */
void gpu_z3_layer(struct gt *t, int li, int next)
{
    if (t->zero < 3)
        return;
    int x = z3_slot_of(t, li);
    if (x < 0) {
        x = t->lp_layer[0] == -1 ? 0 : t->lp_layer[1] == -1 ? 1 : 1 - t->lp_cur;
        t->lp_layer[x] = li;
        z3_gather(t, 1 + li, t->lp[x], &t->ev_gathered[x]);
    }
    CUDA_CHECK(cudaStreamWaitEvent(t->st, t->ev_gathered[x], 0));
    t->lp_cur = x;
    t->pb[1 + li] = t->lp[x];
    if (next >= 0 && z3_slot_of(t, next) < 0) {
        /* the other slot; its last use is already on t->st, which the gather waits for */
        t->lp_layer[1 - x] = next;
        z3_gather(t, 1 + next, t->lp[1 - x], &t->ev_gathered[1 - x]);
    }
}

/* Layer li's gradient into the slot of its parity: the layer two back used it last, and its
 * widening into a staging buffer is already on t->st. */
void gpu_z3_grad(struct gt *t, int li)
{
    if (t->zero < 3)
        return;
    sl_bf16 *g = t->lg[li & 1];
    CUDA_CHECK(cudaMemsetAsync(g, 0, t->bk[1 + li].len * sizeof(sl_bf16), t->st));
    t->gb[1 + li] = g;
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
    for (int k = 0; t->tp == 1 && k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (!cnt || (k == 0 && t->embc && !t->sh.first_stage)) /* the tied copy: counted once */
            continue;
        global_norm_sq_f32(t->d_stats, t->gn_scratch, gpu_grad_slice(t, k), cnt, !first, t->st);
        first = 0;
    }
    if (t->tp > 1)
        gpu_tp_norm_sq(t); /* each tensor once: its owner's */
    else if (first)
        fill_f32(t->d_stats, 0.0f, 1, t->st);
    if (t->reduce)
        gcomm_all_reduce(t->dpc, t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), GCOMM_F32,
                         GCOMM_SUM, t->st);
    /* and over the tensor-parallel group: the sums over the world (every rank of a group
     * has the same losses: read_stats divides by the world size) */
    if (t->tp > 1)
        gcomm_all_reduce(t->tpc, t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), GCOMM_F32,
                         GCOMM_SUM, t->st);
    if (t->ppc) /* the stages' norms; the losses, which only the last stage has */
        gcomm_all_reduce(t->ppc, t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), GCOMM_F32,
                         GCOMM_SUM, t->st);
    CUDA_CHECK(cudaMemcpyAsync(t->h_stats, t->d_stats, (size_t)(1 + t->a->accum) * sizeof(float),
                               cudaMemcpyDeviceToHost, t->st));
    CUDA_CHECK(cudaEventRecord(t->ev_stats, t->st));
}

/* This rank's bf16 weights of bucket k's slice (written by the optimizer step). */
static sl_bf16 *param_slice(const struct gt *t, int k)
{
    const struct gbucket *b = &t->bk[k];
    if (t->zero == 3)
        return t->pshard + b->shard;
    return t->params + b->dev + (size_t)t->dpr * (b->len / (size_t)t->DP);
}

/* Cast this rank's master slices to the bf16 working copy (cast) and all-gather the
 * parameters: below ZeRO-3 now, at ZeRO-3 where each bucket is used (the slots and the
 * outer buckets are stale from here on). */
static void gather_params(struct gt *t, int cast)
{
    for (int k = 0; cast && k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (cnt)
            cast_f32_to_bf16(param_slice(t, k), t->master + t->bk[k].shard, cnt, t->st);
    }
    if (t->zero == 3) {
        t->lp_layer[0] = t->lp_layer[1] = -1;
        t->outer_ok = 0;
        return;
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
        adamw_update_f32(param_slice(t, k), gpu_grad_slice(t, k), t->master + s0, t->m + s0,
                         t->v + s0, (int64_t)cnt, (int64_t)d0, t->d_tensors, t->ntensors, &hp,
                         t->st);
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
    /* tensor parallel: every bucket's slice as a range of the local layout */
    struct ckpt_range *rl = sl_xcalloc((size_t)t->nbk, sizeof(*rl));
    float **dl = sl_xcalloc((size_t)t->nbk, sizeof(float *));
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt;
        gpu_slice_of(t, k, &d0, &cnt, &rl[k].first, &rl[k].n);
        dl[k] = host + t->bk[k].shard;
    }
    float *dev[3] = { t->master, t->m, t->v };
    static const enum ckpt_part parts[3] = { CKPT_PARAMS, CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };
    int rc = 0;
    for (int p = 0; p < 3 && !rc; p++) {
        memset(host, 0, n * sizeof(float)); /* the padding of every slice stays 0 */
        if (t->tp > 1) {
            rc = gpu_tp_read_part(t, from, parts[p], init_seed, rl, (size_t)t->nbk, dl);
        } else if (from) {
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
    free(rl);
    free(dl);
    free(host);
    if (rc)
        return rc;
    /* a pageable cudaMemcpy may return before its DMA is done, and our streams do not wait
     * for the legacy stream */
    CUDA_CHECK(cudaDeviceSynchronize());
    if (t->params)
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
    uint16_t *all;  /* ZeRO-3: every weight's bf16 bits, laid out by t->l (z3_host_bits) */
};

/* ZeRO-3, collective: every bucket gathered in turn into a staging buffer (the step is over:
 * they are free) and, on rank 0, copied into bits[l.total] (NULL elsewhere). */
static void z3_host_bits(struct gt *t, uint16_t *bits)
{
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    CUDA_CHECK(cudaStreamSynchronize(t->comm));
    sl_bf16 *buf = (sl_bf16 *)t->stage[0];
    for (int k = 0; k < t->nbk; k++) {
        const struct gbucket *b = &t->bk[k];
        if (!b->len)
            continue;
        z3_gather(t, k, buf, NULL);
        CUDA_CHECK(cudaStreamSynchronize(t->comm));
        if (bits)
            CUDA_CHECK(cudaMemcpy(bits + b->la, buf, (b->lb - b->la) * sizeof(uint16_t),
                                  cudaMemcpyDeviceToHost));
    }
}

/* z3_host_bits into a new buffer on the ranks that want it (NULL elsewhere); rc on failure
 * to allocate */
static int z3_host_alloc(struct gt *t, int want, uint16_t **bits)
{
    *bits = NULL;
    int rc = 0;
    if (want && !(*bits = malloc(t->l.total * sizeof(uint16_t) + 1)))
        rc = sl_err_set(SL_ERR_NOMEM,
                        "cannot allocate %zu MiB of host memory for the gathered weights",
                        t->l.total * sizeof(uint16_t) >> 20);
    if ((rc = gpu_all_ok(t, rc))) {
        free(*bits);
        *bits = NULL;
        return rc;
    }
    z3_host_bits(t, *bits);
    return 0;
}

static int fill_model(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct model_fill *f = arg;
    struct gt *t = f->t;
    const struct model_tensor *mt = &t->l.t[i];
    if (nbytes != mt->numel * sizeof(float))
        return sl_err_set(SL_ERR_STATE, "checkpoint: tensor '%s' has %zu bytes, expected %zu",
                          mt->name, nbytes, mt->numel * sizeof(float));
    const uint16_t *bits = f->all ? f->all + mt->offset : f->bits;
    if (!f->all)
        CUDA_CHECK(cudaMemcpy(f->bits, t->params + t->doff[i], mt->numel * sizeof(uint16_t),
                              cudaMemcpyDeviceToHost));
    uint32_t *out = buf;
    for (size_t k = 0; k < mt->numel; k++)
        out[k] = (uint32_t)bits[k] << 16;
    return 0;
}

/* The local tensors widened into dst, laid out by the local layout, or with place by the full
 * one (the owned ones only). */
static int widen_params(struct gt *t, float *dst, int place)
{
    if (t->zero == 3) {
        uint16_t *all;
        int rc = z3_host_alloc(t, dst != NULL, &all);
        if (rc || !dst) {
            free(all);
            return rc;
        }
        uint32_t *out = (uint32_t *)dst;
        for (size_t i = 0; !place && i < t->l.total; i++)
            out[i] = (uint32_t)all[i] << 16;
        for (int i = 0; place && i < t->l.n; i++) { /* a stage's owned tensors */
            const struct tensor_shard *x = &t->sh.t[i];
            const struct model_tensor *lt = &t->l.t[i];
            if (x->full < 0 || !x->owner)
                continue;
            uint32_t *o = out + t->fl.t[x->full].offset;
            for (size_t k = 0; k < lt->numel; k++)
                o[k] = (uint32_t)all[lt->offset + k] << 16;
        }
        free(all);
        return 0;
    }
    if (!dst) /* a rank other than 0: every rank holds the whole model */
        return 0;
    size_t most = 0;
    for (int i = 0; i < t->l.n; i++)
        most = t->l.t[i].numel > most ? t->l.t[i].numel : most;
    struct model_fill f = { t, malloc((most + 1) * sizeof(uint16_t)), NULL };
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

int gpu_params_local(struct gt *t, float *dst)
{
    return widen_params(t, dst, 0);
}

int gpu_params_host(struct gt *t, float *dst)
{
    if (t->par.pp == 1)
        return widen_params(t, dst, 0); /* collective at ZeRO-3; dst NULL off rank 0 */
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
static int write_model(struct gt *t, long step, uint16_t *all)
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
    struct model_fill mf = { t, malloc((most + 1) * sizeof(uint16_t)), all };
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
 * or the shard (for Llama-3-8B on one rank: 3 GB instead of about 144 GB). At ZeRO-3 rank 0
 * holds the gathered bf16 weights (2 bytes a parameter) while writing the model. */
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
    if (t->tp > 1)
        rc = gpu_tp_write_shard(t, step);
    else
        rc = ckpt_write_shard_fill(a->ckpt_dir, step, t->rank, t->W, r, np, fill_shard, &f);
    free(r);
    free(pc);
    uint16_t *all = NULL;
    /* (tensor or pipeline parallel: the model goes through gpu_params_host) */
    if (t->zero == 3 && t->tp == 1 && t->par.pp == 1 && (rc = gpu_all_ok(t, rc)) == 0)
        rc = z3_host_alloc(t, t->rank == 0, &all);
    if ((rc = gpu_all_ok(t, rc)) == 0)
        rc = t->tp > 1 ? gpu_tp_write_model(t, step) : write_model(t, step, all);
    free(all);
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
    if (t->tp > 1) {
        /* this rank's layout, summed over its data-parallel group, then gathered to the full
         * model's on rank 0 */
        float *local = sl_xmalloc((t->l.total + 1) * sizeof(float));
        memset(local, 0, t->l.total * sizeof(float));
        for (int k = 0; k < t->nbk; k++) {
            size_t d0, cnt, l0, nl;
            gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
            if (nl)
                CUDA_CHECK(cudaMemcpy(local + l0, gpu_grad_slice(t, k), nl * sizeof(float),
                                      cudaMemcpyDeviceToHost));
        }
        int rc = sl_world_allreduce_f32(&t->dpg, local, t->l.total, SL_SUM);
        if (!rc)
            rc = gpu_tp_gather_full(t, local, t->rank == 0 ? host : NULL);
        free(local);
        return rc;
    }
    /* each rank's pieces of the full layout, summed over the world */
    memset(host, 0, t->fl.total * sizeof(float));
    size_t np;
    struct spiece *pc = shard_pieces(t, 1, &np);
    for (size_t j = 0; j < np; j++) {
        const float *g = t->zero >= 2 ? t->sgrad + pc[j].shard : t->main_grad + pc[j].dev;
        CUDA_CHECK(
            cudaMemcpy(host + pc[j].full, g, pc[j].n * sizeof(float), cudaMemcpyDeviceToHost));
    }
    free(pc);
    return sl_world_allreduce_f32(t->w, host, t->fl.total, SL_SUM);
}
