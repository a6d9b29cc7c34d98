/* The CUDA trainer (train/gpu_train.h): device selection, set-up, the training loop with
 * its log lines (those of the CPU path, train/train_cmd.c), validation and the run's
 * lifecycle. The model is in gpu_model.c, ZeRO-1 and checkpoints in gpu_zero.c, the input
 * pipeline in gpu_loader.c (shared state: gpu_internal.h).
 *
 * Built only with CUDA, into the GPU library build/libsluice-gpu.so with the rest of the
 * CUDA trainer and kernels/; the sluice binary loads it when training on a GPU
 * (train/gpu_plugin.c), so that no other command pays for loading the CUDA libraries.
 */
#include "train/gpu_train.h"

#include "core/err.h"
#include "core/log.h"

#include <stdio.h>


#include "core/alloc.h"
#include "core/buf.h"
#include "core/progress.h"
#include "core/world.h"
#include "train/gpu_internal.h"
#include "train/trainlog.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int sl_gpu_plugin_available(char *why, size_t n)
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

/* ---- the loop ------------------------------------------------------------------------ */

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
    CUDA_CHECK(
        cudaHostAlloc((void **)&stage, (size_t)(2 * N) * sizeof(int32_t), cudaHostAllocDefault));
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
                    gpu_fill_tokens(stage, sample, b, T, N);
            }
            if (rc)
                break;
            CUDA_CHECK(cudaMemcpyAsync(t->d_tok_eval, stage, (size_t)(2 * N) * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, t->st));
            gpu_model_fwd(t, t->d_tok_eval);
            classifier_fwd_bwd(t->losses, t->logits, t->d_tok_eval + N, t->N, t->V, t->Vp, 1.0f, 0,
                               t->st);
            sum_f32(t->d_eval + n, t->losses, (size_t)t->N, 1.0f / (float)t->N, t->st);
        }
    }
    if (rc)
        sl_error("validation failed: %s", sl_err_msg());
    rc = gpu_all_ok(t, rc);
    if (!rc) {
#ifdef SL_HAVE_NCCL
        NCCL_CHECK(
            ncclAllReduce(t->d_eval, t->d_eval, (size_t)n, ncclFloat, ncclSum, t->nccl, t->st));
#endif
        float *h = t->h_stats + 1 + a->accum;
        CUDA_CHECK(cudaMemcpyAsync(h, t->d_eval, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost,
                                   t->st));
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
        if ((rc = gpu_loader_take(t, step))) {
            sl_error("%s", sl_err_msg());
            sl_world_abort(t->w, 1); /* the other ranks wait in NCCL: stop them */
        }
        CUDA_CHECK(cudaMemsetAsync(t->grads, 0, t->dtotal * sizeof(sl_bf16), t->st));
        for (long m = 0; m < a->accum; m++) {
            const int32_t *tok = t->d_tok[slot] + (size_t)m * 2 * t->N;
            gpu_model_fwd(t, tok);
            classifier_fwd_bwd(t->losses, t->logits, tok + t->N, t->N, t->V, t->Vp, scale, 1,
                               t->st);
            sum_f32(t->d_stats + 1 + m, t->losses, (size_t)t->N, 1.0f / (float)t->N, t->st);
            gpu_model_bwd(t, tok, m == a->accum - 1);
        }
        CUDA_CHECK(cudaEventRecord(t->step_done[slot], t->st));
        gpu_reduce_stats(t);
        double lr = lr_at(&a->lr, step);
        int logged = step % a->log_interval == 0 || step == a->steps;
        int saving =
            a->ckpt_dir && ((a->ckpt_interval && step % a->ckpt_interval == 0) || step == a->steps);
        double loss = NAN, norm = NAN;
        int finite = 1;
        if (a->on_nan_skip) {
            /* the decision needs the numbers before the update: one wait per step */
            read_stats(t, &loss, &norm);
            finite = isfinite(loss) && isfinite(norm);
        }
        if (finite) {
            t->cs.adam_step++;
            gpu_optimizer_step(t, lr);
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
                struct train_step_report r = {
                    .step = step, .steps = a->steps, .consumed_samples = t->cs.consumed_samples,
                    .loss = loss, .lr = lr, .grad_norm = norm, .step_time_s = dt,
                    .tokens_per_s = tok_s, .tflops_per_rank = tflops, .mfu = mfu,
                    .skipped = !finite,
                };
                train_report_step(t->log, t->tlog, &r);
            }
        }
        if (a->eval_interval && (step % a->eval_interval == 0 || step == a->steps)) {
            double vl;
            if ((rc = evaluate(t, &vl)))
                return rc;
            if (t->rank == 0)
                train_report_valid(t->log, t->tlog, step, vl);
            t_last = sl_now(); /* validation is not step time */
        }
        if (saving) {
            if ((rc = gpu_save_checkpoint(t)))
                return rc;
            if (train_log_plot(t->tlog))
                sl_warn("loss plot: %s", sl_err_msg());
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

static int open_data(struct gt *t)
{
    const struct gpu_train_args *a = t->a;
    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.prefix = a->prefix;
    dopt.split = a->split;
    dopt.seq_len = (uint64_t)a->seq_len;
    dopt.seed = (uint32_t)a->data_seed;
    dopt.num_samples[DATA_TRAIN] =
        (uint64_t)(a->steps > 0 ? a->steps : 1) * (uint64_t)a->global_batch;
    if (a->eval_interval)
        dopt.num_samples[DATA_VALID] = (uint64_t)a->eval_iters * (uint64_t)a->global_batch;
    dopt.vocab_size = (uint64_t)a->mc.vocab_size;
    dopt.cache_dir = a->cache_dir;
    dopt.normalize_weights = a->normalize_weights;
    dopt.write_cache = t->rank == 0;
    double td = sl_now();
    int rc = data_loader_open(&t->data, &dopt);
    if ((rc = gpu_all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        return rc;
    }
    if (t->rank == 0) {
        if (data_loader_synthetic(t->data)) {
            sl_info("data: synthetic (uniform random token ids below %d)", a->mc.vocab_size);
        } else {
            sl_info(
                "data: %d prefix%s, %llu tokens, split %s; train index: %d epoch%s (%s, %.2f s)",
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
    gpu_loader_stop(t);
    if (t->st)
        cudaStreamSynchronize(t->st);
    if (train_log_close(t->tlog))
        sl_warn("TensorBoard log: %s", sl_err_msg());
    t->tlog = NULL;
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

int sl_gpu_plugin_run(const struct gpu_train_args *a, struct sl_world *w)
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
    if ((rc = gpu_all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        goto out;
    }
    if (t->rank == 0)
        sl_info("training on the GPU: %s (sm_%d%d, %.0f GiB) x %d rank%s, one per GPU",
                t->prop.name, t->prop.major, t->prop.minor,
                (double)t->prop.totalGlobalMem / (1u << 30), t->W, t->W > 1 ? "s" : "");
    if ((rc = gpu_all_ok(t, gpu_setup_nccl(t))) || (rc = gpu_all_ok(t, gpu_setup_model(t)))) {
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
        rc = gpu_load_state(t, from);
    if ((rc = gpu_all_ok(t, rc))) {
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
        char *tb = train_log_dir_for(a->tb_dir, a->ckpt_dir);
        if (tb && train_log_open(&t->tlog, tb, t->cs.step))
            sl_warn("no TensorBoard log in '%s': %s", tb, sl_err_msg());
        else if (tb)
            sl_info("TensorBoard events: '%s'; loss plot: '%s/loss.svg'",
                    train_log_events_path(t->tlog), tb);
        free(tb);
    }
    if ((rc = gpu_all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        goto out;
    }
    if ((rc = gpu_loader_start(t))) {
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
