/* The CUDA trainer's backend (train/gpu_train.h, train/train_run.h): device selection,
 * set-up, one optimizer step, validation, checkpoints and release. The driver
 * (train/driver.c) owns the loop, the data, the resume decision and every log line. The
 * model is in gpu_model.c, ZeRO-1 and checkpoints in gpu_zero.c, the input pipeline in
 * gpu_loader.c (shared state: gpu_internal.h).
 *
 * Built only with CUDA, into the GPU library build/libsluice-gpu.so with the rest of the
 * CUDA trainer and kernels/; the sluice binary loads it when training on a GPU
 * (train/gpu_plugin.c), so that no other command pays for loading the CUDA libraries.
 */
#include "train/gpu_train.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/log.h"
#include "core/world.h"
#include "train/gpu_internal.h"
#include "train/schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct sl_world *fatal_world;
static void fatal_hook(void)
{
    if (fatal_world)
        sl_world_abort(fatal_world, 1);
}

static int local_rank(void)
{
    static const char *const vars[] = {
        "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID",
        "MV2_COMM_WORLD_LOCAL_RANK",  "LOCAL_RANK",    NULL
    };
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

int gpu_all_ok(struct gt *t, int rc)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(t->w, &bad, 1, SL_MAX);
    return bad ? (rc ? rc : SL_ERR_STATE) : 0;
}

/* ---- one step ------------------------------------------------------------------------ */

static void read_stats(struct gt *t, double *loss, double *norm)
{
    CUDA_CHECK(cudaEventSynchronize(t->ev_stats));
    double s = 0.0;
    for (long a = 0; a < t->a->accum; a++)
        s += t->h_stats[1 + a];
    /* summed over data parallel, and over tensor parallel (every rank of a group has the same
     * losses) or the pipeline (only the last stage has them) */
    *loss = s / (double)(t->a->accum * t->DP * t->tp);
    *norm = sqrt((double)t->h_stats[0]);
}

/* One step's (or one validation micro-batch's) run through the pipeline schedule
 * (train/schedule.h): the tokens of the step, the loss scale; validation: where its loss
 * goes. */
struct grun {
    struct gt *t;
    const int32_t *tok; /* accum x [tokens N | targets N ...] (validation: one micro-batch) */
    float scale;
    float *eval_loss; /* NULL: training */
};

static const int32_t *run_tokens(const struct grun *r, long a)
{
    return r->tok + (r->eval_loss ? 0 : (size_t)a * r->t->tw * r->t->N);
}

/* A micro-batch's loss: the mean over its positions, or with eod_mask_loss over its
 * unmasked ones (none: 0, no gradient), the classifier's gradient scaled to match. */
static float loss_share(const struct grun *r, long a)
{
    const struct gt *t = r->t;
    if (!t->dm || !t->dm->mask_loss)
        return 1.0f / (float)t->N;
    long kept = r->eval_loss ? t->eval_kept : t->kept[a];
    return kept ? 1.0f / (float)kept : 0.0f;
}

static int run_forward(void *ctx, int c, long a)
{
    struct grun *r = ctx;
    struct gt *t = r->t;
    const int32_t *tok = run_tokens(r, a);
    int s = (int)(a % t->nslots);
    gpu_chunk_fwd(t, c, s, tok);
    if (!gpu_last_virtual(t, c))
        return 0;
    float *loss = r->eval_loss ? r->eval_loss : t->d_stats + 1 + a;
    float share = loss_share(r, a);
    gpu_tp_classifier(t, tok + t->N, r->eval_loss ? 1.0f : r->scale * share * (float)t->N,
                      !r->eval_loss);
    sum_f32(loss, t->losses, (size_t)t->N, share, t->st);
    if (!r->eval_loss)
        gpu_head_bwd(t, s, a);
    return 0;
}

static int run_backward(void *ctx, int c, long a)
{
    struct grun *r = ctx;
    struct gt *t = r->t;
    gpu_chunk_bwd(t, c, (int)(a % t->nslots), run_tokens(r, a), a);
    return 0;
}

/* The sends and receives of one block together on the pipeline's communicator (a forward's
 * output to the next stage, a backward's input gradient to the previous one), ordered on the
 * compute stream: the buffers are the stream's. */
