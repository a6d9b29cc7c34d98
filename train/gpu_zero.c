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

int gpu_setup_comm(struct gt *t)
{
#ifdef SL_HAVE_NCCL
    t->reduce = 1;
#else
    t->reduce = t->W > 1;
    if (t->W > 1)
        return sl_err_set(SL_ERR_UNSUPPORTED, "this build has no NCCL: the GPU trainer runs "
                                              "one rank only\nhint: install NCCL and rebuild");
#endif
    return gcomm_open(&t->dpc, GCOMM_NCCL, t->w);
}

/* Bucket k's gradient of micro-step m (of accum) is complete in t->grads (bf16): add it to
 * the fp32 step gradient t->main_grad (written on the first micro-step), once per bucket and
 * micro-step, so that micro-batches are summed in fp32 whatever their number. After the last
 * micro-step, reduce-scatter the bucket on the communication stream (sum over ranks; each
 * rank keeps its slice, in place): in fp32 (train.grad_reduce_dtype=fp32, the default), or
 * cast once to bf16, reduced in bf16 (half the traffic) and the slice widened back. */
void gpu_bucket_done(struct gt *t, int k, long m)
{
    const struct gbucket *b = &t->bk[k];
    if (!b->len)
        return;
    grad_accumulate_f32(t->main_grad + b->dev, t->grads + b->dev, b->len, m == 0, t->st);
    if (m != t->a->accum - 1 || !t->reduce)
        return;
    size_t cnt = b->len / (size_t)t->W;
    size_t mine = b->dev + (size_t)t->rank * cnt;
    if (t->a->grad_reduce == GPU_REDUCE_BF16)
        cast_f32_to_bf16(t->grads + b->dev, t->main_grad + b->dev, b->len, t->st);
    CUDA_CHECK(cudaEventRecord(t->ev_grad, t->st));
    CUDA_CHECK(cudaStreamWaitEvent(t->comm, t->ev_grad, 0));
    if (t->a->grad_reduce == GPU_REDUCE_BF16) {
        gcomm_reduce_scatter(t->dpc, t->grads + b->dev, t->grads + mine, cnt, GCOMM_BF16,
                             t->comm);
        cast_bf16_to_f32(t->main_grad + mine, t->grads + mine, cnt, t->comm);
    } else {
        gcomm_reduce_scatter(t->dpc, t->main_grad + b->dev, t->main_grad + mine, cnt, GCOMM_F32,
                             t->comm);
    }
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
        if (!cnt)
            continue;
        global_norm_sq_f32(t->d_stats, t->gn_scratch, t->main_grad + d0, cnt, !first, t->st);
        first = 0;
    }
    if (first)
        fill_f32(t->d_stats, 0.0f, 1, t->st);
    if (t->reduce)
        gcomm_all_reduce(t->dpc, t->d_stats, t->d_stats, (size_t)(1 + t->a->accum), GCOMM_F32,
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

/* The ranges of the layout this rank's shard covers (bucket slices; empty ones have n 0). */
static struct ckpt_range *shard_ranges(struct gt *t)
{
    struct ckpt_range *r = sl_xcalloc((size_t)t->nbk, sizeof(*r));
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        r[k].first = l0;
        r[k].n = nl;
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
    struct ckpt_range *r = shard_ranges(t);
    float **dst = sl_xcalloc((size_t)t->nbk, sizeof(float *));
    for (int k = 0; k < t->nbk; k++)
        dst[k] = host + t->bk[k].shard;
    float *dev[3] = { t->master, t->m, t->v };
    static const enum ckpt_part parts[3] = { CKPT_PARAMS, CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };
    int rc = 0;
    for (int p = 0; p < 3 && !rc; p++) {
        memset(host, 0, n * sizeof(float)); /* the padding of every slice stays 0 */
        if (from) {
            rc = ckpt_read_ranges(from, &t->l, parts[p], r, (size_t)t->nbk, dst);
        } else if (p == 0) {
            float *slab = malloc(t->l.total * sizeof(float));
            if (!slab) {
                rc = sl_err_set(SL_ERR_NOMEM,
                                "cannot allocate %zu MiB of host memory for the initial weights",
                                t->l.total * sizeof(float) >> 20);
            } else {
                model_init_params(&t->a->mc, &t->l, slab, init_seed);
                for (int k = 0; k < t->nbk; k++)
                    if (r[k].n)
                        memcpy(dst[k], slab + r[k].first, r[k].n * sizeof(float));
                free(slab);
            }
        } /* fresh moments: zeros */
        /* pageable: returns when the host buffer may be reused */
        if (!rc)
            CUDA_CHECK(cudaMemcpy(dev[p], host, n * sizeof(float), cudaMemcpyHostToDevice));
    }
    free(dst);
    free(r);
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

int gpu_params_host(struct gt *t, float *dst)
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
    for (int i = 0; i < t->l.n && !rc; i++)
        rc = fill_model(&f, (size_t)i, dst + t->l.t[i].offset, t->l.t[i].numel * sizeof(float));
    free(f.bits);
    return rc;
}

/* Tensor i of this rank's optimizer shard: for each bucket slice with parameters in order,
 * its master weights, exp_avg and exp_avg_sq (ckpt_write_shard_fill's order). */
struct shard_fill {
    struct gt *t;
    int *bucket; /* file tensor / 3 -> bucket */
};

static int fill_shard(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct shard_fill *f = arg;
    struct gt *t = f->t;
    int k = f->bucket[i / 3];
    const float *src[3] = { t->master, t->m, t->v };
    size_t d0, cnt, l0, nl;
    gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
    if (nbytes != nl * sizeof(float))
        return sl_err_set(SL_ERR_STATE, "checkpoint: shard slice %d has %zu bytes, expected %zu", k,
                          nbytes, nl * sizeof(float));
    CUDA_CHECK(cudaMemcpy(buf, src[i % 3] + t->bk[k].shard, nbytes, cudaMemcpyDeviceToHost));
    return 0;
}

/* Every rank writes its optimizer shard, rank 0 also model.safetensors, one tensor at a time:
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
    struct ckpt_range *r = sl_xcalloc((size_t)t->nbk, sizeof(*r));
    struct shard_fill f = { t, sl_xcalloc((size_t)t->nbk + 1, sizeof(int)) };
    int nf = 0;
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        r[k].first = l0;
        r[k].n = nl;
        if (nl)
            f.bucket[nf++] = k;
    }
    rc = ckpt_write_shard_fill(a->ckpt_dir, step, t->rank, t->W, r, (size_t)t->nbk, fill_shard, &f);
    free(r);
    free(f.bucket);
    if (!rc && t->rank == 0) {
        size_t most = 0;
        for (int i = 0; i < t->l.n; i++)
            most = t->l.t[i].numel > most ? t->l.t[i].numel : most;
        struct model_fill mf = { t, malloc((most + 1) * sizeof(uint16_t)) };
        if (!mf.bits)
            rc = sl_err_set(SL_ERR_NOMEM,
                            "cannot allocate %zu MiB of host memory for the "
                            "checkpoint",
                            most * sizeof(uint16_t) >> 20);
        else
            rc = ckpt_write_model_fill(a->ckpt_dir, step, &t->l, fill_model, &mf);
        free(mf.bits);
    }
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
 * like the layout, on every rank: each rank's slices, summed over ranks (the other ranks
 * contribute zeros, so the sum is exact). Collective. */
int gpu_gather_grads(struct gt *t, float *host)
{
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    memset(host, 0, t->l.total * sizeof(float));
    for (int k = 0; k < t->nbk; k++) {
        size_t d0, cnt, l0, nl;
        gpu_slice_of(t, k, &d0, &cnt, &l0, &nl);
        if (nl)
            CUDA_CHECK(cudaMemcpy(host + l0, t->main_grad + d0, nl * sizeof(float),
                                  cudaMemcpyDeviceToHost));
    }
    return sl_world_allreduce_f32(t->w, host, t->l.total, SL_SUM);
}
