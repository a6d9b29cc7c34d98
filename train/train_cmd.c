/* sluice train: the trainer's driver, one for both backends (train/train_run.h).
 *
 * Reads a YAML config plus key=value overrides, picks the device, opens the data indices,
 * finds the checkpoint to resume from, and runs optimizer steps of global_batch_size
 * samples through a backend: the CPU reference path (train/cpu_train.c) or the CUDA trainer
 * of the GPU library (train/gpu_train.c). Logs a line per step on stdout and JSON lines to
 * log.file; validates and saves checkpoints at their intervals.
 */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/world.h"
#include "dataset/loader.h"
#include "train/checkpoint.h"
#include "train/gpu_train.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/train_run.h"
#include "train/trainlog.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const char *const usage[] = {
    "sluice train CONFIG.yaml [key=value ...]",
    "",
    "Train a GPT- or Llama-style model (configs/models/*.yaml) on .bin/.idx prefixes",
    "(data.prefix, Megatron syntax: \"0.3 PREFIX_A 0.7 PREFIX_B\") or on synthetic tokens",
    "(data=synthetic). Overrides use dotted keys: train.steps=200 optim.lr=3e-4.",
    "train.device=auto (default) trains on the GPU when this build has CUDA and one is",
    "present, else on the CPU reference path (OpenMP; MPI ranks are data parallel).",
    "See docs/trainer.md for every key.",
    NULL,
};

static int cfg_choice(struct sl_cfg *root, const char *path, const char *def,
                      const char *const *names, int *out)
{
    const char *s;
    int rc = sl_cfg_str(root, path, def, &s);
    if (rc)
        return rc;
    struct sl_buf all = SL_BUF_INIT;
    for (int i = 0; names[i]; i++) {
        if (!strcmp(s, names[i])) {
            *out = i;
            sl_buf_release(&all);
            return 0;
        }
        sl_buf_printf(&all, "%s%s", i ? ", " : "", names[i]);
    }
    struct sl_cfg *n = sl_cfg_get(root, path);
    rc = sl_err_set(SL_ERR_CONFIG, "%s: %s: unknown value '%s'\nhint: one of %s",
                    n ? sl_cfg_where(n) : "config", path, s, all.data);
    sl_buf_release(&all);
    return rc;
}

static int cfg_nonneg(struct sl_cfg *root, const char *path, long def, long *out, long min)
{
    int rc = sl_cfg_int(root, path, def, out);
    if (!rc && *out < min) {
        struct sl_cfg *n = sl_cfg_get(root, path);
        rc = sl_err_set(SL_ERR_CONFIG, "%s: %s: must be at least %ld, got %ld",
                        n ? sl_cfg_where(n) : "config", path, min, *out);
    }
    return rc;
}

/* value must lie in [lo, hi] (an end excluded when its flag is 0) and be finite */
static int cfg_range(struct sl_cfg *root, const char *path, double value, double lo, double hi,
                     int lo_incl, int hi_incl)
{
    if (isfinite(value) && (lo_incl ? value >= lo : value > lo) &&
        (hi_incl ? value <= hi : value < hi))
        return 0;
    struct sl_cfg *n = sl_cfg_get(root, path);
    char range[96];
    if (isinf(hi))
        snprintf(range, sizeof(range), "a finite number %s %g", lo_incl ? ">=" : ">", lo);
    else
        snprintf(range, sizeof(range), "in %c%g, %g%c", lo_incl ? '[' : '(', lo, hi,
                 hi_incl ? ']' : ')');
    return sl_err_set(SL_ERR_CONFIG, "%s: %s: must be %s, got %g", n ? sl_cfg_where(n) : "config",
                      path, range, value);
}