static int run_exchange(void *ctx, const struct pp_work *const *send, int nsend,
                        const struct pp_work *const *recv, int nrecv)
{
    struct grun *r = ctx;
    struct gt *t = r->t;
    int pp = t->par.pp, next = (t->at.pp + 1) % pp, prev = (t->at.pp + pp - 1) % pp;
    size_t n = (size_t)t->R * t->D; /* the residual stream's rows (SP: the rank's) */
    gcomm_group_begin(t->ppc);
    for (int i = 0; i < nsend; i++)
        gcomm_send(t->ppc, send[i]->fwd ? t->xout : t->dxout, n, GCOMM_BF16,
                   send[i]->fwd ? next : prev, t->st);
    for (int i = 0; i < nrecv; i++) {
        const struct pp_work *w = recv[i];
        if (w->fwd)
            gcomm_recv(t->ppc, gpu_chunk_input(t, w->chunk, (int)(w->micro % t->nslots)), n,
                       GCOMM_BF16, prev, t->st);
        else
            gcomm_recv(t->ppc, t->dxin, n, GCOMM_BF16, next, t->st);
    }
    gcomm_group_end(t->ppc);
    return 0;
}

static struct pp_sched gpu_sched(const struct gt *t)
{
    return (struct pp_sched){ t->par.pp, t->at.pp, t->nchunks, t->a->accum };
}

static int gpu_step(void *ctx, struct train_step *s)
{
    struct gt *t = ctx;
    const struct train_opts *a = t->a;
    long T = a->seq_len;
    float scale = (float)(1.0 / ((double)a->micro_batch * T * a->accum * t->DP));
    int rc;
    if (!t->ld.started && (rc = gpu_loader_start(t, s->step - 1, s->consumed_samples))) {
        sl_error("%s", sl_err_msg());
        sl_world_abort(t->w, 1); /* the other ranks would wait in NCCL: stop them */
    }
    int slot = (int)(s->step & 1);
    if ((rc = gpu_loader_take(t, s->step))) {
        sl_error("%s", sl_err_msg());
        sl_world_abort(t->w, 1);
    }
    if (!t->sh.last_stage) /* the losses: the last stage's, summed over the pipeline */
        fill_f32(t->d_stats + 1, 0.0f, (size_t)a->accum, t->st);
    /* the micro-batches through the schedule: 1F1B, interleaved with virtual stages; without
     * a pipeline forward and backward per micro-batch */
    struct grun run = { t, t->d_tok[slot], scale, NULL };
    struct pp_ops ops = { &run, run_forward, run_backward, run_exchange, NULL };
    struct pp_sched sc = gpu_sched(t);
    pp_sched_run(&sc, &ops);
    gpu_tied_reduce(t);
    CUDA_CHECK(cudaEventRecord(t->step_done[slot], t->st));
    gpu_reduce_stats(t);
    if (s->dump_grads) {
        if (!t->dump_host)
            t->dump_host = sl_xmalloc(t->fl.total * sizeof(float));
        rc = gpu_gather_grads(t, t->dump_host);
        if (!rc && t->rank == 0)
            rc = train_dump_grads(s->dump_grads, &a->mc, &t->fl, t->dump_host);
        if ((rc = gpu_all_ok(t, rc)))
            return rc;
    }
    s->have_stats = 0;
    s->applied = 1;
    if (a->on_nan_skip) {
        /* the decision needs the numbers before the update: one wait per step */
        read_stats(t, &s->loss, &s->norm);
        s->have_stats = 1;
        s->applied = isfinite(s->loss) && isfinite(s->norm);
    }
    if (s->applied)
        gpu_optimizer_step(t, s->lr, s->adam_step, (uint64_t)(s->step - 1));
    if (s->want_stats) {
        if (!s->have_stats)
            read_stats(t, &s->loss, &s->norm);
        s->have_stats = 1;
        /* the driver times the steps between its log lines: finish the update first */
        CUDA_CHECK(cudaStreamSynchronize(t->st));
    }
    return 0;
}

