/* sluice train: the CPU reference trainer (data parallel over MPI ranks).
 *
 * Reads a YAML config plus key=value overrides, builds the model and the data indices,
 * resumes from the newest checkpoint when asked, and runs optimizer steps of
 * global_batch_size samples: each rank takes its slice of every micro-batch (Megatron's
 * sampler order), gradients are summed over micro-batches and ranks, clipped, and applied
 * with AdamW. Logs a line per step on stdout and JSON lines to log.file.
 */
#include "cli/commands.h"

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
#include "train/cpu_model.h"
#include "train/gpu_train.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/safetensors.h"
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

enum nan_policy { NAN_STOP, NAN_SKIP };

struct topts {
    struct model_config mc;
    long seq_len, micro_batch, global_batch, steps, threads;
    uint64_t seed, data_seed;
    const char *resume;
    enum nan_policy on_nan;
    struct lr_schedule lr;
    struct adamw adam;
    double clip;
    const char *prefix, *split, *cache_dir;
    char *prefix_list; /* data.prefix given as a list, joined (owned) */
    int normalize_weights, synthetic;
    long eval_interval, eval_iters;
    const char *ckpt_dir;
    long ckpt_interval, keep_last;
    const char *log_file, *tb_dir;
    long log_interval;
    double peak_tflops;
    const char *dump_dir;
    long dump_steps;
    int device; /* 0 auto, 1 cpu, 2 cuda */
    int attention, recompute; /* enum gpu_attention, enum gpu_recompute */
};

static int cfg_choice(struct sl_cfg *root, const char *path, const char *def, const char *const *names,
                      int *out)
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

static int load_opts(struct topts *o, struct sl_cfg *root, int world)
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
    o->on_nan = idx ? NAN_SKIP : NAN_STOP;
    static const char *const device_names[] = { "auto", "cpu", "cuda", NULL };
    static const char *const attn_names[] = { "auto", "cudnn", "flash", NULL };
    static const char *const recompute_names[] = { "none", "selective", "full", NULL };
    /* SLUICE_TRAIN_DEVICE sets the default (the CLI tests pin the CPU reference path) */
    const char *dev_default = getenv("SLUICE_TRAIN_DEVICE");
    if ((rc = cfg_choice(root, "train.device", dev_default && *dev_default ? dev_default : "auto",
                         device_names, &o->device)) ||
        (rc = cfg_choice(root, "train.attention", "auto", attn_names, &o->attention)) ||
        (rc = cfg_choice(root, "train.recompute", "none", recompute_names, &o->recompute)))
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

/* Everything the training loop holds. */
struct trainer {
    struct topts o;
    struct sl_world *w;
    struct model_layout l;
    float *slab; /* params | grads | m | v: one allocation */
    float *params, *grads, *m, *v;
    struct cpu_model *cm;
    struct data_loader *data;
    uint32_t *sample; /* seq_len + 1 */
    int32_t *tokens, *targets;
    long accum;
    uint32_t *dump_samples; /* accum * B * (seq_len + 1), when dumping */
    float *dump_logits;     /* B * seq_len * vocab, when dumping */
    long dump_micro;        /* micro-step being filled */
    struct ckpt_state st;
    struct sl_rng rng;
    FILE *log;
    struct train_log *tlog; /* TensorBoard events and loss.svg (rank 0) */
    char *config_json, *optim_json;
    double flops_per_token;
};

static int fill_batch(struct trainer *t, enum data_split split, uint64_t first)
{
    long B = t->o.micro_batch, T = t->o.seq_len;
    for (long b = 0; b < B; b++) {
        int rc = data_loader_sample(t->data, split, first + (uint64_t)b, t->sample);
        if (rc)
            return rc;
        if (t->dump_samples && split == DATA_TRAIN)
            memcpy(t->dump_samples + ((size_t)t->dump_micro * B + b) * (T + 1), t->sample,
                   (size_t)(T + 1) * sizeof(uint32_t));
        for (long k = 0; k < T; k++) {
            t->tokens[b * T + k] = (int32_t)t->sample[k];
            t->targets[b * T + k] = (int32_t)t->sample[k + 1];
        }
    }
    return 0;
}