static int load_opts(struct train_opts *o, struct sl_cfg *root, int world)
{
    memset(o, 0, sizeof(*o));
    int rc = model_config_load(&o->mc, root);
    if (rc)
        return rc;
    static const char *const nan_names[] = { "stop", "skip", NULL };
    static const char *const decay_names[] = { "cosine", "linear", "constant", "wsd", NULL };
    int idx = 0;
    if ((rc = cfg_nonneg(root, "train.seq_len", o->mc.max_seq_len, &o->seq_len, 1)) ||
        (rc = cfg_nonneg(root, "train.micro_batch_size", 4, &o->micro_batch, 1)) ||
        (rc = cfg_nonneg(root, "train.global_batch_size", o->micro_batch * world, &o->global_batch,
                         1)) ||
        (rc = cfg_nonneg(root, "train.steps", 100, &o->steps, 0)) ||
        (rc = cfg_nonneg(root, "train.threads", 0, &o->threads, 0)) ||
        (rc = sl_cfg_u64(root, "train.seed", 1234, &o->seed)) ||
        (rc = sl_cfg_str(root, "train.resume", "auto", &o->resume)) ||
        (rc = cfg_choice(root, "train.on_nan", "stop", nan_names, &idx)))
        return rc;
    o->on_nan_skip = idx == 1;
    static const char *const device_names[] = { "auto", "cpu", "cuda", NULL };
    static const char *const attn_names[] = { "auto", "cudnn", "flash", NULL };
    static const char *const recompute_names[] = { "none", "selective", "full", NULL };
    static const char *const reduce_names[] = { "fp32", "bf16", NULL };
    /* SLUICE_TRAIN_DEVICE sets the default (the CLI tests pin the CPU reference path) */
    const char *dev_default = getenv("SLUICE_TRAIN_DEVICE");
    if ((rc = cfg_choice(root, "train.device", dev_default && *dev_default ? dev_default : "auto",
                         device_names, &o->device)) ||
        (rc = cfg_choice(root, "train.attention", "auto", attn_names, &o->attention)) ||
        (rc = cfg_choice(root, "train.recompute", "none", recompute_names, &o->recompute)) ||
        (rc = cfg_choice(root, "train.grad_reduce_dtype", "fp32", reduce_names, &o->grad_reduce)) ||
        (rc = sl_cfg_bool(root, "train.deterministic", 0, &o->deterministic)) ||
        (rc = sl_cfg_str(root, "train.dump_grads", NULL, &o->dump_grads)))
        return rc;
    if (o->seq_len > o->mc.max_seq_len) {
        struct sl_cfg *n = sl_cfg_get(root, "train.seq_len");
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: train.seq_len %ld is longer than model.max_position_embeddings %d",
                          n ? sl_cfg_where(n) : "config", o->seq_len, o->mc.max_seq_len);
    }
    if (o->global_batch % (o->micro_batch * world)) {
        return sl_err_set(SL_ERR_CONFIG,
                          "train.global_batch_size %ld is not a multiple of micro_batch_size %ld "
                          "x %d ranks\nhint: gradient accumulation needs global = micro x ranks x "
                          "steps",
                          o->global_batch, o->micro_batch, world);
    }
    long decay_steps, warmup;
    if ((rc = sl_cfg_double(root, "optim.lr", 6e-4, &o->lr.lr)) ||
        (rc = sl_cfg_double(root, "optim.min_lr", o->lr.lr * 0.1, &o->lr.min_lr)) ||
        (rc = cfg_nonneg(root, "optim.warmup_steps", 0, &warmup, 0)) ||
        (rc = cfg_nonneg(root, "optim.decay_steps", o->steps, &decay_steps, 0)) ||
        (rc = cfg_choice(root, "optim.decay_style", "cosine", decay_names, &idx)) ||
        (rc = sl_cfg_double(root, "optim.wsd_decay_fraction", 0.2, &o->lr.wsd_fraction)) ||
        (rc = sl_cfg_double(root, "optim.weight_decay", 0.1, &o->adam.weight_decay)) ||
        (rc = sl_cfg_double(root, "optim.beta1", 0.9, &o->adam.beta1)) ||
        (rc = sl_cfg_double(root, "optim.beta2", 0.95, &o->adam.beta2)) ||
        (rc = sl_cfg_double(root, "optim.eps", 1e-8, &o->adam.eps)) ||
        (rc = sl_cfg_double(root, "optim.clip_grad", 1.0, &o->clip)))
        return rc;
    /* a negative rate, a beta outside [0, 1) or a NaN anywhere would train to garbage (or
     * to NaN) without an error: refuse them here */
    if ((rc = cfg_range(root, "optim.lr", o->lr.lr, 0, INFINITY, 1, 0)) ||
        (rc = cfg_range(root, "optim.min_lr", o->lr.min_lr, 0, INFINITY, 1, 0)) ||
        (rc = cfg_range(root, "optim.weight_decay", o->adam.weight_decay, 0, INFINITY, 1, 0)) ||
        (rc = cfg_range(root, "optim.beta1", o->adam.beta1, 0, 1, 1, 0)) ||
        (rc = cfg_range(root, "optim.beta2", o->adam.beta2, 0, 1, 1, 0)) ||
        (rc = cfg_range(root, "optim.eps", o->adam.eps, 0, INFINITY, 0, 0)) ||
        (rc = cfg_range(root, "optim.clip_grad", o->clip, 0, INFINITY, 1, 0)) ||
        (rc = cfg_range(root, "optim.wsd_decay_fraction", o->lr.wsd_fraction, 0, 1, 1, 1)))
        return rc;
    o->lr.warmup_steps = warmup;
    o->lr.decay_steps = decay_steps;
    o->lr.style = (enum lr_decay)idx;
    o->data_seed = o->seed;
    struct sl_cfg *data = sl_cfg_get(root, "data");
    if (data && data->kind == SL_CFG_SCALAR) {
        if (strcmp(data->value, "synthetic") != 0)
            return sl_err_set(SL_ERR_CONFIG, "%s: data: expected a map or 'synthetic', got '%s'",
                              sl_cfg_where(data), data->value);
        data->used = 1;
        o->synthetic = 1;
    } else {
        struct sl_cfg *pn = sl_cfg_get(root, "data.prefix");
        if (pn && pn->kind == SL_CFG_SEQ) {
            /* a YAML list (NeMo's data_prefix): join its items with spaces */
            const char **items;
            size_t n;
            if ((rc = sl_cfg_strs(root, "data.prefix", &items, &n)))
                return rc;
            struct sl_buf b = SL_BUF_INIT;
            for (size_t i = 0; i < n; i++)
                sl_buf_printf(&b, "%s%s", i ? " " : "", items[i]);
            free(items);
            o->prefix_list = sl_buf_detach(&b, NULL);
            o->prefix = o->prefix_list;
        } else if ((rc = sl_cfg_str(root, "data.prefix", NULL, &o->prefix))) {
            return rc;
        }
        if ((rc = sl_cfg_str(root, "data.split", "969,30,1", &o->split)) ||
            (rc = sl_cfg_str(root, "data.cache_dir", NULL, &o->cache_dir)) ||
            (rc = sl_cfg_bool(root, "data.normalize_weights", 0, &o->normalize_weights)) ||
            (rc = sl_cfg_u64(root, "data.seed", o->seed, &o->data_seed)))
            return rc;
        o->synthetic = !o->prefix || !strcmp(o->prefix, "synthetic") || !o->prefix[0];
    }
    if ((rc = cfg_nonneg(root, "eval.interval", 0, &o->eval_interval, 0)) ||
        (rc = cfg_nonneg(root, "eval.iters", 10, &o->eval_iters, 1)) ||
        (rc = sl_cfg_str(root, "checkpoint.dir", NULL, &o->ckpt_dir)) ||
        (rc = cfg_nonneg(root, "checkpoint.interval", 0, &o->ckpt_interval, 0)) ||
        (rc = cfg_nonneg(root, "checkpoint.keep_last", 3, &o->keep_last, 0)) ||
        (rc = sl_cfg_str(root, "log.file", NULL, &o->log_file)) ||
        (rc = sl_cfg_str(root, "log.tensorboard_dir", NULL, &o->tb_dir)) ||
        (rc = cfg_nonneg(root, "log.interval", 1, &o->log_interval, 1)) ||
        (rc = sl_cfg_double(root, "log.peak_tflops", 0.0, &o->peak_tflops)) ||
        (rc = sl_cfg_str(root, "debug.dump_dir", NULL, &o->dump_dir)) ||
        (rc = cfg_nonneg(root, "debug.dump_steps", 1, &o->dump_steps, 0)))
        return rc;
    if (o->data_seed > 0xffffffffu)
        return sl_err_set(SL_ERR_CONFIG, "data.seed must be below 2^32 (numpy's RandomState)");
    return sl_cfg_check_unused(root);
}

