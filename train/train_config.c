/* The keys of `sluice train` (train/train_config.h): their table, the loader and
 * --print-config it drives.
 */
#include "train/train_config.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/log.h"
#include "core/progress.h"
#include "dataset/datainfo.h"
#include "tokenize/tokenizer.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/parallel.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* data.prefix in its forms: data=synthetic, a prefix or Megatron's blend, a list, or the
 * splits' own prefixes (NeMo's map, Megatron's data.*_data_path), joined with spaces. */
static int read_prefix(struct train_opts *o, struct sl_cfg *root)
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
    return 0;
}

/* ---- defaults from the keys read before -------------------------------------------------- */

static void def_seq_len(const struct train_opts *o, void *def)
{
    *(long *)def = o->mc.max_seq_len;
}

/* one micro-batch per data-parallel rank (the batch splits over them) */
static void def_global_batch(const struct train_opts *o, void *def)
{
    *(long *)def = o->micro_batch * o->par.dp;
}

/* SLUICE_TRAIN_DEVICE sets the default (the CLI tests pin the CPU reference path) */
static void def_device(const struct train_opts *o, void *def)
{
    (void)o;
    const char *env = getenv("SLUICE_TRAIN_DEVICE");
    *(const char **)def = env && *env ? env : "auto";
}

static void def_min_lr(const struct train_opts *o, void *def)
{
    *(double *)def = o->lr.lr * 0.1;
}

static void def_decay_steps(const struct train_opts *o, void *def)
{
    *(long *)def = o->steps;
}

static void def_data_seed(const struct train_opts *o, void *def)
{
    *(uint64_t *)def = o->seed;
}

/* ---- the keys that read or print themselves ----------------------------------------------- */

/* optim.zero: the ZeRO stage, 0 to 3 (the GPU trainer shards at least the moments: it
 * takes 0 as 1) */
static int read_zero(struct train_opts *o, struct sl_cfg *root)
{
    long zero = 0;
    int rc = sl_cfg_int(root, "optim.zero", 0, &zero);
    if (rc)
        return rc;
    if (zero < 0 || zero > 3) {
        struct sl_cfg *n = sl_cfg_get(root, "optim.zero");
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: optim.zero: must be 0, 1, 2 or 3 (the ZeRO stage), got %ld\nhint: "
                          "1 shards the AdamW moments over the data-parallel ranks, 2 the "
                          "gradients too, 3 the parameters too",
                          n ? sl_cfg_where(n) : "config", zero);
    }
    o->par.zero = (int)zero;
    o->zero_off = !zero && sl_cfg_get(root, "optim.zero");
    return 0;
}

static void print_zero(const struct train_opts *o, FILE *f)
{
    if (o->par.zero || o->zero_off)
        fprintf(f, "  zero: %d\n", o->par.zero);
}

/* eval.tasks: a path or a list of them */
static int read_tasks(struct train_opts *o, struct sl_cfg *root)
{
    struct sl_cfg *tn = sl_cfg_get(root, "eval.tasks");
    if (!tn)
        return 0;
    const char **items = NULL;
    size_t n = 0;
    const char *one = NULL;
    int rc;
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
    return 0;
}

static void print_tasks(const struct train_opts *o, FILE *f)
{
    if (!o->eval_tasks || !o->eval_tasks[0])
        return;
    fprintf(f, "  tasks:\n");
    for (size_t i = 0; o->eval_tasks[i]; i++)
        fprintf(f, "    - \"%s\"\n", o->eval_tasks[i]);
}

static void print_prefix(const struct train_opts *o, FILE *f)
{
    static const char *const sk[] = { "train", "validation", "test" };
    if (o->split_prefix[0] || o->split_prefix[1] || o->split_prefix[2]) {
        fprintf(f, "  prefix:\n");
        for (int k = 0; k < 3; k++)
            if (o->split_prefix[k])
                fprintf(f, "    %s: \"%s\"\n", sk[k], o->split_prefix[k]);
    } else {
        fprintf(f, "  prefix: \"%s\"\n", o->prefix);
    }
}

