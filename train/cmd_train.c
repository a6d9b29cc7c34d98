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
#include "core/stream.h"
#include "core/world.h"
#include "dataset/loader.h"
#include "train/checkpoint.h"
#include "tokenize/tokenizer.h"
#include "dataset/datainfo.h"
#include "train/eval.h"
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const char *const cmd_train_usage[] = {
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

static void free_split_prefixes(struct train_opts *o)
{
    for (int k = 0; k < 3; k++) {
        free(o->split_prefix[k]);
        o->split_prefix[k] = NULL;
    }
}

static void free_tasks(struct train_opts *o)
{
    free_split_prefixes(o);
    for (size_t i = 0; o->eval_tasks && o->eval_tasks[i]; i++)
        free(o->eval_tasks[i]);
    free(o->eval_tasks);
    o->eval_tasks = NULL;
}

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

/* The data keys (data=synthetic or data.prefix), and model.vocab_size from the data's
 * tokenizer when the config leaves it out (dataset/datainfo.h). */
static int load_data_opts(struct train_opts *o, struct sl_cfg *root)
{
    int rc;
    struct sl_cfg *data = sl_cfg_get(root, "data");
    if (data && data->kind == SL_CFG_SCALAR) {
        if (strcmp(data->value, "synthetic") != 0)
            return sl_err_set(SL_ERR_CONFIG, "%s: data: expected a map or 'synthetic', got '%s'",
                              sl_cfg_where(data), data->value);
        data->used = 1;
        o->synthetic = 1;
        return 0;
    }
    struct sl_cfg *pn = sl_cfg_get(root, "data.prefix");
    /* separate splits: NeMo's data_prefix map, or Megatron's --{train,valid,test}-data-path */
    static const char *const nemo[] = { "data.prefix.train", "data.prefix.validation",
                                        "data.prefix.test" };
    static const char *const mega[] = { "data.train_data_path", "data.valid_data_path",
                                        "data.test_data_path" };
    int any_mega = 0;
    for (int k = 0; k < 3; k++)
        any_mega |= sl_cfg_get(root, mega[k]) != NULL;
    if ((pn && pn->kind == SL_CFG_MAP) || any_mega) {
        if (pn && any_mega)
            return sl_err_set(SL_ERR_CONFIG, "data.prefix and data.*_data_path cannot be used "
                                             "together\nhint: one of the two forms");
        struct sl_buf all = SL_BUF_INIT;
        for (int k = 0; k < 3; k++) {
            const char *key = pn ? nemo[k] : mega[k];
            struct sl_cfg *kn = sl_cfg_get(root, key);
            if (!kn)
                continue;
            struct sl_buf b = SL_BUF_INIT;
            if (kn->kind == SL_CFG_SEQ) {
                const char **items;
                size_t n;
                if ((rc = sl_cfg_strs(root, key, &items, &n))) {
                    sl_buf_release(&all);
                    return rc;
                }
                for (size_t i = 0; i < n; i++)
                    sl_buf_printf(&b, "%s%s", i ? " " : "", items[i]);
                free(items);
            } else {
                const char *v;
                if ((rc = sl_cfg_str(root, key, NULL, &v))) {
                    sl_buf_release(&all);
                    return rc;
                }
                sl_buf_puts(&b, v ? v : "");
            }
            o->split_prefix[k] = sl_buf_detach(&b, NULL);
            sl_buf_printf(&all, "%s%s", all.len ? " " : "", o->split_prefix[k]);
        }
        o->prefix_list = sl_buf_detach(&all, NULL);
        o->prefix = o->prefix_list;
    } else if (pn && pn->kind == SL_CFG_SEQ) {
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
    /* Megatron's default --split, spelled as Megatron spells it (its cache names hash it) */
    if ((rc = sl_cfg_str(root, "data.split", "969, 30, 1", &o->split)) ||
        (rc = sl_cfg_str(root, "data.cache_dir", NULL, &o->cache_dir)) ||
        (rc = sl_cfg_bool(root, "data.normalize_weights", 0, &o->normalize_weights)) ||
        (rc = sl_cfg_str(root, "data.megatron_tokenizer", NULL, &o->megatron_tokenizer)) ||
        (rc = sl_cfg_str(root, "data.megatron_path_map", NULL, &o->megatron_path_map)) ||
        (rc = sl_cfg_double(root, "data.mid_level_dataset_surplus", -1.0, &o->surplus)))
        return rc;
    if (o->prefix && !strcmp(o->prefix, "synthetic")) {
        o->synthetic = 1;
        return 0;
    }
    /* Megatron's --mock-data is asked for, never a fallback: no data is an error */
    if (!o->prefix || !o->prefix[strspn(o->prefix, " \t\n")])
        return sl_err_set(SL_ERR_CONFIG,
                          "no training data: data.prefix is %s\nhint: data.prefix=PREFIX (the "
                          ".bin/.idx pair that sluice tokenize wrote, e.g. "
                          "tokens/web_text_document), or data=synthetic to train on random "
                          "tokens (a smoke test)",
                          o->prefix ? "empty" : "not set");
    if ((rc = data_info_read(&o->data, o->prefix)))
        return rc;
    /* checkpoints carry the tokenizer: a missing one is an error now, not at eval or export */
    if (o->data.tokenizer && (rc = tokenizer_spec_check(o->data.tokenizer)))
        return sl_err_set(SL_ERR_CONFIG,
                          "the data's tokenizer is missing: %s (recorded in '%s')\nhint: "
                          "put it back where the manifest says, or tokenize the data again "
                          "(manifests of older sluice versions name it as it was typed)",
                          sl_err_msg(), o->data.manifest);
    if (o->data.vocab_size <= 0)
        return 0;
    struct sl_cfg *vn = sl_cfg_get(root, "model.vocab_size");
    if (!vn) {
        char kv[64];
        snprintf(kv, sizeof(kv), "model.vocab_size=%ld", o->data.vocab_size);
        o->vocab_from_data = 1;
        return sl_cfg_override(root, kv);
    }
    return 0;
}

/* The model's vocabulary against the data's tokenizer. */
static int check_vocab(const struct train_opts *o, struct sl_cfg *root)
{
    if (o->synthetic || o->data.vocab_size <= 0)
        return 0;
    if (o->mc.vocab_size < o->data.vocab_size) {
        struct sl_cfg *n = sl_cfg_get(root, "model.vocab_size");
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: model.vocab_size %d is smaller than the data's tokenizer ('%s', "
                          "%ld ids, from '%s')\nhint: leave model.vocab_size out to take it from "
                          "the data, or set it to at least %ld",
                          n ? sl_cfg_where(n) : "config", o->mc.vocab_size, o->data.tokenizer,
                          o->data.vocab_size, o->data.manifest, o->data.vocab_size);
    }
    if (o->data.eod_id >= o->mc.vocab_size)
        return sl_err_set(SL_ERR_CONFIG,
                          "model.vocab_size %d does not hold the data's end-of-document id %ld",
                          o->mc.vocab_size, o->data.eod_id);
    return 0;
}

static int load_opts(struct train_opts *o, struct sl_cfg *root, int world)
{
    memset(o, 0, sizeof(*o));
    o->data.vocab_size = o->data.eod_id = -1;
    int rc = load_data_opts(o, root);
    if (rc)
        return rc;
    if ((rc = model_config_load(&o->mc, root)) || (rc = check_vocab(o, root)) ||
        (rc = parallel_config_load(&o->par, root, world, &o->mc)))
        return rc;
    int ranks = world;
    world = o->par.dp; /* the batch splits over data-parallel ranks */
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
        return sl_err_set(
            SL_ERR_CONFIG,
            "train.global_batch_size %ld is not a multiple of micro_batch_size %ld "
            "x %d %sranks\nhint: gradient accumulation needs global = micro x ranks x "
            "steps",
            o->global_batch, o->micro_batch, world, world == ranks ? "" : "data-parallel ");
    }
    long accum = o->global_batch / (o->micro_batch * world);
    if (o->par.vp > 1 && accum % o->par.pp) {
        struct sl_cfg *n = sl_cfg_get(root, "parallel.virtual_stages");
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: parallel.virtual_stages: the interleaved schedule needs the %ld "
                          "micro-batches of a step to be a multiple of the %d pipeline stages\n"
                          "hint: micro-batches = train.global_batch_size / (micro_batch_size x "
                          "data-parallel ranks)",
                          n ? sl_cfg_where(n) : "config", accum, o->par.pp);
    }
    if (o->par.sp && (o->micro_batch * o->seq_len) % o->par.tp) {
        struct sl_cfg *n = sl_cfg_get(root, "parallel.sequence");
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: parallel.sequence: the %ld x %ld tokens of a micro-batch do not "
                          "split into %d equal parts\nhint: choose train.seq_len x "
                          "train.micro_batch_size divisible by parallel.tensor",
                          n ? sl_cfg_where(n) : "config", o->micro_batch, o->seq_len, o->par.tp);
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
    /* optim.zero: the ZeRO stage, 0 or 1 (the GPU trainer is always 1) */
    long zero = 0;
    if ((rc = sl_cfg_int(root, "optim.zero", 0, &zero)))
        return rc;
    if (zero != 0 && zero != 1) {
        struct sl_cfg *n = sl_cfg_get(root, "optim.zero");
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: optim.zero: must be 0 or 1 (the ZeRO stage), got %ld\nhint: 1 "
                          "shards the AdamW moments over the data-parallel ranks",
                          n ? sl_cfg_where(n) : "config", zero);
    }
    o->par.zero = (int)zero;
    o->zero_off = !zero && sl_cfg_get(root, "optim.zero");
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
    if ((rc = sl_cfg_u64(root, "data.seed", o->seed, &o->data_seed)))
        return rc;
    struct sl_cfg *tn = sl_cfg_get(root, "eval.tasks");
    if (tn) {
        const char **items = NULL;
        size_t n = 0;
        const char *one = NULL;
        if (tn->kind == SL_CFG_SEQ) {
            if ((rc = sl_cfg_strs(root, "eval.tasks", &items, &n)))
                return rc;
        } else if ((rc = sl_cfg_str(root, "eval.tasks", NULL, &one))) {
            return rc;
        } else if (one) {
            items = &one;
            n = 1;
        }
        o->eval_tasks = sl_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
            o->eval_tasks[i] = sl_xstrdup(items[i]);
        if (items != &one)
            free(items);
    }
    if ((rc = cfg_nonneg(root, "eval.task_limit", 0, &o->eval_task_limit, 0)) ||
        (rc = cfg_nonneg(root, "eval.interval", 0, &o->eval_interval, 0)) ||
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

/* parallel.*, and the memory per rank it implies (train/parallel.h) as comments */
static void print_parallel(const struct train_opts *o, FILE *f)
{
    struct parallel_memory cpu, gpu;
    long accum = o->global_batch / (o->micro_batch * o->par.dp);
    parallel_memory_estimate(&o->par, &o->mc, o->micro_batch, o->seq_len, accum, 0, -1, &cpu);
    parallel_memory_estimate(&o->par, &o->mc, o->micro_batch, o->seq_len, accum, 1, -1, &gpu);
    char a[32], b[32], c[32], d[32];
    fprintf(f,
            "parallel:\n  tensor: %d\n  pipeline: %d\n  virtual_stages: %d\n  sequence: %s\n"
            "  # data parallel: %d "
            "(%d ranks / (tensor x pipeline))\n"
            "  # per rank: %llu parameters; CPU fp32: %s weights + gradients + AdamW%s, %s "
            "activations; GPU bf16 + ZeRO-1: %s + %s activations\n",
            o->par.tp, o->par.pp, o->par.vp, o->par.sp ? "true" : "false", o->par.dp, o->par.world,
            (unsigned long long)cpu.params, sl_human_bytes(cpu.weights_bytes, a, sizeof(a)),
            o->par.zero ? " (ZeRO-1)" : "", sl_human_bytes(cpu.act_bytes, b, sizeof(b)),
            sl_human_bytes(gpu.weights_bytes, c, sizeof(c)),
            sl_human_bytes(gpu.act_bytes, d, sizeof(d)));
}

/* --print-config: the configuration as the run would use it, every key with its value
 * (defaults and values taken from the data included), as YAML that `sluice train` reads back. */
static void print_config(const struct train_opts *o, FILE *f)
{
    const struct model_config *c = &o->mc;
    static const char *const dev[] = { "auto", "cpu", "cuda" };
    static const char *const attn[] = { "auto", "cudnn", "flash" };
    static const char *const rec[] = { "none", "selective", "full" };
    static const char *const red[] = { "fp32", "bf16" };
    fprintf(f, "model:\n  vocab_size: %d  # %s; padded to %d rows\n", c->vocab_size,
            o->vocab_from_data ? "from the data's tokenize manifest" : "from the config",
            c->padded_vocab_size);
    struct sl_buf y = SL_BUF_INIT;
    model_config_to_yaml(c, &y);
    fputs(y.data, f);
    sl_buf_release(&y);
    if (o->synthetic)
        fprintf(f, "data: synthetic\n");
    else {
        static const char *const sk[] = { "train", "validation", "test" };
        if (o->split_prefix[0] || o->split_prefix[1] || o->split_prefix[2]) {
            fprintf(f, "data:\n  prefix:\n");
            for (int k = 0; k < 3; k++)
                if (o->split_prefix[k])
                    fprintf(f, "    %s: \"%s\"\n", sk[k], o->split_prefix[k]);
            fprintf(f, "  split: \"%s\"\n", o->split);
        } else {
            fprintf(f, "data:\n  prefix: \"%s\"\n  split: \"%s\"\n", o->prefix, o->split);
        }
        if (o->cache_dir)
            fprintf(f, "  cache_dir: \"%s\"\n", o->cache_dir);
        if (o->megatron_tokenizer)
            fprintf(f, "  megatron_tokenizer: '%s'\n", o->megatron_tokenizer);
        if (o->megatron_path_map)
            fprintf(f, "  megatron_path_map: \"%s\"\n", o->megatron_path_map);
        if (o->surplus >= 0)
            fprintf(f, "  mid_level_dataset_surplus: %.17g\n", o->surplus);
        fprintf(f, "  normalize_weights: %s\n  seed: %llu\n",
                o->normalize_weights ? "true" : "false", (unsigned long long)o->data_seed);
        if (o->data.tokenizer)
            fprintf(f, "  # tokenizer: %s (%ld ids, end of document %ld) from %s\n",
                    o->data.tokenizer, o->data.vocab_size, o->data.eod_id, o->data.manifest);
    }
    fprintf(f,
            "train:\n  seq_len: %ld\n  micro_batch_size: %ld\n  global_batch_size: %ld\n"
            "  steps: %ld\n  threads: %ld\n  seed: %llu\n  resume: %s\n  on_nan: %s\n"
            "  device: %s\n  attention: %s\n  recompute: %s\n  grad_reduce_dtype: %s\n"
            "  deterministic: %s\n",
            o->seq_len, o->micro_batch, o->global_batch, o->steps, o->threads,
            (unsigned long long)o->seed, o->resume, o->on_nan_skip ? "skip" : "stop",
            dev[o->device], attn[o->attention], rec[o->recompute], red[o->grad_reduce],
            o->deterministic ? "true" : "false");
    if (o->dump_grads)
        fprintf(f, "  dump_grads: %s\n", o->dump_grads);
    print_parallel(o, f);
    fprintf(f,
            "optim:\n  lr: %.17g\n  min_lr: %.17g\n  warmup_steps: %ld\n  decay_steps: %ld\n"
            "  decay_style: %s\n  wsd_decay_fraction: %.17g\n  weight_decay: %.17g\n"
            "  beta1: %.17g\n  beta2: %.17g\n  eps: %.17g\n  clip_grad: %.17g\n",
            o->lr.lr, o->lr.min_lr, o->lr.warmup_steps, o->lr.decay_steps,
            lr_decay_name(o->lr.style), o->lr.wsd_fraction, o->adam.weight_decay, o->adam.beta1,
            o->adam.beta2, o->adam.eps, o->clip);
    if (o->par.zero || o->zero_off)
        fprintf(f, "  zero: %d\n", o->par.zero);
    fprintf(f, "eval:\n  interval: %ld\n  iters: %ld\n  task_limit: %ld\n", o->eval_interval,
            o->eval_iters, o->eval_task_limit);
    if (o->eval_tasks && o->eval_tasks[0]) {
        fprintf(f, "  tasks:\n");
        for (size_t i = 0; o->eval_tasks[i]; i++)
            fprintf(f, "    - \"%s\"\n", o->eval_tasks[i]);
    }
    fprintf(f, "checkpoint:\n");
    if (o->ckpt_dir)
        fprintf(f, "  dir: %s\n", o->ckpt_dir);
    fprintf(f, "  interval: %ld\n  keep_last: %ld\n", o->ckpt_interval, o->keep_last);
    fprintf(f, "log:\n  interval: %ld\n  peak_tflops: %.17g\n", o->log_interval, o->peak_tflops);
    if (o->log_file)
        fprintf(f, "  file: %s\n", o->log_file);
    if (o->tb_dir)
        fprintf(f, "  tensorboard_dir: %s\n", o->tb_dir);
    if (o->dump_dir)
        fprintf(f, "debug:\n  dump_dir: %s\n  dump_steps: %ld\n", o->dump_dir, o->dump_steps);
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
    /* eval.tasks (rank 0): the tasks, the data's tokenizer, the weights on the host */
    struct eval_task *tasks;
    size_t ntasks;
    struct tokenizer *tok;
    float *host_params;
    struct eval_scorer *scorer;
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

/* eval.tasks: load the task files and the data's tokenizer (rank 0). */
static int open_tasks(struct trainer *t)
{
    const struct train_opts *o = &t->o;
    size_t n = 0;
    while (o->eval_tasks && o->eval_tasks[n])
        n++;
    if (!n)
        return 0;
    if (!o->eval_interval)
        return sl_err_set(SL_ERR_CONFIG, "eval.tasks needs eval.interval (the steps between "
                                         "evaluations; they also run at the last step)");
    if (!o->data.tokenizer)
        return sl_err_set(SL_ERR_CONFIG,
                          "eval.tasks needs the data's tokenizer, and no tokenize manifest names "
                          "one%s\nhint: tasks are text; train on shards from sluice tokenize",
                          o->synthetic ? " (data=synthetic)" : "");
    if (t->w->rank != 0)
        return 0;
    int rc = tokenizer_open(&t->tok, o->data.tokenizer);
    t->tasks = sl_xcalloc(n, sizeof(*t->tasks));
    for (size_t i = 0; i < n && !rc; i++) {
        rc = eval_task_load(&t->tasks[i], o->eval_tasks[i], (size_t)o->eval_task_limit);
        if (!rc) {
            t->ntasks = i + 1;
            if (t->tasks[i].skipped)
                sl_warn("eval.tasks: %llu lines of '%s' skipped; the first: %s",
                        (unsigned long long)t->tasks[i].skipped, t->tasks[i].path,
                        t->tasks[i].first_bad);
            sl_info("eval.tasks: '%s' (%s, %zu items)", t->tasks[i].path, t->tasks[i].format,
                    t->tasks[i].n);
        }
    }
    if (!rc) {
        t->host_params = aligned_alloc(64, sl_mul_size((t->l.total + 15) / 16 * 16, sizeof(float)));
        if (!t->host_params)
            rc = sl_err_set(SL_ERR_NOMEM, "cannot allocate the host copy of the weights");
        else
            memset(t->host_params, 0, t->l.total * sizeof(float));
    }
    if (!rc)
        rc = eval_scorer_new(&t->scorer, &o->mc, &t->l, t->host_params, o->mc.max_seq_len);
    return rc;
}

/* Score the tasks with the current weights (gathered to rank 0, which scores them) and
 * report them. Collective. */
static int run_tasks(struct trainer *t, long step)
{
    int rc = t->be->params_host
                 ? t->be->params_host(t->ctx, t->w->rank == 0 ? t->host_params : NULL)
                 : sl_err_set(SL_ERR_UNSUPPORTED,
                              "the %s backend cannot copy its weights to the host", t->be->name);
    if (t->w->rank != 0)
        return rc;
    int64_t eod = t->o.data.eod_id >= 0 ? t->o.data.eod_id : t->tok->eod_id;
    for (size_t i = 0; i < t->ntasks && !rc; i++) {
        struct eval_result r;
        rc = eval_task_run(&t->tasks[i], t->tok, eod, t->scorer, &r, NULL);
        if (!rc) {
            const char *name = strrchr(t->tasks[i].path, '/');
            name = name ? name + 1 : t->tasks[i].path;
            char base[128];
            snprintf(base, sizeof(base), "%s", name);
            char *dot = strstr(base, ".jsonl");
            if (dot)
                *dot = 0;
            int lam = t->tasks[i].kind == EVAL_LAMBADA;
            train_report_task(t->log, t->tlog, step, base, lam ? "perplexity" : "acc_norm", r.acc,
                              t->tasks[i].kind == EVAL_LAMBADA ? r.ppl : r.acc_norm, r.items,
                              r.seconds);
        }
    }
    return rc;
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
            if (o->eval_tasks && o->eval_tasks[0] && (rc = all_ok(t, run_tasks(t, step)))) {
                sl_error("eval.tasks: %s", sl_err_msg());
                return rc;
            }
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
    int split = t->o.par.tp * t->o.par.pp > 1; /* model parallelism: the CPU path only */
    if (split && t->o.device == TRAIN_DEVICE_CUDA) {
        if (t->w->rank == 0)
            sl_error("train.device=cuda: parallel.tensor and parallel.pipeline run on the CPU "
                     "path only\nhint: train.device=cpu, or data parallel on the GPU");
        return 1;
    }
    if (t->o.device != TRAIN_DEVICE_CPU && !split)
        gpu = gpu_train_backend(why, sizeof(why));
    int64_t have = gpu != NULL;
    sl_world_allreduce_i64(t->w, &have, 1, SL_MIN);
    t->be = have ? gpu : &train_backend_cpu;
    if (have && t->o.zero_off && t->w->rank == 0)
        sl_warn("optim.zero=0 is for the CPU path: the GPU trainer always shards its optimizer "
                "state over the ranks (ZeRO-1)");
    if (t->o.device == TRAIN_DEVICE_CUDA && !have) {
        if (t->w->rank == 0)
            sl_error("train.device=cuda: %s%s", why[0] ? why : "a rank has no CUDA device",
                     strstr(why, "hint:") ? "" : "\nhint: train.device=auto falls back to the CPU");
        return 1;
    }
    if (have || t->w->rank != 0)
        return 0;
    if (split && t->o.device != TRAIN_DEVICE_CPU)
        sl_info("model parallelism (parallel.tensor x parallel.pipeline = %d) runs on the CPU "
                "path: training on the CPU (%d threads x %d ranks)",
                t->o.par.tp * t->o.par.pp, threads, t->w->size);
    else if (t->o.device == TRAIN_DEVICE_CPU)
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

/* The data loader failed on prefix: add a hint when a path of it is not a .bin/.idx pair
 * but names one that sluice tokenize wrote (tokens/web -> tokens/web_text_document). */
static void add_prefix_hint(const char *prefix)
{
    char *all = sl_xstrdup(prefix), *save = NULL;
    for (char *w = strtok_r(all, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
        char *h = data_info_prefix_hint(w);
        if (h && !strstr(sl_err_msg(), "hint:")) {
            char *msg = sl_xasprintf("%s%s", sl_err_msg(), h);
            sl_err_set(SL_ERR_NOTFOUND, "%s", msg);
            free(msg);
        }
        free(h);
        if (h)
            break;
    }
    free(all);
}

/* A resumed run appends to log.file: drop the lines of the steps after the checkpoint
 * (they ran, but the run goes on from the checkpoint and logs them again). */
static int trim_log(const char *path, long step)
{
    struct sl_buf b = SL_BUF_INIT, out = SL_BUF_INIT;
    b.max = (size_t)1 << 34;
    int rc = sl_read_file(path, &b);
    if (rc) {
        sl_buf_release(&b);
        return 0; /* no log yet */
    }
    size_t dropped = 0;
    for (size_t i = 0; i < b.len;) {
        const char *line = b.data + i, *nl = memchr(line, '\n', b.len - i);
        size_t n = nl ? (size_t)(nl - line) + 1 : b.len - i;
        const char *sp = NULL;
        for (size_t k = 0; k + 7 < n && !sp; k++)
            if (!memcmp(line + k, "\"step\":", 7))
                sp = line + k + 7;
        if (sp && strtol(sp, NULL, 10) > step)
            dropped++;
        else
            sl_buf_append(&out, line, n);
        i += n;
    }
    if (dropped)
        rc = sl_write_file_atomic(path, out.data ? out.data : "", out.len);
    if (!rc && dropped)
        sl_info("log.file '%s': %zu lines of steps after %ld dropped (they run again)", path,
                dropped, step);
    sl_buf_release(&b);
    sl_buf_release(&out);
    return rc;
}

static int open_data(struct trainer *t)
{
    const struct train_opts *o = &t->o;
    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.prefix = o->synthetic ? NULL : o->prefix;
    for (int k = 0; k < 3 && !o->synthetic; k++)
        dopt.split_prefix[k] = o->split_prefix[k];
    dopt.split = o->split;
    dopt.seq_len = (uint64_t)o->seq_len;
    dopt.seed = (uint32_t)o->data_seed;
    dopt.num_samples[DATA_TRAIN] =
        (uint64_t)(o->steps > 0 ? o->steps : 1) * (uint64_t)o->global_batch;
    /* the batches every validation reads (Megatron asks (steps / interval + 1) times as many
     * and reads new ones each time: its valid cache has another name) */
    if (o->eval_interval)
        dopt.num_samples[DATA_VALID] = (uint64_t)o->eval_iters * (uint64_t)o->global_batch;
    dopt.vocab_size = (uint64_t)o->mc.vocab_size;
    dopt.cache_dir = o->cache_dir;
    dopt.megatron_tokenizer = o->megatron_tokenizer;
    dopt.megatron_path_map = o->megatron_path_map;
    dopt.surplus = o->surplus >= 0 ? &o->surplus : NULL;
    dopt.normalize_weights = o->normalize_weights;
    dopt.write_cache = t->w->rank == 0;
    double td = sl_now();
    int rc = data_loader_open(&t->data, &dopt);
    if (rc && !o->synthetic)
        add_prefix_hint(o->prefix);
    if ((rc = all_ok(t, rc)))
        return rc;
    if (t->w->rank != 0)
        return 0;
    if (data_loader_synthetic(t->data)) {
        sl_info("data: synthetic (uniform random token ids below %d)", o->mc.vocab_size);
    } else {
        int fewest, most;
        data_loader_epochs(t->data, DATA_TRAIN, &fewest, &most);
        char epochs[64];
        if (fewest == most)
            snprintf(epochs, sizeof(epochs), "%d epoch%s", most, most == 1 ? "" : "s");
        else
            snprintf(epochs, sizeof(epochs), "%d to %d epochs (by prefix)", fewest, most);
        sl_info("data: %d prefix%s, %llu tokens, split %s; train index: %s (%s, %.2f s)",
                data_loader_prefixes(t->data), data_loader_prefixes(t->data) > 1 ? "es" : "",
                (unsigned long long)data_loader_tokens(t->data), o->split, epochs,
                data_loader_cached(t->data) ? "from the cache" : "built", sl_now() - td);
        if (data_loader_note(t->data))
            sl_warn("%s", data_loader_note(t->data));
        const struct data_info *di = &o->data;
        if (di->tokenizer)
            sl_info("data: tokenizer '%s' (%ld ids, end of document %ld, from '%s'); "
                    "model.vocab_size %d%s, padded to %d",
                    di->tokenizer, di->vocab_size, di->eod_id, di->manifest, o->mc.vocab_size,
                    o->vocab_from_data ? " from the data" : "", o->mc.padded_vocab_size);
        else
            sl_warn("data: no tokenize manifest beside '%s': model.vocab_size is %d, the end of "
                    "document id unknown\nhint: set model.vocab_size to the tokenizer's size",
                    o->prefix, o->mc.vocab_size);
        if (di->vocab_size > 0 && o->mc.padded_vocab_size - di->vocab_size >= 128)
            sl_warn("model.vocab_size %d is larger than the data's tokenizer (%ld ids): %d "
                    "embedding rows are never trained\nhint: leave model.vocab_size out to take "
                    "it from the data",
                    o->mc.vocab_size, di->vocab_size, o->mc.vocab_size - (int)di->vocab_size);
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

/* The model-parallel layout, and the memory estimate per rank against what this rank
 * allocated (fp32 weights, gradients and AdamW state; activations). */
static void log_parallel(const struct trainer *t, size_t act_bytes)
{
    const struct train_opts *o = &t->o;
    struct parallel_memory e; /* rank 0's: pipeline stage 0 */
    parallel_memory_estimate(&o->par, &o->mc, o->micro_batch, o->seq_len, o->accum, 0, 0, &e);
    size_t state = 0;
    uint64_t moments = 0, params = 0;
    if (t->be->state)
        t->be->state(t->ctx, &state, &moments, &params);
    char a[32], b[32], c[32], d[32];
    char vs[48] = "";
    if (o->par.vp > 1)
        snprintf(vs, sizeof(vs), " (%d interleaved virtual stages each)", o->par.vp);
    sl_info("parallel: tensor %d x pipeline %d%s x data %d%s (Megatron order, tensor fastest); "
            "memory of rank 0: estimate %s weights, gradients and AdamW (%llu parameters) + %s "
            "activations; allocated weights, gradients and AdamW %s (%.3f of the estimate); "
            "allocated activations %s (%.3f of the estimate)",
            o->par.tp, o->par.pp, vs, o->par.dp, o->par.sp ? ", sequence parallel" : "",
            sl_human_bytes(e.weights_bytes, a, sizeof(a)), (unsigned long long)e.params,
            sl_human_bytes(e.act_bytes, b, sizeof(b)), sl_human_bytes((double)state, d, sizeof(d)),
            e.weights_bytes > 0 ? (double)state / e.weights_bytes : 0.0,
            sl_human_bytes((double)act_bytes, c, sizeof(c)),
            e.act_bytes > 0 ? (double)act_bytes / e.act_bytes : 0.0);
    if (o->par.zero && o->par.dp > 1)
        sl_info("optim.zero=1: ZeRO-1 over %d data-parallel ranks: rank 0 keeps the AdamW "
                "moments of %llu of its %llu parameters",
                o->par.dp, (unsigned long long)moments, (unsigned long long)params);
}

/* The CPU path's memory, estimated before anything is allocated, against what this host
 * has (and what `ulimit -v` allows): a config of a million layers asked for terabytes and
 * died with a bare "out of memory". */
static int check_memory(const struct trainer *t)
{
    const struct train_opts *o = &t->o;
    struct parallel_memory e;
    parallel_memory_estimate(&o->par, &o->mc, o->micro_batch, o->seq_len, o->accum, 0, 0, &e);
    double need = e.weights_bytes + e.act_bytes;
    double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    struct rlimit rl;
    int limited = getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
                  (double)rl.rlim_cur < have;
    if (limited)
        have = (double)rl.rlim_cur;
    if (!(have > 0) || need <= have)
        return 0;
    char a[32], b[32], c[32], d[32];
    return sl_err_set(SL_ERR_CONFIG,
                      "one rank needs %s (weights, gradients and AdamW of %llu parameters: %s; "
                      "activations: %s), more than %s%s\nhint: fewer or smaller layers "
                      "(model.num_layers, model.hidden_size), a smaller train.micro_batch_size, "
                      "or more ranks with parallel.tensor / parallel.pipeline; --print-config "
                      "shows the estimate",
                      sl_human_bytes(need, a, sizeof(a)), (unsigned long long)e.params,
                      sl_human_bytes(e.weights_bytes, b, sizeof(b)),
                      sl_human_bytes(e.act_bytes, c, sizeof(c)), sl_human_bytes(have, d, sizeof(d)),
                      limited ? " (the address-space limit, ulimit -v)" : " (this machine's memory)");
}

static int train(struct sl_cfg *root, int print_only)
{
    struct trainer tr;
    memset(&tr, 0, sizeof(tr));
    struct trainer *t = &tr;
    t->w = sl_world_get();
    char *from = NULL;
    int rc = load_opts(&t->o, root, print_only ? 0 : t->w->size);
    if (rc) {
        sl_error("%s", sl_err_msg());
        free(t->o.prefix_list);
        data_info_release(&t->o.data);
        free_tasks(&t->o);
        return 2;
    }
    struct train_opts *o = &t->o;
    if (print_only) {
        if (t->w->rank == 0)
            print_config(o, stdout);
        free(o->prefix_list);
        data_info_release(&o->data);
        free_tasks(o);
        return 0;
    }
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
    if (!o->synthetic) {
        struct sl_buf dj = SL_BUF_INIT;
        data_info_to_json(&o->data, &dj);
        o->data_json = sl_buf_detach(&dj, NULL);
    }
    o->accum = o->global_batch / (o->micro_batch * o->par.dp);

    int threads = setup_threads(o->threads);
    if ((rc = choose_device(t, threads)) != 0)
        goto out;
    if (t->be == &train_backend_cpu && (rc = check_memory(t)) != 0) {
        if (t->w->rank == 0)
            sl_error("%s", sl_err_msg());
        rc = 2;
        goto out;
    }
    model_layout_init(&t->l, &o->mc);
    t->flops_per_token = model_flops_per_token(&o->mc, (int)o->seq_len);
    if (o->dump_grads && t->w->rank == 0 && sl_mkdir_p(o->dump_grads)) {
        sl_error("train.dump_grads: %s", sl_err_msg());
        rc = 1;
    }
    if (!(rc = all_ok(t, rc)) && (rc = all_ok(t, open_data(t))) && sl_err_msg()[0])
        sl_error("%s", sl_err_msg());
    if (!rc && (rc = all_ok(t, open_tasks(t))) && sl_err_msg()[0])
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
    t->st.data_json = o->data_json;
    t->st.tokenizer = o->synthetic ? NULL : o->data.tokenizer;
    if (from) {
        memcpy(t->rng.s, t->st.rng, sizeof(t->rng.s));
        if (t->w->rank == 0)
            sl_info("resumed from '%s' at step %ld (%llu samples consumed)", from, t->st.step,
                    (unsigned long long)t->st.consumed_samples);
        char *changed = t->w->rank == 0 ? ckpt_changed_settings(from, o->steps, o->optim_json)
                                        : NULL;
        if (changed)
            sl_warn("resuming '%s' with other settings than it was trained with: %s; the run "
                    "goes on from step %ld under the new ones (the learning rate schedule "
                    "follows optim.decay_steps, which is train.steps unless set)\nhint: to "
                    "continue as configured before, set the old values",
                    from, changed, t->st.step);
        free(changed);
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
                o->global_batch, o->micro_batch, o->par.dp, o->accum, o->seq_len,
                t->flops_per_token / 1e9);
        if (o->par.tp * o->par.pp > 1 || (o->par.zero && o->par.dp > 1))
            log_parallel(t, act_bytes);
        if (o->log_file && from)
            rc = trim_log(o->log_file, t->st.step);
        if (o->log_file && !rc) {
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
    eval_scorer_free(t->scorer);
    free(t->host_params);
    tokenizer_free(t->tok);
    for (size_t i = 0; i < t->ntasks; i++)
        eval_task_release(&t->tasks[i]);
    free(t->tasks);
    free_tasks(o);
    model_layout_release(&t->l);
    free(o->config_json);
    free(o->optim_json);
    free(o->data_json);
    free(o->prefix_list);
    data_info_release(&o->data);
    return rc;
}

struct opts {
    const char *tb;
    int print_only;
};

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_train_options[] = {
    SL_OPT_FLAG_(0, "print-config", print_only,
                 "print the resolved configuration (defaults and values from the data "
                 "included) as YAML and exit"),
    SL_OPT_STRING(0, "tensorboard", tb, "DIR",
                  "TensorBoard events and loss.svg in DIR (log.tensorboard_dir)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* CONFIG.yaml and its key=value overrides: a config that does not load fails before the
 * overrides are looked at (exit 2), a bad override is a usage error. */
static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct opts *o = opts;
    struct sl_cfg *root = NULL;
    size_t first = 0;
    int rc = 0;
    if (rest->n && !strchr(rest->v[0], '=')) {
        first = 1;
        if (sl_cfg_load_file(&root, rest->v[0])) {
            sl_error("%s", sl_err_msg());
            return 2;
        }
    }
    if (!root)
        rc = sl_err_set(SL_ERR_USAGE, "no config given");
    for (size_t i = first; !rc && i < rest->n; i++) {
        if (!strchr(rest->v[i], '='))
            rc = sl_err_set(SL_ERR_USAGE, "'%s' is not a key=value override", rest->v[i]);
        else
            rc = sl_cfg_override(root, rest->v[i]);
    }
    if (!rc && o->tb) {
        char *kv = sl_xasprintf("log.tensorboard_dir=%s", o->tb);
        rc = sl_cfg_override(root, kv);
        free(kv);
    }
    if (!rc)
        rc = train(root, o->print_only);
    else
        rc = sl_usage_error(cmd_train_usage);
    sl_cfg_free(root);
    return rc;
}

const struct sl_cmd cmd_train = SL_CMD(cmd_train_usage, cmd_train_options, struct opts, NULL, run);