/* Everything the driver holds. */
struct trainer {
    struct train_opts o;
    struct sl_world *w;
    const struct train_backend *be;
    void *ctx; /* the backend's */
    struct model_layout l;
    struct data_loader *data;
    struct ckpt_state st;
    struct sl_rng rng;
    FILE *log;
    struct train_log *tlog; /* TensorBoard events and loss.svg (rank 0) */
    double flops_per_token;
};

static int all_ok(struct trainer *t, int rc)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(t->w, &bad, 1, SL_MAX);
    if (bad && !rc)
        sl_err_clear(); /* another rank failed: callers print sl_err_msg() only when set */
    return bad ? (rc ? rc : SL_ERR_STATE) : 0;
}

static int save_checkpoint(struct trainer *t)
{
    memcpy(t->st.rng, t->rng.s, sizeof(t->st.rng));
    int rc = t->be->save(t->ctx, &t->st);
    if (!rc && t->w->rank == 0) {
        rc = ckpt_prune(t->o.ckpt_dir, (int)t->o.keep_last);
        if (!rc)
            sl_info("saved checkpoint '%s/step-%08ld'", t->o.ckpt_dir, t->st.step);
    }
    return all_ok(t, rc);
}

/* train.dump_grads=DIR: the file of step `step` */
static char *grads_path(const struct trainer *t, long step)
{
    return sl_xasprintf("%s/grads-step-%06ld.safetensors", t->o.dump_grads, step);
}