/* ---- the table ------------------------------------------------------------------------------ */

/* The offset of member m of struct train_opts, which must be of type T (else a compiler
 * warning, as SL_OPT_OFF_ does for option rows). */
#define TK_OFF(T, m)                                                                               \
    (offsetof(struct train_opts, m) + 0 * sizeof(&((struct train_opts *)0)->m == (T *)0))
/* clang-format off */
#define K_LONG(p, ph, m, d, mn, h) \
    { .path = p, .type = TK_LONG, .phase = ph, .off = TK_OFF(long, m), .def_l = d, .min = mn, \
      .help = h }
#define K_U64(p, ph, m, d, h) \
    { .path = p, .type = TK_U64, .phase = ph, .off = TK_OFF(uint64_t, m), .def_l = d, .help = h }
#define K_DOUBLE(p, ph, m, d, h) \
    { .path = p, .type = TK_DOUBLE, .phase = ph, .off = TK_OFF(double, m), .def_d = d, .help = h }
#define K_BOOL(p, ph, m, d, h) \
    { .path = p, .type = TK_BOOL, .phase = ph, .off = TK_OFF(int, m), .def_l = d, .help = h }
#define K_STR(p, ph, m, d, q, h) \
    { .path = p, .type = TK_STR, .phase = ph, .off = TK_OFF(const char *, m), .def_s = d, \
      .quote = q, .help = h }
/* a string without a default, shown when set */
#define K_STR_SET(p, ph, m, q, h) \
    { .path = p, .type = TK_STR, .phase = ph, .off = TK_OFF(const char *, m), .quote = q, \
      .show = TS_IF_SET, .help = h }
#define K_CHOICE(p, ph, m, d, names, h) \
    { .path = p, .type = TK_CHOICE, .phase = ph, .off = TK_OFF(int, m), .def_s = d, \
      .choices = names, .help = h }
/* a double in [l, u], an end open where its flag is 1 */
#define K_RANGE(p, ph, m, d, l, u, lopen, hopen, h) \
    { .path = p, .type = TK_DOUBLE, .phase = ph, .off = TK_OFF(double, m), .def_d = d, \
      .range = 1, .lo = l, .hi = u, .lo_open = lopen, .hi_open = hopen, .help = h }
#define K_OWN(p, ph, rd, pr, h) \
    { .path = p, .type = TK_OWN, .phase = ph, .read = rd, .print = pr, .help = h }
#define K_ELSEWHERE(p, h) { .path = p, .type = TK_ELSEWHERE, .show = TS_NEVER, .help = h }
/* clang-format on */

/* optim.decay_style is read into an enum through an int */
_Static_assert(sizeof(enum lr_decay) == sizeof(int), "enum lr_decay is read as an int");

static const char *const on_nan_names[] = { "stop", "skip", NULL };
static const char *const device_names[] = { "auto", "cpu", "cuda", NULL };
static const char *const attention_names[] = { "auto", "cudnn", "flash", NULL };
static const char *const recompute_names[] = { "none", "selective", "full", NULL };
static const char *const reduce_names[] = { "fp32", "bf16", NULL };
static const char *const comm_names[] = { "auto", "nccl", "mpi", NULL };
static const char *const fp8_names[] = { "none", "delayed", "current", NULL };
static const char *const decay_names[] = { "cosine", "linear", "constant", "wsd", NULL };

/* In the order they are read (train_config_load); --print-config shows each section in
 * this order too, but for the keys given a later print_rank. */