/* The first sample of micro-step a of a batch starting at `base`, for this rank. */
static uint64_t slice_start(const struct trainer *t, uint64_t base, long a)
{
    return base + (uint64_t)a * (uint64_t)(t->o.micro_batch * t->w->size) +
           (uint64_t)(t->w->rank * t->o.micro_batch);
}

static int all_ok(struct trainer *t, int rc)
{
    int64_t bad = rc != 0;
    sl_world_allreduce_i64(t->w, &bad, 1, SL_MAX);
    return bad ? (rc ? rc : SL_ERR_STATE) : 0;
}

static int evaluate(struct trainer *t, double *loss)
{
    double sum = 0.0;
    long n = 0;
    int rc = 0;
    for (long it = 0; it < t->o.eval_iters && !rc; it++) {
        uint64_t base = (uint64_t)it * (uint64_t)t->o.global_batch;
        for (long a = 0; a < t->accum && !rc; a++) {
            rc = fill_batch(t, DATA_VALID, slice_start(t, base, a));
            if (!rc) {
                sum += cpu_model_forward(t->cm, t->params, t->tokens, t->targets);
                n++;
            }
        }
    }
    rc = all_ok(t, rc);
    if (rc)
        return rc;
    double v[2] = { sum, (double)n };
    sl_world_allreduce_f64(t->w, v, 2, SL_SUM);
    *loss = v[0] / v[1];
    return 0;
}

/* The debug dump of one step for the test oracles: the samples, loss, lr and gradient
 * norm, and on the first step also the logits of micro-step 0, the parameters before the
 * update and the gradients before clipping. */
static int dump_step(struct trainer *t, long step, double loss, double lr, double norm)
{
    const struct model_layout *l = &t->l;
    size_t cap = 2 * (size_t)l->n + 8, n = 0;
    struct st_tensor *x = sl_xcalloc(cap, sizeof(*x));
    char **names = sl_xcalloc(cap, sizeof(char *));
    long B = t->o.micro_batch, T = t->o.seq_len;
    double scal[3] = { loss, lr, norm };
    x[n++] = (struct st_tensor){ "tokens", "I32", 2, { t->accum * B, T + 1 }, t->dump_samples,
                                 (size_t)(t->accum * B * (T + 1)) * sizeof(uint32_t) };
    x[n++] = (struct st_tensor){ "loss", "F64", 1, { 1 }, &scal[0], sizeof(double) };
    x[n++] = (struct st_tensor){ "lr", "F64", 1, { 1 }, &scal[1], sizeof(double) };
    x[n++] = (struct st_tensor){ "grad_norm", "F64", 1, { 1 }, &scal[2], sizeof(double) };
    if (step == 1) {
        x[n++] = (struct st_tensor){ "logits", "F32", 2, { B * T, t->o.mc.vocab_size }, t->dump_logits,
                                     (size_t)(B * T) * (size_t)t->o.mc.vocab_size * sizeof(float) };
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < l->n; i++) {
                names[k * l->n + i] = sl_xasprintf("%s.%s", k ? "grad" : "param", l->t[i].name);
                x[n++] = (struct st_tensor){ names[k * l->n + i], "F32", l->t[i].ndim,
                                             { l->t[i].shape[0], l->t[i].shape[1] },
                                             (k ? t->grads : t->params) + l->t[i].offset,
                                             l->t[i].numel * sizeof(float) };
            }
    }
    int rc = sl_mkdir_p(t->o.dump_dir);
    if (!rc) {
        char *p = sl_xasprintf("%s/step-%06ld.safetensors", t->o.dump_dir, step);
        rc = st_write(p, x, n, NULL);
        free(p);
    }
    for (size_t i = 0; i < cap; i++)
        free(names[i]);
    free(names);
    free(x);
    return rc;
}