static int train_loop(struct trainer *t)
{
    const struct train_opts *o = &t->o;
    long T = o->seq_len, W = t->w->size;
    double t_last = sl_now();
    long step_last = t->st.step;
    int rc = 0;
    while (t->st.step < o->steps) {
        long step = t->st.step + 1;
        int logged = step % o->log_interval == 0 || step == o->steps;
        int saving =
            o->ckpt_dir && ((o->ckpt_interval && step % o->ckpt_interval == 0) || step == o->steps);
        int evaluating = o->eval_interval && (step % o->eval_interval == 0 || step == o->steps);
        char *dump = o->dump_grads && step == 1 ? grads_path(t, step) : NULL;
        struct train_step s = {
            .step = step,
            .lr = lr_at(&o->lr, step),
            .adam_step = t->st.adam_step + 1,
            .consumed_samples = t->st.consumed_samples,
            .want_stats = logged || saving || evaluating,
            .dump_grads = dump,
        };
        rc = t->be->step(t->ctx, &s);
        free(dump);
        if (rc) {
            sl_error("step %ld: %s", step, sl_err_msg());
            return rc;
        }
        int finite = 1;
        if (s.have_stats) {
            t->st.loss = s.loss;
            finite = isfinite(s.loss) && isfinite(s.norm);
            const char *what =
                isfinite(s.loss) ? "gradient norm is not finite" : "loss is not finite";
            if (!finite && !o->on_nan_skip) {
                if (t->w->rank == 0)
                    sl_error("%s at step %ld: stopping (train.on_nan=stop)\n"
                             "hint: lower optim.lr or raise optim.warmup_steps; train.on_nan=skip "
                             "skips such steps instead",
                             what, step);
                return SL_ERR_STATE;
            }
            if (!finite && t->w->rank == 0)
                sl_warn("%s at step %ld: update skipped (train.on_nan=skip)", what, step);
        }
        if (s.applied)
            t->st.adam_step++;
        else
            t->st.skipped++;
        t->st.step = step;
        t->st.consumed_samples += (uint64_t)o->global_batch;
        if (logged) {
            /* the mean over the steps since the last logged one (a backend may run ahead of
             * the host between them) */
            double now = sl_now();
            double dt = (now - t_last) / (double)(step - step_last);
            t_last = now;
            step_last = step;
            double tok_s = (double)o->global_batch * T / dt;
            /* per rank, as the published tables give it */
            double tflops = t->flops_per_token * tok_s / 1e12 / W;
            double mfu = o->peak_tflops > 0 ? tflops / o->peak_tflops : NAN;
            if (t->w->rank == 0) {
                struct train_step_report r = {
                    .step = step,
                    .steps = o->steps,
                    .consumed_samples = t->st.consumed_samples,
                    .loss = s.loss,
                    .lr = s.lr,
                    .grad_norm = s.norm,
                    .step_time_s = dt,
                    .tokens_per_s = tok_s,
                    .tflops_per_rank = tflops,
                    .mfu = mfu,
                    .skipped = !s.applied,
                };
                train_report_step(t->log, t->tlog, &r);
            }
        }
        if (evaluating) {
            double vl;
            if ((rc = t->be->evaluate(t->ctx, &vl))) {
                sl_error("validation failed: %s", sl_err_msg());
                return rc;
            }
            if (t->w->rank == 0)
                train_report_valid(t->log, t->tlog, step, vl);
            t_last = sl_now(); /* validation is not step time */
        }
        if (saving) {
            if ((rc = save_checkpoint(t))) {
                if (sl_err_msg()[0])
                    sl_error("%s", sl_err_msg());
                return rc;
            }
            if (train_log_plot(t->tlog))
                sl_warn("loss plot: %s", sl_err_msg());
            t_last = sl_now();
        }
    }
    return 0;
}