/* clang-format off */
const struct train_key train_keys[] = {
    K_OWN("data.prefix", TP_PREFIX, read_prefix, print_prefix,
          "PREFIX, Megatron's \"W1 PREFIX1 W2 PREFIX2 ...\", or a list; synthetic"),
    K_ELSEWHERE("data", "data=synthetic: uniform random token ids (read with data.prefix)"),
    K_ELSEWHERE("data.prefix.train", "the train split's own prefixes (read with data.prefix)"),
    K_ELSEWHERE("data.prefix.validation", "the validation split's own prefixes"),
    K_ELSEWHERE("data.prefix.test", "the test split's own prefixes"),
    K_ELSEWHERE("data.train_data_path", "data.prefix.train in Megatron's name"),
    K_ELSEWHERE("data.valid_data_path", "data.prefix.validation in Megatron's name"),
    K_ELSEWHERE("data.test_data_path", "data.prefix.test in Megatron's name"),
    /* Megatron's default --split, spelled as Megatron spells it (its cache names hash it) */
    K_STR("data.split", TP_DATA, split, "969, 30, 1", "\"", "train, valid, test shares"),
    K_STR_SET("data.cache_dir", TP_DATA, cache_dir, "\"", "where the index .npy files go"),
    { .path = "data.normalize_weights", .type = TK_BOOL, .phase = TP_DATA,
      .off = TK_OFF(int, normalize_weights), .print_rank = 1,
      .help = "divide blend weights by their sum" },
    K_BOOL("data.reset_position_ids", TP_DATA, docs.reset_pos, 0,
           "positions restart at each document (after each end-of-document token)"),
    K_BOOL("data.reset_attention_mask", TP_DATA, docs.reset_attn, 0,
           "a token attends only to earlier tokens of its own document"),
    K_BOOL("data.eod_mask_loss", TP_DATA, docs.mask_loss, 0,
           "no loss where the input token is the end-of-document token"),
    K_STR_SET("data.megatron_tokenizer", TP_DATA, megatron_tokenizer, "'",
              "the tokenizer Megatron-LM is given (its cache names hash it)"),
    K_STR_SET("data.megatron_path_map", TP_DATA, megatron_path_map, "\"",
              "FROM=TO: the prefixes as Megatron will be given them"),
    { .path = "data.mid_level_dataset_surplus", .type = TK_DOUBLE, .phase = TP_DATA,
      .off = TK_OFF(double, surplus), .def_d = -1.0, .show = TS_IF_SET,
      .help = "Megatron's --mid-level-dataset-surplus (< 0: Megatron's default)" },
    K_ELSEWHERE("parallel.tensor", "tensor-parallel ranks (parallel_config_load)"),
    K_ELSEWHERE("parallel.pipeline", "pipeline stages"),
    K_ELSEWHERE("parallel.virtual_stages", "interleaved virtual stages per stage"),
    K_ELSEWHERE("parallel.sequence", "sequence parallel"),
    K_ELSEWHERE("parallel.data", "data-parallel replicas (checked against the world)"),
    { .path = "train.seq_len", .type = TK_LONG, .phase = TP_TRAIN, .off = TK_OFF(long, seq_len),
      .def = def_seq_len, .min = 1, .help = "tokens per sample" },
    K_LONG("train.micro_batch_size", TP_TRAIN, micro_batch, 4, 1,
           "sequences per forward/backward on one rank"),
    { .path = "train.global_batch_size", .type = TK_LONG, .phase = TP_TRAIN,
      .off = TK_OFF(long, global_batch), .def = def_global_batch, .min = 1,
      .help = "sequences per optimizer step" },
    K_LONG("train.steps", TP_TRAIN, steps, 100, 0, "optimizer steps of the whole run"),
    K_LONG("train.threads", TP_TRAIN, threads, 0, 0, "OpenMP threads per rank (0: cores)"),
    K_U64("train.seed", TP_TRAIN, seed, 1234, "initialisation (and the default data.seed)"),
    K_STR("train.resume", TP_TRAIN, resume, "auto", "", "auto, none or a step directory"),
    K_CHOICE("train.on_nan", TP_TRAIN, on_nan_skip, "stop", on_nan_names,
             "a non-finite loss or norm: stop, or skip the update"),
    { .path = "train.device", .type = TK_CHOICE, .phase = TP_TRAIN, .off = TK_OFF(int, device),
      .def = def_device, .choices = device_names, .help = "auto, cpu or cuda" },
    K_CHOICE("train.attention", TP_TRAIN, attention, "auto", attention_names,
             "GPU attention: auto, cudnn or flash"),
    K_CHOICE("train.recompute", TP_TRAIN, recompute, "none", recompute_names,
             "GPU activation recomputation"),
    K_CHOICE("train.grad_reduce_dtype", TP_TRAIN, grad_reduce, "fp32", reduce_names,
             "GPU: the dtype of the gradient reduce-scatter"),
    K_BOOL("train.deterministic", TP_TRAIN, deterministic, 0,
           "GPU: cuDNN's deterministic attention backward"),
    K_CHOICE("train.comm", TP_TRAIN, comm, "auto", comm_names,
             "GPU ranks talk over: auto, nccl or mpi (host-staged)"),
    K_STR_SET("train.dump_grads", TP_TRAIN, dump_grads, "",
              "a directory for the gradient of step 1"),
    K_CHOICE("train.fp8", TP_TRAIN, fp8, "none", fp8_names,
             "the linear layers in FP8: none, delayed or current scaling"),
    /* Transformer Engine's DelayedScaling defaults (amax_history_len=1024, margin=0) */
    K_LONG("train.fp8_amax_history_len", TP_TRAIN, fp8_history, 1024, 1,
           "delayed scaling: steps of amax history"),
    K_LONG("train.fp8_margin", TP_TRAIN, fp8_margin, 0, 0,
           "delayed scaling: scales divided by 2^margin"),
    K_RANGE("optim.lr", TP_OPTIM, lr.lr, 6e-4, 0, INFINITY, 0, 1, "peak learning rate"),
    { .path = "optim.min_lr", .type = TK_DOUBLE, .phase = TP_OPTIM,
      .off = TK_OFF(double, lr.min_lr), .def = def_min_lr, .range = 1, .hi = INFINITY,
      .hi_open = 1, .help = "final learning rate" },
    K_LONG("optim.warmup_steps", TP_OPTIM, lr.warmup_steps, 0, 0, "linear warmup from 0"),
    { .path = "optim.decay_steps", .type = TK_LONG, .phase = TP_OPTIM,
      .off = TK_OFF(long, lr.decay_steps), .def = def_decay_steps,
      .help = "the step at which the decay reaches min_lr" },
    { .path = "optim.decay_style", .type = TK_CHOICE, .phase = TP_OPTIM,
      .off = offsetof(struct train_opts, lr.style), .def_s = "cosine", .choices = decay_names,
      .help = "cosine, linear, constant or wsd" },
    { .path = "optim.wsd_decay_fraction", .type = TK_DOUBLE, .phase = TP_OPTIM,
      .off = TK_OFF(double, lr.wsd_fraction), .def_d = 0.2, .range = 1, .lo = 0, .hi = 1,
      .check_rank = 1, .help = "wsd: the share of the steps spent decaying" },
    K_RANGE("optim.weight_decay", TP_OPTIM, adam.weight_decay, 0.1, 0, INFINITY, 0, 1,
            "decoupled (AdamW)"),
    K_RANGE("optim.beta1", TP_OPTIM, adam.beta1, 0.9, 0, 1, 0, 1, "AdamW's beta1"),
    K_RANGE("optim.beta2", TP_OPTIM, adam.beta2, 0.95, 0, 1, 0, 1, "AdamW's beta2"),
    K_RANGE("optim.eps", TP_OPTIM, adam.eps, 1e-8, 0, INFINITY, 1, 1, "AdamW's epsilon"),
    K_RANGE("optim.clip_grad", TP_OPTIM, clip, 1.0, 0, INFINITY, 0, 1,
            "clip by global norm (0: off)"),
    K_OWN("optim.zero", TP_OPTIM, read_zero, print_zero, "the ZeRO stage: 0, 1, 2 or 3"),
    { .path = "data.seed", .type = TK_U64, .phase = TP_LATE, .off = TK_OFF(uint64_t, data_seed),
      .def = def_data_seed, .print_rank = 1, .help = "Megatron's --seed for the shuffles" },
    { .path = "eval.tasks", .type = TK_OWN, .phase = TP_LATE, .read = read_tasks,
      .print = print_tasks, .print_rank = 2, .help = "zero-shot task files" },
    { .path = "eval.task_limit", .type = TK_LONG, .phase = TP_LATE,
      .off = TK_OFF(long, eval_task_limit), .print_rank = 1,
      .help = "score the first N items of each task file (0: all)" },
    K_LONG("eval.interval", TP_LATE, eval_interval, 0, 0, "validation every N steps"),
    K_LONG("eval.iters", TP_LATE, eval_iters, 10, 1, "global batches of a validation"),
    K_STR_SET("checkpoint.dir", TP_LATE, ckpt_dir, "", "where checkpoints go"),
    K_LONG("checkpoint.interval", TP_LATE, ckpt_interval, 0, 0, "save every N steps"),
    K_LONG("checkpoint.keep_last", TP_LATE, keep_last, 3, 0, "keep the newest N"),
    { .path = "log.file", .type = TK_STR, .phase = TP_LATE, .off = TK_OFF(const char *, log_file),
      .quote = "", .show = TS_IF_SET, .print_rank = 1, .help = "JSON lines of the run" },
    { .path = "log.tensorboard_dir", .type = TK_STR, .phase = TP_LATE,
      .off = TK_OFF(const char *, tb_dir), .quote = "", .show = TS_IF_SET, .print_rank = 1,
      .help = "TensorBoard events and loss.svg (none: off)" },
    K_LONG("log.interval", TP_LATE, log_interval, 1, 1, "steps between logged steps"),
    K_DOUBLE("log.peak_tflops", TP_LATE, peak_tflops, 0.0, "peak TFLOP/s of a device, for MFU"),
    K_STR_SET("debug.dump_dir", TP_LATE, dump_dir, "", "early steps as safetensors"),
    K_LONG("debug.dump_steps", TP_LATE, dump_steps, 1, 0, "how many early steps"),
    { .path = NULL },
};
/* clang-format on */