static int gpu_evaluate(void *ctx, double *loss)
{
    struct gt *t = ctx;
    const struct train_opts *a = t->a;
    long B = a->micro_batch, T = a->seq_len, N = B * T;
    int32_t *stage = t->h_eval;
    int rc = 0;
    long n = 0;
    /* at ZeRO-3 every forward gathers weights with the other ranks: a rank whose data failed
     * runs on (over token 0) so that the collectives still match, and the error is reported
     * after the loop */
    int go_on = t->zero == 3;
    for (long it = 0; it < a->eval_iters && (!rc || go_on); it++) {
        uint64_t base = (uint64_t)it * (uint64_t)a->global_batch;
        for (long m = 0; m < a->accum && (!rc || go_on); m++, n++) {
            uint64_t first = base + (uint64_t)(m * B * t->DP + t->dpr * B);
            CUDA_CHECK(cudaStreamSynchronize(t->st)); /* the stage is free again */
            t->eval_kept = 0;
            for (long b = 0; b < B && !rc; b++) {
                rc = data_loader_sample(t->data, DATA_VALID, first + (uint64_t)b, t->eval_sample);
                if (!rc)
                    t->eval_kept += gpu_fill_tokens(stage, t->eval_sample, b, T, N, t->dm);
            }
            if (rc && !go_on)
                break;
            if (rc) { /* token 0 everywhere: position 0, its own document */
                memset(stage, 0, (size_t)(t->tw * N) * sizeof(int32_t));
                for (long k = 0; t->dm && k < N; k++)
                    stage[2 * N + k] = stage[3 * N + k] = (int32_t)(k % T);
            }
            CUDA_CHECK(cudaMemcpyAsync(t->d_tok_eval, stage, (size_t)(t->tw * N) * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, t->st));
            struct grun run = { t, t->d_tok_eval, 1.0f, t->d_eval + n };
            struct pp_ops ops = { &run, run_forward, run_backward, run_exchange, NULL };
            struct pp_sched sc = gpu_sched(t);
            if (!t->sh.last_stage)
                fill_f32(t->d_eval + n, 0.0f, 1, t->st);
            pp_sched_forward(&sc, &ops, 0);
        }
    }
    if ((rc = gpu_all_ok(t, rc)))
        return rc;
    if (t->reduce)
        gcomm_all_reduce(t->dpc, t->d_eval, t->d_eval, (size_t)n, GCOMM_F32, GCOMM_SUM, t->st);
    if (t->tp > 1) /* the same losses on every rank of the group: divided below */
        gcomm_all_reduce(t->tpc, t->d_eval, t->d_eval, (size_t)n, GCOMM_F32, GCOMM_SUM, t->st);
    if (t->ppc && n) /* the losses, which only the last stage has */
        gcomm_all_reduce(t->ppc, t->d_eval, t->d_eval, (size_t)n, GCOMM_F32, GCOMM_SUM, t->st);
    float *h = t->h_stats + 1 + a->accum;
    CUDA_CHECK(
        cudaMemcpyAsync(h, t->d_eval, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost, t->st));
    CUDA_CHECK(cudaStreamSynchronize(t->st));
    double sum = 0.0;
    for (long i = 0; i < n; i++)
        sum += h[i];
    *loss = sum / ((double)n * t->DP * t->tp);
    return 0;
}

static int gpu_save(void *ctx, const struct ckpt_state *st)
{
    return gpu_save_checkpoint(ctx, st);
}

/* The full model's weights on world rank 0 (dst NULL elsewhere): its own, or gathered from
 * its model-parallel group. */
static int gpu_params(void *ctx, float *dst)
{
    struct gt *t = ctx;
    if (t->tp == 1)
        return gpu_params_host(t, dst); /* collective at ZeRO-3; dst NULL off rank 0 */
    return gpu_tp_params_full(t, dst);
}

static int gpu_load(void *ctx, const char *from, uint64_t init_seed)
{
    return gpu_load_state(ctx, from, init_seed);
}

/* ---- set-up -------------------------------------------------------------------------- */

#ifdef SL_HAVE_NCCL
#define HAVE_NCCL 1
#else
#define HAVE_NCCL 0
#endif

/* The backend the ranks talk over (train.comm), the same on every rank: `shared` when some
 * rank's local rank has no GPU of its own (ranks on its node >= GPUs there); *why says how it
 * was chosen. auto: NCCL where this build has it and no GPU is shared, else MPI. */
static int choose_comm(struct gt *t, int shared, long per_node, int count, char *why, size_t n)
{
    const char *share = "";
    char buf[96];
    if (shared) {
        snprintf(buf, sizeof(buf), "%ld ranks on a node of %d GPU%s", per_node, count,
                 count > 1 ? "s" : "");
        share = buf;
    }
    switch (t->a->comm) {
    case GPU_COMM_NCCL:
        if (shared)
            return sl_err_set(SL_ERR_STATE,
                              "train.comm=nccl: %s: NCCL needs a GPU of its own for each "
                              "rank\nhint: train.comm=mpi lets ranks share a GPU (host-staged), "
                              "or start one rank per GPU (mpirun -np <GPUs per node> ..., srun "
                              "--ntasks-per-node=<GPUs>)",
                              share);
        if (!HAVE_NCCL && t->W > 1)
            return sl_err_set(SL_ERR_UNSUPPORTED, "train.comm=nccl: this build has no NCCL\n"
                                                  "hint: train.comm=mpi, or install NCCL and "
                                                  "rebuild");
        t->comm_be = GCOMM_NCCL;
        snprintf(why, n, "train.comm=nccl");
        return 0;
    case GPU_COMM_MPI:
        t->comm_be = GCOMM_MPI;
        snprintf(why, n, "train.comm=mpi");
        return 0;
    default:
        t->comm_be = HAVE_NCCL && !shared ? GCOMM_NCCL : GCOMM_MPI;
        snprintf(why, n, "train.comm=auto: %s",
                 !HAVE_NCCL ? "this build has no NCCL"
                 : shared   ? share
                            : "every rank has a GPU of its own");
        return 0;
    }
}