static int gpu_present(void)
{
    struct stat sb;
    return stat("/dev/nvidia0", &sb) == 0 || stat("/proc/driver/nvidia/gpus", &sb) == 0;
}

/* train.device: auto (the GPU when this build has CUDA and every rank sees one), cpu, or
 * cuda (an error without one). Returns 0 (and t->be), or 1 after printing the error. The
 * error for train.device=cuda on a machine without a GPU starts with exactly
 * "train.device=cuda: no CUDA device" (tests/gpu/t_train_gpu.sh skips on it). */
static int choose_device(struct trainer *t, int threads)
{
    char why[256] = "";
    const struct train_backend *gpu = NULL;
    if (t->o.device != TRAIN_DEVICE_CPU)
        gpu = gpu_train_backend(why, sizeof(why));
    int64_t have = gpu != NULL;
    sl_world_allreduce_i64(t->w, &have, 1, SL_MIN);
    t->be = have ? gpu : &train_backend_cpu;
    if (t->o.device == TRAIN_DEVICE_CUDA && !have) {
        if (t->w->rank == 0)
            sl_error("train.device=cuda: %s%s", why[0] ? why : "a rank has no CUDA device",
                     strstr(why, "hint:") ? "" : "\nhint: train.device=auto falls back to the CPU");
        return 1;
    }
    if (have || t->w->rank != 0)
        return 0;
    if (t->o.device == TRAIN_DEVICE_CPU)
        sl_info("train.device=cpu: training on the CPU (%d threads x %d ranks)", threads,
                t->w->size);
    else if (gpu_present())
        sl_info("a GPU is present but the GPU trainer cannot use it (%s): training on the CPU "
                "(%d threads x %d ranks)",
                why, threads, t->w->size);
    else
        sl_info("no GPU found: training on the CPU (%d threads x %d ranks)", threads, t->w->size);
    return 0;
}

static int setup_threads(long want)
{
    int n = (int)want;
#ifdef _OPENMP
    if (n <= 0 && !getenv("OMP_NUM_THREADS")) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long local = ls ? atol(ls) : 1;
        if (local < 1)
            local = 1;
        n = (int)(cores / local > 0 ? cores / local : 1);
    }
    if (n > 0)
        omp_set_num_threads(n);
    return omp_get_max_threads();
#else
    (void)want;
    (void)n;
    return 1;
#endif
}

static int open_data(struct trainer *t)
{
    const struct train_opts *o = &t->o;
    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.prefix = o->synthetic ? NULL : o->prefix;
    dopt.split = o->split;
    dopt.seq_len = (uint64_t)o->seq_len;
    dopt.seed = (uint32_t)o->data_seed;
    dopt.num_samples[DATA_TRAIN] =
        (uint64_t)(o->steps > 0 ? o->steps : 1) * (uint64_t)o->global_batch;
    if (o->eval_interval)
        dopt.num_samples[DATA_VALID] = (uint64_t)o->eval_iters * (uint64_t)o->global_batch;
    dopt.vocab_size = (uint64_t)o->mc.vocab_size;
    dopt.cache_dir = o->cache_dir;
    dopt.normalize_weights = o->normalize_weights;
    dopt.write_cache = t->w->rank == 0;
    double td = sl_now();
    int rc = data_loader_open(&t->data, &dopt);
    if ((rc = all_ok(t, rc)))
        return rc;
    if (t->w->rank != 0)
        return 0;
    if (data_loader_synthetic(t->data)) {
        sl_info("data: synthetic (uniform random token ids below %d)", o->mc.vocab_size);
    } else {
        sl_info("data: %d prefix%s, %llu tokens, split %s; train index: %d epoch%s (%s, %.2f s)",
                data_loader_prefixes(t->data), data_loader_prefixes(t->data) > 1 ? "es" : "",
                (unsigned long long)data_loader_tokens(t->data), o->split,
                data_loader_epochs(t->data, DATA_TRAIN),
                data_loader_epochs(t->data, DATA_TRAIN) == 1 ? "" : "s",
                data_loader_cached(t->data) ? "from the cache" : "built", sl_now() - td);
        if (data_loader_note(t->data))
            sl_warn("%s", data_loader_note(t->data));
    }
    return 0;
}