static int save_checkpoint(struct trainer *t)
{
    int rc = 0;
    if (t->w->rank == 0) {
        memcpy(t->st.rng, t->rng.s, sizeof(t->st.rng));
        rc = ckpt_save(t->o.ckpt_dir, &t->o.mc, &t->l, t->params, t->m, t->v, &t->st,
                       t->config_json, t->optim_json);
        if (!rc)
            rc = ckpt_prune(t->o.ckpt_dir, (int)t->o.keep_last);
        if (!rc)
            sl_info("saved checkpoint '%s/step-%08ld'", t->o.ckpt_dir, t->st.step);
    }
    rc = all_ok(t, rc);
    return rc;
}

static int train_loop(struct trainer *t)
{
    const struct topts *o = &t->o;
    long B = o->micro_batch, T = o->seq_len, W = t->w->size;
    float scale = (float)(1.0 / ((double)B * T * t->accum * W));
    size_t total = t->l.total;
    int rc = 0;
    while (t->st.step < o->steps) {
        long step = t->st.step + 1;
        double t0 = sl_now();
        int dumping = o->dump_dir && step <= o->dump_steps && t->w->rank == 0;
        memset(t->grads, 0, total * sizeof(float));
        double loss_sum = 0.0;
        for (long a = 0; a < t->accum && !rc; a++) {
            t->dump_micro = a;
            uint32_t *keep = t->dump_samples;
            if (!dumping)
                t->dump_samples = NULL;
            rc = fill_batch(t, DATA_TRAIN, slice_start(t, t->st.consumed_samples, a));
            t->dump_samples = keep;
            if (rc)
                break;
            loss_sum += cpu_model_forward(t->cm, t->params, t->tokens, t->targets);
            if (dumping && a == 0 && step == 1)
                memcpy(t->dump_logits, cpu_model_logits(t->cm),
                       (size_t)(B * T) * (size_t)o->mc.vocab_size * sizeof(float));
            cpu_model_backward(t->cm, t->params, t->grads, t->tokens, t->targets, scale);
        }
        if (rc)
            sl_error("%s", sl_err_msg());
        if ((rc = all_ok(t, rc)))
            return rc;
        if ((rc = sl_world_allreduce_f32(t->w, t->grads, total, SL_SUM)))
            return rc;
        sl_world_allreduce_f64(t->w, &loss_sum, 1, SL_SUM);
        double loss = loss_sum / (double)(t->accum * W);
        double norm = grad_global_norm(t->grads, total);
        double lr = lr_at(&o->lr, step);
        if (dumping && (rc = dump_step(t, step, loss, lr, norm))) {
            sl_error("cannot write the debug dump: %s", sl_err_msg());
            return rc;
        }
        int finite = isfinite(loss) && isfinite(norm);
        if (!finite) {
            if (o->on_nan == NAN_STOP) {
                sl_error("%s at step %ld: stopping (train.on_nan=stop)\n"
                         "hint: lower optim.lr or raise optim.warmup_steps; train.on_nan=skip "
                         "skips such steps instead",
                         isfinite(loss) ? "gradient norm is not finite" : "loss is not finite",
                         step);
                return SL_ERR_STATE;
            }
            sl_warn("%s at step %ld: update skipped (train.on_nan=skip)",
                    isfinite(loss) ? "gradient norm is not finite" : "loss is not finite", step);
            t->st.skipped++;
        } else {
            grad_clip(t->grads, total, norm, o->clip);
            t->st.adam_step++;
            adamw_step(&o->adam, &t->l, t->params, t->grads, t->m, t->v, lr, t->st.adam_step);
        }
        t->st.step = step;
        t->st.consumed_samples += (uint64_t)o->global_batch;
        t->st.loss = loss;
        double dt = sl_now() - t0;
        double tok_s = (double)o->global_batch * T / dt;
        /* per rank, as the published tables give it */
        double tflops = t->flops_per_token * tok_s / 1e12 / W;
        double mfu = o->peak_tflops > 0 ? tflops / o->peak_tflops : NAN;
        if (t->w->rank == 0 && (step % o->log_interval == 0 || step == o->steps)) {
            struct train_step_report r = {
                .step = step, .steps = o->steps, .consumed_samples = t->st.consumed_samples,
                .loss = loss, .lr = lr, .grad_norm = norm, .step_time_s = dt,
                .tokens_per_s = tok_s, .tflops_per_rank = tflops, .mfu = mfu, .skipped = !finite,
            };
            train_report_step(t->log, t->tlog, &r);
        }
        if (o->eval_interval && (step % o->eval_interval == 0 || step == o->steps)) {
            double vl;
            if ((rc = evaluate(t, &vl))) {
                sl_error("validation failed: %s", sl_err_msg());
                return rc;
            }
            if (t->w->rank == 0)
                train_report_valid(t->log, t->tlog, step, vl);
        }
        if (o->ckpt_dir && ((o->ckpt_interval && step % o->ckpt_interval == 0) || step == o->steps)) {
            if ((rc = save_checkpoint(t))) {
                sl_error("%s", sl_err_msg());
                return rc;
            }
            if (train_log_plot(t->tlog))
                sl_warn("loss plot: %s", sl_err_msg());
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
 * cuda (an error without one). Returns 0 (and *on_gpu), or 1 after printing the error. */
static int choose_device(struct trainer *t, int threads, int *on_gpu)
{
    char why[256];
    int64_t have = t->o.device == 1 ? 0 : gpu_train_available(why, sizeof(why));
    sl_world_allreduce_i64(t->w, &have, 1, SL_MIN);
    *on_gpu = have != 0;
    if (t->o.device == 2 && !have) {
        if (t->w->rank == 0)
            sl_error("train.device=cuda: %s\nhint: train.device=auto falls back to the CPU",
                     why[0] ? why : "a rank has no CUDA device");
        return 1;
    }
    if (have || t->w->rank != 0)
        return 0;
    if (t->o.device == 1)
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

/* Hand the run to the CUDA trainer (train/gpu_train.c). */
static int run_gpu(struct trainer *t)
{
    const struct topts *o = &t->o;
    if (o->dump_dir) {
        if (t->w->rank == 0)
            sl_error("debug.dump_dir is supported on the CPU path only\nhint: train.device=cpu");
        return 1;
    }
    struct gpu_train_args a;
    memset(&a, 0, sizeof(a));
    a.mc = o->mc;
    a.seq_len = o->seq_len;
    a.micro_batch = o->micro_batch;
    a.global_batch = o->global_batch;
    a.steps = o->steps;
    a.accum = t->accum;
    a.seed = o->seed;
    a.data_seed = o->data_seed;
    a.resume = o->resume;
    a.on_nan_skip = o->on_nan == NAN_SKIP;
    a.lr = o->lr;
    a.adam = o->adam;
    a.clip = o->clip;
    a.prefix = o->synthetic ? NULL : o->prefix;
    a.split = o->split;
    a.cache_dir = o->cache_dir;
    a.normalize_weights = o->normalize_weights;
    a.eval_interval = o->eval_interval;
    a.eval_iters = o->eval_iters;
    a.ckpt_dir = o->ckpt_dir;
    a.ckpt_interval = o->ckpt_interval;
    a.keep_last = o->keep_last;
    a.log_file = o->log_file;
    a.tb_dir = o->tb_dir;
    a.log_interval = o->log_interval;
    a.peak_tflops = o->peak_tflops;
    a.config_json = t->config_json;
    a.optim_json = t->optim_json;
    a.attention = (enum gpu_attention)o->attention;
    a.recompute = (enum gpu_recompute)o->recompute;
    return gpu_train_run(&a, t->w);
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

static int run(struct sl_cfg *root)
{
    struct trainer tr;
    memset(&tr, 0, sizeof(tr));
    struct trainer *t = &tr;
    t->w = sl_world_get();
    int rc = load_opts(&t->o, root, t->w->size);
    if (rc) {
        sl_error("%s", sl_err_msg());
        free(t->o.prefix_list);
        return 2;
    }
    const struct topts *o = &t->o;
    struct sl_buf cj = SL_BUF_INIT;
    sl_cfg_to_json(root, &cj);
    t->config_json = sl_buf_detach(&cj, NULL);
    struct sl_buf oj = SL_BUF_INIT;
    sl_buf_printf(&oj,
                  "{\"lr\":%.17g,\"min_lr\":%.17g,\"warmup_steps\":%ld,\"decay_steps\":%ld,"
                  "\"decay_style\":\"%s\",\"weight_decay\":%.17g,\"beta1\":%.17g,\"beta2\":%.17g,"
                  "\"eps\":%.17g,\"clip_grad\":%.17g}",
                  o->lr.lr, o->lr.min_lr, o->lr.warmup_steps, o->lr.decay_steps,
                  lr_decay_name(o->lr.style), o->adam.weight_decay, o->adam.beta1, o->adam.beta2,
                  o->adam.eps, o->clip);
    t->optim_json = sl_buf_detach(&oj, NULL);
    t->accum = o->global_batch / (o->micro_batch * t->w->size);

    int threads = setup_threads(o->threads);
    int on_gpu = 0;
    if ((rc = choose_device(t, threads, &on_gpu)) != 0 || on_gpu) {
        if (on_gpu)
            rc = run_gpu(t);
        goto out;
    }

    model_layout_init(&t->l, &o->mc);
    size_t total = t->l.total;
    t->slab = aligned_alloc(64, sl_mul_size(4 * total, sizeof(float)));
    if (!t->slab) {
        sl_error("cannot allocate %.1f GiB for parameters, gradients and AdamW state",
                 4.0 * total * sizeof(float) / (1u << 30));
        rc = 1;
        goto out;
    }
    memset(t->slab, 0, 4 * total * sizeof(float));
    t->params = t->slab;
    t->grads = t->slab + total;
    t->m = t->slab + 2 * total;
    t->v = t->slab + 3 * total;
    t->flops_per_token = model_flops_per_token(&o->mc, (int)o->seq_len);

    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.prefix = o->synthetic ? NULL : o->prefix;
    dopt.split = o->split;
    dopt.seq_len = (uint64_t)o->seq_len;
    dopt.seed = (uint32_t)o->data_seed;
    dopt.num_samples[DATA_TRAIN] = (uint64_t)(o->steps > 0 ? o->steps : 1) * (uint64_t)o->global_batch;
    if (o->eval_interval)
        dopt.num_samples[DATA_VALID] = (uint64_t)o->eval_iters * (uint64_t)o->global_batch;
    dopt.vocab_size = (uint64_t)o->mc.vocab_size;
    dopt.cache_dir = o->cache_dir;
    dopt.normalize_weights = o->normalize_weights;
    dopt.write_cache = t->w->rank == 0;
    double td = sl_now();
    rc = data_loader_open(&t->data, &dopt);
    if ((rc = all_ok(t, rc))) {
        if (sl_err_msg()[0])
            sl_error("%s", sl_err_msg());
        rc = 1;
        goto out;
    }
    if (t->w->rank == 0) {
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
    }

    rc = cpu_model_new(&t->cm, &o->mc, &t->l, (int)o->micro_batch, (int)o->seq_len);
    if (rc) {
        sl_error("%s", sl_err_msg());
        rc = 1;
        goto out;
    }
    t->sample = sl_xmalloc((size_t)(o->seq_len + 1) * sizeof(uint32_t));
    t->tokens = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) * sizeof(int32_t));
    t->targets = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) * sizeof(int32_t));
    if (o->dump_dir && t->w->rank == 0) {
        t->dump_samples = sl_xcalloc((size_t)(t->accum * o->micro_batch * (o->seq_len + 1)),
                                     sizeof(uint32_t));
        t->dump_logits = sl_xmalloc((size_t)(o->micro_batch * o->seq_len) *
                                    (size_t)o->mc.vocab_size * sizeof(float));
    }

    /* resume or start */
    char *from = NULL;
    if (strcmp(o->resume, "none") != 0) {
        if (!strcmp(o->resume, "auto")) {
            if (o->ckpt_dir && (rc = ckpt_find_latest(o->ckpt_dir, &from))) {
                sl_error("%s", sl_err_msg());
                rc = 1;
                goto out;
            }
        } else {
            from = sl_xstrdup(o->resume);
        }
    }
    sl_rng_seed(&t->rng, o->seed, 0);
    if (from) {
        struct model_config saved;
        rc = ckpt_read_meta(from, &saved, &t->st);
        if (!rc) {
            struct sl_buf a = SL_BUF_INIT, b = SL_BUF_INIT;
            model_config_to_json(&saved, &a);
            model_config_to_json(&o->mc, &b);
            if (strcmp(a.data, b.data) != 0)
                rc = sl_err_set(SL_ERR_CONFIG,
                                "checkpoint '%s' holds another model than the config\n"
                                "hint: checkpoint: %s\n      config:     %s",
                                from, a.data, b.data);
            sl_buf_release(&a);
            sl_buf_release(&b);
        }
        if (!rc)
            rc = ckpt_load(from, &t->l, t->params, t->m, t->v);
        if (rc) {
            sl_error("cannot resume: %s", sl_err_msg());
            free(from);
            rc = 1;
            goto out;
        }
        memcpy(t->rng.s, t->st.rng, sizeof(t->rng.s));
        if (t->w->rank == 0)
            sl_info("resumed from '%s' at step %ld (%llu samples consumed)", from, t->st.step,
                    (unsigned long long)t->st.consumed_samples);
        free(from);
    } else {
        model_init_params(&o->mc, &t->l, t->params, sl_rng_u64(&t->rng));
    }
    if (t->w->rank == 0) {
        char mem[32];
        sl_info("model: %llu parameters (%llu without embeddings), %d layers, hidden %d, heads "
                "%d/%d, %s, %s, %s; activations %s",
                (unsigned long long)t->l.params, (unsigned long long)model_params_nonembed(&o->mc),
                o->mc.n_layers, o->mc.d_model, o->mc.n_heads, o->mc.n_kv_heads,
                model_norm_name(o->mc.norm), model_act_name(o->mc.act), model_pos_name(o->mc.pos),
                sl_human_bytes((double)cpu_model_bytes(t->cm), mem, sizeof(mem)));
        sl_info("batch: global %ld = micro %ld x %d ranks x %ld accumulation steps, seq_len %ld; "
                "%.3g GFLOP per token",
                o->global_batch, o->micro_batch, t->w->size, t->accum, o->seq_len,
                t->flops_per_token / 1e9);
        if (o->log_file) {
            t->log = fopen(o->log_file, "a");
            if (!t->log) {
                sl_error("cannot open log file '%s': %s", o->log_file, strerror(errno));
                rc = 1;
                goto out;
            }
        }
        char *tb = train_log_dir_for(o->tb_dir, o->ckpt_dir);
        if (tb && train_log_open(&t->tlog, tb, t->st.step))
            sl_warn("no TensorBoard log in '%s': %s", tb, sl_err_msg());
        else if (tb)
            sl_info("TensorBoard events: '%s'; loss plot: '%s/loss.svg'",
                    train_log_events_path(t->tlog), tb);
        free(tb);
    }
    rc = all_ok(t, 0);
    if (!rc)
        rc = train_loop(t);
    rc = rc ? 1 : 0;
out:
    if (train_log_close(t->tlog))
        sl_warn("TensorBoard log: %s", sl_err_msg());
    if (t->log)
        fclose(t->log);
    cpu_model_free(t->cm);
    data_loader_free(t->data);
    model_layout_release(&t->l);
    free(t->slab);
    free(t->sample);
    free(t->tokens);
    free(t->targets);
    free(t->dump_samples);
    free(t->dump_logits);
    free(t->config_json);
    free(t->optim_json);
    free(t->o.prefix_list);
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