/* This rank's GPU and the backend (collective): local rank r takes GPU r mod GPUs (several
 * ranks share one only with the MPI backend; NCCL refuses). *where: how the ranks are placed
 * and talk, for the log. */
static int setup_device(struct gt *t, char *where, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    int lr = local_rank(), none = e != cudaSuccess || count < 1;
    /* over every rank: some rank has no device; some rank shares one; the most ranks a node */
    int64_t v[3] = { none, !none && lr >= count, lr + 1 };
    int rc = sl_world_allreduce_i64(t->w, v, 3, SL_MAX);
    if (rc)
        return rc;
    if (none)
        return sl_err_set(SL_ERR_STATE,
                          "no CUDA device (%s)\nhint: train.device=auto falls back "
                          "to the CPU",
                          e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    if (v[0])
        return sl_err_set(SL_ERR_STATE, "another rank found no CUDA device");
    char reason[96];
    if ((rc = choose_comm(t, v[1] != 0, (long)v[2], count, reason, sizeof(reason))))
        return rc;
    snprintf(where, n, "%s; communication: %s (%s)",
             v[1] ? "several on a GPU (local rank r on GPU r mod GPUs)" : "one per GPU",
             t->comm_be == GCOMM_MPI ? "MPI, host-staged" : "NCCL", reason);
    t->dev = lr % count;
    CUDA_CHECK(cudaSetDevice(t->dev));
    CUDA_CHECK(cudaGetDeviceProperties(&t->prop, t->dev));
    return 0;
}

static void gpu_release(void *ctx)
{
    struct gt *t = ctx;
    if (!t)
        return;
    gpu_loader_stop(t);
    if (t->st)
        cudaStreamSynchronize(t->st);
    if (t->comm)
        cudaStreamSynchronize(t->comm);
    gcomm_close(t->embc);
    gcomm_close(t->ppc);
    gcomm_close(t->dpc);
    gemm_free(t->gemm);
    if (t->attn)
        attention_free(t->attn);
    if (t->h_stats)
        cudaFreeHost(t->h_stats);
    if (t->h_eval)
        cudaFreeHost(t->h_eval);
    cudaEvent_t evs[11] = { t->ev_grad,        t->ev_comm,        t->ev_stats,      t->step_done[0],
                            t->step_done[1],   t->ev_sfree[0],    t->ev_sfree[1],   t->ev_issue,
                            t->ev_gathered[0], t->ev_gathered[1], t->ev_gathered[2] };
    for (int i = 0; i < 11; i++)
        if (evs[i])
            cudaEventDestroy(evs[i]);
    cudaStream_t sts[3] = { t->st, t->comm, t->copy };
    for (int i = 0; i < 3; i++)
        if (sts[i])
            cudaStreamDestroy(sts[i]);
    if (t->arena)
        cudaFree(t->arena);
    gpu_tp_release(t); /* and the shard, its layout t->l, the groups */
    free(t->slot);
    free(t->doff);
    free(t->tbk);
    free(t->pb);
    free(t->gb);
    free(t->bk);
    free(t->per);
    free(t->eval_sample);
    free(t->dump_host);
    free(t->kept);
    free(t);
    sl_cuda_set_fatal_hook(NULL);
    fatal_world = NULL;
}

static int gpu_setup(void **ctx, const struct train_opts *a, struct sl_world *w,
                     struct data_loader *data, size_t *act_bytes)
{
    struct gt *t = sl_xcalloc(1, sizeof(*t));
    *ctx = t;
    t->a = a;
    t->w = w;
    t->rank = w->rank;
    t->W = w->size;
    t->data = data;
    fatal_world = w;
    sl_cuda_set_fatal_hook(fatal_hook);
    if (a->dump_dir)
        return sl_err_set(SL_ERR_CONFIG, "debug.dump_dir is supported on the CPU path only\n"
                                         "hint: train.device=cpu (train.dump_grads works on both)");
    if (docmask_on(&a->docs)) {
        if (a->docs.reset_attn && a->attention == GPU_ATTN_CUDNN)
            return sl_err_set(SL_ERR_CONFIG,
                              "train.attention=cudnn with data.reset_attention_mask: the "
                              "document mask runs in the own flash kernels' variable-length "
                              "form only\nhint: train.attention=flash (or auto, which takes "
                              "them with this setting)");
        t->dm = &a->docs;
    }
    t->tw = t->dm ? 4 : 2;
    t->kept = sl_xcalloc((size_t)a->accum, sizeof(long));
    static const char *const attn_names[] = { "auto", "cudnn", "flash" };
    static const char *const rc_names[] = { "none", "selective", "full" };
    char where[256];
    int rc = gpu_all_ok(t, setup_device(t, where, sizeof(where)));
    if (rc)
        return rc;
    if (t->rank == 0)
        sl_info("training on the GPU: %s (sm_%d%d, %.0f GiB) x %d rank%s, %s", t->prop.name,
                t->prop.major, t->prop.minor, (double)t->prop.totalGlobalMem / (1u << 30), t->W,
                t->W > 1 ? "s" : "", where);
    if ((rc = gpu_all_ok(t, gpu_tp_layout(t))) || (rc = gpu_all_ok(t, gpu_tp_groups(t))) ||
        (rc = gpu_all_ok(t, gpu_setup_comm(t))) || (rc = gpu_all_ok(t, gpu_setup_model(t))))
        return rc;
    if (t->rank == 0) {
        enum attn_backend be = attention_backend(t->attn, t->B, t->T, t->H, t->Hkv, t->hd);
        int det = attention_is_deterministic(t->attn, t->B, t->T, t->H, t->Hkv, t->hd);
        sl_info("attention: %s, %s backward (train.attention=%s, train.deterministic=%s); "
                "recompute: %s; ZeRO-%d over %d rank%s (%zu parameters per shard)",
                be == ATTN_CUDNN ? "cuDNN fused flash attention" : "own flash-attention kernels",
                det ? "deterministic" : "non-deterministic", attn_names[a->attention],
                a->deterministic ? "true" : "false", rc_names[a->recompute], t->zero, t->DP,
                t->DP > 1 ? "s" : "", t->shard_n);
        if (t->tp > 1)
            sl_info("tensor parallel over %d ranks%s: %d of %d heads (%d of %d KV heads), %d of "
                    "%d FFN columns and %d of %d vocabulary rows a rank (column- and "
                    "row-parallel layers, vocab-parallel embedding and cross-entropy)",
                    t->tp, t->sp ? " with sequence parallel" : "", t->H, a->mc.n_heads, t->Hkv,
                    a->mc.n_kv_heads, t->F, a->mc.d_ff, t->Vp, a->mc.padded_vocab_size);
        if (a->deterministic && !det)
            sl_warn("train.deterministic=true: cuDNN has no deterministic backward engine for "
                    "attention at batch %d x %d tokens, %d/%d heads of %d; its backward sums dQ "
                    "with atomics, so runs are not bit-identical\nhint: train.attention=flash "
                    "(own kernels, deterministic)",
                    t->B, t->T, t->H, t->Hkv, t->hd);
    }
    *act_bytes = t->mem[MEM_ACTS];
    return 0;
}

static const struct train_backend gpu_backend = {
    .name = "cuda",
    .setup = gpu_setup,
    .load = gpu_load,
    .step = gpu_step,
    .evaluate = gpu_evaluate,
    .params_host = gpu_params,
    .save = gpu_save,
    .release = gpu_release,
};

static int device_node_present(void)
{
    struct stat sb;
    return stat("/dev/nvidia0", &sb) == 0 || stat("/proc/driver/nvidia/gpus", &sb) == 0;
}

const struct train_backend *sl_gpu_plugin_backend(char *why, size_t n)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count > 0) {
        why[0] = 0;
        return &gpu_backend;
    }
    const char *err = e != cudaSuccess ? cudaGetErrorString(e) : "it finds none";
    cudaGetLastError(); /* clear it */
    /* "no CUDA device" only where there is none: with a device node, CUDA failing to see the
     * GPU (an old driver, a broken installation) is an error of its own */
    if (device_node_present())
        snprintf(why, n, "a GPU is present but CUDA cannot use it (cudaGetDeviceCount: %s)", err);
    else
        snprintf(why, n, "no CUDA device (cudaGetDeviceCount: %s)", err);
    return NULL;
}