/* The checkpoint to resume from (NULL: start fresh), its metadata into t->st, and the check
 * that it holds the configured model. */
static int find_resume(struct trainer *t, char **from)
{
    const struct train_opts *o = &t->o;
    *from = NULL;
    if (!strcmp(o->resume, "none"))
        return 0;
    if (!strcmp(o->resume, "auto")) {
        int rc = o->ckpt_dir ? ckpt_find_latest(o->ckpt_dir, from) : 0;
        if (rc)
            return rc;
    } else {
        *from = sl_xstrdup(o->resume);
    }
    if (!*from)
        return 0;
    struct model_config saved;
    int rc = ckpt_read_meta(*from, &saved, &t->st);
    if (!rc) {
        struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
        model_config_to_json(&saved, &a);
        model_config_to_json(&o->mc, &b);
        if (strcmp(a.data, b.data) != 0)
            rc = sl_err_set(SL_ERR_CONFIG,
                            "checkpoint '%s' holds another model than the config\n"
                            "hint: checkpoint: %s\n      config:     %s",
                            *from, a.data, b.data);
        sl_buf_release(&a);
        sl_buf_release(&b);
    }
    return rc;
}

static int run(struct sl_cfg *root)
{
    struct trainer tr;
    memset(&tr, 0, sizeof(tr));
    struct trainer *t = &tr;
    t->w = sl_world_get();
    char *from = NULL;
    int rc = load_opts(&t->o, root, t->w->size);
    if (rc) {
        sl_error("%s", sl_err_msg());
        free(t->o.prefix_list);
        return 2;
    }
    struct train_opts *o = &t->o;
    struct sl_buf cj = SL_BUF_INIT;
    sl_cfg_to_json(root, &cj);
    o->config_json = sl_buf_detach(&cj, NULL);
    struct sl_buf oj = SL_BUF_INIT;
    sl_buf_printf(&oj,
                  "{\"lr\":%.17g,\"min_lr\":%.17g,\"warmup_steps\":%ld,\"decay_steps\":%ld,"
                  "\"decay_style\":\"%s\",\"weight_decay\":%.17g,\"beta1\":%.17g,\"beta2\":%.17g,"
                  "\"eps\":%.17g,\"clip_grad\":%.17g}",
                  o->lr.lr, o->lr.min_lr, o->lr.warmup_steps, o->lr.decay_steps,
                  lr_decay_name(o->lr.style), o->adam.weight_decay, o->adam.beta1, o->adam.beta2,
                  o->adam.eps, o->clip);
    o->optim_json = sl_buf_detach(&oj, NULL);
    o->accum = o->global_batch / (o->micro_batch * t->w->size);

    int threads = setup_threads(o->threads);
    if ((rc = choose_device(t, threads)) != 0)
        goto out;
    model_layout_init(&t->l, &o->mc);
    t->flops_per_token = model_flops_per_token(&o->mc, (int)o->seq_len);
    if (o->dump_grads && t->w->rank == 0 && sl_mkdir_p(o->dump_grads)) {
        sl_error("train.dump_grads: %s", sl_err_msg());
        rc = 1;
    }
    if (!(rc = all_ok(t, rc)) && (rc = all_ok(t, open_data(t))) && sl_err_msg()[0])
        sl_error("%s", sl_err_msg());
    size_t act_bytes = 0;
    if (!rc && (rc = all_ok(t, t->be->setup(&t->ctx, o, t->w, t->data, &act_bytes))) &&
        sl_err_msg()[0])
        sl_error("%s", sl_err_msg());
    if (rc) {
        rc = 1;
        goto out;
    }

    /* resume or start */
    sl_rng_seed(&t->rng, o->seed, 0);
    rc = find_resume(t, &from);
    uint64_t init_seed = sl_rng_u64(&t->rng); /* drawn either way; a resume restores the state */
    if (!rc)
        rc = t->be->load(t->ctx, from, init_seed);
    if ((rc = all_ok(t, rc))) {
        sl_error("cannot %s: %s", from ? "resume" : "initialise the model", sl_err_msg());
        rc = 1;
        goto out;
    }
    if (from) {
        memcpy(t->rng.s, t->st.rng, sizeof(t->rng.s));
        if (t->w->rank == 0)
            sl_info("resumed from '%s' at step %ld (%llu samples consumed)", from, t->st.step,
                    (unsigned long long)t->st.consumed_samples);
    }
    if (t->w->rank == 0) {
        char mem[32];
        sl_info("model: %llu parameters (%llu without embeddings), %d layers, hidden %d, heads "
                "%d/%d, %s, %s, %s; activations %s",
                (unsigned long long)t->l.params, (unsigned long long)model_params_nonembed(&o->mc),
                o->mc.n_layers, o->mc.d_model, o->mc.n_heads, o->mc.n_kv_heads,
                model_norm_name(o->mc.norm), model_act_name(o->mc.act), model_pos_name(o->mc.pos),
                sl_human_bytes((double)act_bytes, mem, sizeof(mem)));
        sl_info("batch: global %ld = micro %ld x %d ranks x %ld accumulation steps, seq_len %ld; "
                "%.3g GFLOP per token",
                o->global_batch, o->micro_batch, t->w->size, o->accum, o->seq_len,
                t->flops_per_token / 1e9);
        if (o->log_file) {
            t->log = fopen(o->log_file, "a");
            if (!t->log)
                rc = sl_err_set(SL_ERR_IO, "cannot open log file '%s': %s", o->log_file,
                                strerror(errno));
        }
        char *tb = train_log_dir_for(o->tb_dir, o->ckpt_dir);
        if (tb && train_log_open(&t->tlog, tb, t->st.step))
            sl_warn("no TensorBoard log in '%s': %s", tb, sl_err_msg());
        else if (tb)
            sl_info("TensorBoard events: '%s'; loss plot: '%s/loss.svg'",
                    train_log_events_path(t->tlog), tb);
        free(tb);
    }
    if ((rc = all_ok(t, rc))) {
        if (t->w->rank == 0)
            sl_error("%s", sl_err_msg());
    } else {
        rc = train_loop(t);
    }
    rc = rc ? 1 : 0;
out:
    free(from);
    if (t->be && t->ctx)
        t->be->release(t->ctx);
    if (train_log_close(t->tlog))
        sl_warn("TensorBoard log: %s", sl_err_msg());
    if (t->log)
        fclose(t->log);
    data_loader_free(t->data);
    model_layout_release(&t->l);
    free(o->config_json);
    free(o->optim_json);
    free(o->prefix_list);
    return rc;
}