/* Read row k into its member. */
static int read_key(struct train_opts *o, struct sl_cfg *root, const struct train_key *k)
{
    void *m = (char *)o + k->off;
    switch (k->type) {
    case TK_LONG: {
        long def = k->def_l;
        if (k->def)
            k->def(o, &def);
        return cfg_nonneg(root, k->path, def, m, k->min);
    }
    case TK_U64: {
        uint64_t def = (uint64_t)k->def_l;
        if (k->def)
            k->def(o, &def);
        return sl_cfg_u64(root, k->path, def, m);
    }
    case TK_DOUBLE: {
        double def = k->def_d;
        if (k->def)
            k->def(o, &def);
        return sl_cfg_double(root, k->path, def, m);
    }
    case TK_BOOL:
        return sl_cfg_bool(root, k->path, (int)k->def_l, m);
    case TK_STR:
    case TK_CHOICE: {
        const char *def = k->def_s;
        if (k->def)
            k->def(o, &def);
        return k->type == TK_STR ? sl_cfg_str(root, k->path, def, m)
                                 : cfg_choice(root, k->path, def, k->choices, m);
    }
    case TK_OWN:
        return k->read(o, root);
    case TK_ELSEWHERE:
        break;
    }
    return 0;
}

/* The rows of one phase, in the table's order. */
static int read_phase(struct train_opts *o, struct sl_cfg *root, enum train_key_phase phase)
{
    for (const struct train_key *k = train_keys; k->path; k++) {
        int rc = k->phase == phase ? read_key(o, root, k) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* The ranges of the phase's doubles: a negative rate, a beta outside [0, 1) or a NaN anywhere
 * would train to garbage (or to NaN) without an error. */
static int check_ranges(const struct train_opts *o, struct sl_cfg *root, enum train_key_phase phase)
{
    /* ranks 0 and 1: the schedule's wsd fraction is told after the optimizer's own ranges */
    for (int rank = 0; rank < 2; rank++) {
        for (const struct train_key *k = train_keys; k->path; k++) {
            if (k->phase != phase || k->type != TK_DOUBLE || !k->range || k->check_rank != rank)
                continue;
            double v = *(const double *)((const char *)o + k->off);
            int rc = cfg_range(root, k->path, v, k->lo, k->hi, !k->lo_open, !k->hi_open);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* The data keys (data=synthetic or data.prefix, then the rest of data.*), and
 * model.vocab_size from the data's tokenizer when the config leaves it out
 * (dataset/datainfo.h). */
static int load_data_opts(struct train_opts *o, struct sl_cfg *root)
{
    int rc = read_phase(o, root, TP_PREFIX);
    if (rc || o->synthetic)
        return rc;
    if ((rc = read_phase(o, root, TP_DATA)))
        return rc;
    if (o->prefix && !strcmp(o->prefix, "synthetic")) {
        o->synthetic = 1;
        return 0;
    }
    /* data=synthetic (above) is the one way to train on random tokens, as Megatron's
     * random-token option is; a config that names no data stops here */
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

/* The batch against the model and the layout: seq_len within the model's positions, the
 * global batch a multiple of micro x data-parallel ranks, the interleaved schedule's and
 * sequence parallel's divisibility. ranks: the world given to train_config_load. */
static int check_batch(const struct train_opts *o, struct sl_cfg *root, int ranks)
{
    int world = o->par.dp; /* the batch splits over data-parallel ranks */
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
    return 0;
}

/* The document settings (train/docmask.h) need the data's end-of-document id. */
static int check_docs(struct train_opts *o, struct sl_cfg *root)
{
    static const char *const keys[] = { "data.reset_position_ids", "data.reset_attention_mask",
                                        "data.eod_mask_loss" };
    const char *on = NULL;
    for (int i = 0; i < 3 && !on; i++) {
        int v = 0;
        if (sl_cfg_get(root, keys[i]) && sl_cfg_bool(root, keys[i], 0, &v) == 0 && v)
            on = keys[i];
    }
    if (o->synthetic && on)
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: data=synthetic has no documents (no end-of-document token)\nhint: "
                          "train on tokenized data (data.prefix) to mask at document boundaries",
                          on);
    o->docs.eod = o->data.eod_id;
    if (on && o->data.eod_id < 0)
        return sl_err_set(SL_ERR_CONFIG,
                          "%s needs the data's end-of-document id, and no manifest of "
                          "data.prefix gives one\nhint: tokenize the data with sluice tokenize "
                          "(its PREFIX.manifest.json records eod_id)",
                          on);
    return 0;
}

int train_config_load(struct train_opts *o, struct sl_cfg *root, int world)
{
    memset(o, 0, sizeof(*o));
    o->data.vocab_size = o->data.eod_id = -1;
    int rc;
    if ((rc = load_data_opts(o, root)) || (rc = model_config_load(&o->mc, root)) ||
        (rc = check_vocab(o, root)) || (rc = parallel_config_load(&o->par, root, world, &o->mc)) ||
        (rc = read_phase(o, root, TP_TRAIN)) || (rc = check_batch(o, root, world)) ||
        (rc = read_phase(o, root, TP_OPTIM)) || (rc = check_ranges(o, root, TP_OPTIM)) ||
        (rc = read_phase(o, root, TP_LATE)) || (rc = check_docs(o, root)))
        return rc;
    if (o->data_seed > 0xffffffffu)
        return sl_err_set(SL_ERR_CONFIG, "data.seed must be below 2^32 (numpy's RandomState)");
    return sl_cfg_check_unused(root);
}

void train_config_release(struct train_opts *o)
{
    for (int k = 0; k < 3; k++) {
        free(o->split_prefix[k]);
        o->split_prefix[k] = NULL;
    }
    for (size_t i = 0; o->eval_tasks && o->eval_tasks[i]; i++)
        free(o->eval_tasks[i]);
    free(o->eval_tasks);
    o->eval_tasks = NULL;
    free(o->prefix_list);
    o->prefix_list = NULL;
    data_info_release(&o->data);
}

/* ---- --print-config ------------------------------------------------------------------------- */

/* One key as `  name: value`. */
static void print_key(const struct train_opts *o, const struct train_key *k, FILE *f)
{
    if (k->type == TK_OWN) {
        k->print(o, f);
        return;
    }
    if (k->show == TS_NEVER)
        return;
    const void *m = (const char *)o + k->off;
    const char *name = strchr(k->path, '.') + 1;
    switch (k->type) {
    case TK_LONG:
        fprintf(f, "  %s: %ld\n", name, *(const long *)m);
        break;
    case TK_U64:
        fprintf(f, "  %s: %llu\n", name, (unsigned long long)*(const uint64_t *)m);
        break;
    case TK_DOUBLE:
        if (k->show == TS_ALWAYS || *(const double *)m >= 0)
            fprintf(f, "  %s: %.17g\n", name, *(const double *)m);
        break;
    case TK_BOOL:
        fprintf(f, "  %s: %s\n", name, *(const int *)m ? "true" : "false");
        break;
    case TK_STR: {
        const char *s = *(const char *const *)m;
        if (s || k->show == TS_ALWAYS)
            fprintf(f, "  %s: %s%s%s\n", name, k->quote, s ? s : "", k->quote);
        break;
    }
    case TK_CHOICE:
        fprintf(f, "  %s: %s\n", name, k->choices[*(const int *)m]);
        break;
    default:
        break;
    }
}

/* `section:` and its keys: by print_rank, then in the table's order. */
static void print_section(const struct train_opts *o, const char *section, FILE *f)
{
    size_t len = strlen(section);
    int last = 0;
    for (const struct train_key *k = train_keys; k->path; k++)
        if (k->print_rank > last)
            last = k->print_rank;
    fprintf(f, "%s:\n", section);
    for (int rank = 0; rank <= last; rank++)
        for (const struct train_key *k = train_keys; k->path; k++)
            if (k->print_rank == rank && !strncmp(k->path, section, len) && k->path[len] == '.')
                print_key(o, k, f);
}

/* The GPU trainer's memory per rank for every pipeline stage (train/gpu_plan.h): what the
 * arena allocates with the configured ZeRO stage and recomputation, per category, and in
 * bytes as the trainer logs them at -v; the largest stage, and its total at ZeRO-1, 2, 3. */
static void print_gpu_memory(const struct train_opts *o, long accum, FILE *f)
{
    const struct parallel_config *p = &o->par;
    static const char *const rc_names[] = { "none", "selective", "full" };
    struct parallel_gpu_opts g = { o->micro_batch,      o->seq_len,   accum,
                                   o->eval_iters,       o->recompute, p->zero,
                                   docmask_on(&o->docs) };
    struct parallel_gpu_rank *r = sl_xcalloc((size_t)p->pp, sizeof(*r));
    int best = parallel_gpu_estimate(p, &o->mc, &g, r);
    if (best < 0) {
        fprintf(f, "  # GPU: no estimate: %s\n", sl_err_msg());
        free(r);
        return;
    }
    int zero = p->zero < 1 ? 1 : p->zero;
    fprintf(f,
            "  # GPU per rank (bf16, ZeRO-%d over %d, recompute %s; the arena of tensor rank 0):\n",
            zero, p->dp, rc_names[o->recompute]);
    for (int st = 0; st < p->pp; st++) {
        char b[GPU_PLAN_NCAT][32], tot[32];
        for (int c = 0; c < GPU_PLAN_NCAT; c++)
            sl_human_bytes((double)r[st].cat[c], b[c], sizeof(b[c]));
        fprintf(f,
                "  #   stage %d: parameters %s, gradients %s, optimizer %s, activations %s "
                "(%ld micro-batch%s), workspace %s = %s\n"
                "  #     bytes: parameters %zu, gradients %zu, optimizer %zu, activations %zu, "
                "workspace %zu, arena %zu\n",
                st, b[0], b[1], b[2], b[3], r[st].sets, r[st].sets == 1 ? "" : "es", b[4],
                sl_human_bytes((double)r[st].total, tot, sizeof(tot)), r[st].cat[GPU_PLAN_PARAMS],
                r[st].cat[GPU_PLAN_GRADS], r[st].cat[GPU_PLAN_OPTIM], r[st].cat[GPU_PLAN_ACTS],
                r[st].cat[GPU_PLAN_WORK], r[st].total);
    }
    char big[32];
    fprintf(f, "  # GPU largest: stage %d, %llu parameters, %s\n", best,
            (unsigned long long)r[best].params,
            sl_human_bytes((double)r[best].total, big, sizeof(big)));
    char z[3][32];
    size_t zb[3];
    for (int s = 1; s <= 3; s++) {
        struct parallel_gpu_opts gz = g;
        gz.zero = s;
        int bz = parallel_gpu_estimate(p, &o->mc, &gz, r);
        zb[s - 1] = bz < 0 ? 0 : r[bz].total;
        sl_human_bytes((double)zb[s - 1], z[s - 1], sizeof(z[s - 1]));
    }
    fprintf(f, "  # GPU per rank at ZeRO-1 / 2 / 3: %s / %s / %s (arena bytes %zu / %zu / %zu)\n",
            z[0], z[1], z[2], zb[0], zb[1], zb[2]);
    free(r);
}

/* parallel.*, and the memory per rank it implies (train/parallel.h) as comments */
static void print_parallel(const struct train_opts *o, FILE *f)
{
    struct parallel_memory cpu;
    long accum = o->global_batch / (o->micro_batch * o->par.dp);
    parallel_memory_estimate(&o->par, &o->mc, o->micro_batch, o->seq_len, accum, 0, -1, &cpu);
    char a[32], b[32], z[16] = "";
    if (o->par.zero)
        snprintf(z, sizeof(z), " (ZeRO-%d)", o->par.zero);
    fprintf(f,
            "parallel:\n  tensor: %d\n  pipeline: %d\n  virtual_stages: %d\n  sequence: %s\n"
            "  # data parallel: %d "
            "(%d ranks / (tensor x pipeline))\n"
            "  # per rank: %llu parameters; CPU fp32: %s weights + gradients + AdamW%s, %s "
            "activations\n",
            o->par.tp, o->par.pp, o->par.vp, o->par.sp ? "true" : "false", o->par.dp, o->par.world,
            (unsigned long long)cpu.params, sl_human_bytes(cpu.weights_bytes, a, sizeof(a)),
            z, sl_human_bytes(cpu.act_bytes, b, sizeof(b)));
    print_gpu_memory(o, accum, f);
}

void train_config_print(const struct train_opts *o, FILE *f)
{
    const struct model_config *c = &o->mc;
    fprintf(f, "model:\n  vocab_size: %d  # %s; padded to %d rows\n", c->vocab_size,
            o->vocab_from_data ? "from the data's tokenize manifest" : "from the config",
            c->padded_vocab_size);
    struct sl_buf y = SL_BUF_INIT;
    model_config_to_yaml(c, &y);
    fputs(y.data, f);
    sl_buf_release(&y);
    if (o->synthetic) {
        fprintf(f, "data: synthetic\n");
    } else {
        print_section(o, "data", f);
        if (o->data.tokenizer)
            fprintf(f, "  # tokenizer: %s (%ld ids, end of document %ld) from %s\n",
                    o->data.tokenizer, o->data.vocab_size, o->data.eod_id, o->data.manifest);
    }
    print_section(o, "train", f);
    print_parallel(o, f);
    print_section(o, "optim", f);
    print_section(o, "eval", f);
    print_section(o, "checkpoint", f);
    print_section(o, "log", f);
    if (o->dump_dir)
        print_section(o, "debug", f);
}