int cmd_train(int argc, const char **argv)
{
    const char *tb = NULL;
    struct sl_option options[] = {
        SL_OPT_STRING(0, "tensorboard", &tb, "DIR",
                      "TensorBoard events and loss.svg in DIR (log.tensorboard_dir)"),
        SL_OPT_COMMON,
        SL_OPT_END_,
    };
    struct sl_strlist rest = { 0 };
    int rc = sl_parse_options(argc, argv, options, &rest);
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, usage, options);
        sl_strlist_release(&rest);
        return 0;
    }
    struct sl_cfg *root = NULL;
    size_t first = 0;
    if (!rc && rest.n && !strchr(rest.v[0], '=')) {
        rc = sl_cfg_load_file(&root, rest.v[0]);
        first = 1;
        if (rc) {
            sl_error("%s", sl_err_msg());
            sl_strlist_release(&rest);
            return 2;
        }
    }
    if (!rc && !root) {
        rc = sl_err_set(SL_ERR_USAGE, "no config given");
    }
    for (size_t i = first; !rc && i < rest.n; i++) {
        if (!strchr(rest.v[i], '='))
            rc = sl_err_set(SL_ERR_USAGE, "'%s' is not a key=value override", rest.v[i]);
        else
            rc = sl_cfg_override(root, rest.v[i]);
    }
    if (!rc && tb) {
        char *kv = sl_xasprintf("log.tensorboard_dir=%s", tb);
        rc = sl_cfg_override(root, kv);
        free(kv);
    }
    if (rc) {
        sl_error("%s", sl_err_msg());
        fprintf(stderr, "usage: %s\n", usage[0]);
        sl_cfg_free(root);
        sl_strlist_release(&rest);
        return 2;
    }
    rc = run(root);
    sl_cfg_free(root);
    sl_strlist_release(&rest);
    return rc;
}
