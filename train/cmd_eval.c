/* sluice eval: a checkpoint's held-out loss on token shards and its zero-shot task scores
 * (train/eval.h). The held-out loss runs on the CPU (the reference forward pass) or on the
 * GPU (the CUDA trainer's validation pass, train/gpu_train.h, over the checkpoint); the tasks
 * are scored by the code of train/eval.h on either device, as the trainer's eval.tasks are. */
#include "train/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stream.h"
#include "core/world.h"
#include "dataset/loader.h"
#include "tokenize/tokenizer.h"
#include "train/checkpoint.h"
#include "train/cpu_model.h"
#include "dataset/datainfo.h"
#include "train/eval.h"
#include "train/gpu_train.h"
#include "train/model.h"
#include "train/train_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const char *const cmd_eval_usage[] = {
    "sluice eval CHECKPOINT (--data PREFIX | --tasks FILE.jsonl) [options]",
    "",
    "Measure a training checkpoint (a step directory, or checkpoint.dir for its newest step).",
    "--data: held-out loss on .bin/.idx shards (Megatron blend syntax, as data.prefix): tokens,",
    "loss, perplexity and bits per byte (bytes from the data's tokenizer). --tasks: zero-shot",
    "tasks in the JSONL layouts of HellaSwag, LAMBADA, ARC, PIQA, Winogrande or",
    "{\"context\", \"choices\", \"gold\"}, scored as lm-evaluation-harness does (acc, acc_norm;",
    "LAMBADA acc and perplexity). One JSON line per measurement on stdout. --device: the",
    "held-out loss on the GPU (the trainer's validation pass) or the CPU. See docs/eval.md.",
    NULL,
};

struct eopts {
    struct sl_strlist data, tasks;
    const char *split, *split_weights, *tokenizer, *details, *device;
    long samples, seq_len, batch, limit, threads;
    const char *step;                /* the checkpoint's step directory */
    const struct train_backend *gpu; /* the held-out loss on the GPU, or NULL: the CPU */
};

static void json_num(const char *key, double v)
{
    if (isfinite(v))
        printf(",\"%s\":%.6g", key, v);
    else
        printf(",\"%s\":null", key);
}

/* The held-out loss on the GPU: the CUDA trainer's backend set up for the checkpoint's
 * model with micro = global batch B (a divisor of n) and n / B validation iterations, its
 * weights loaded, its validation pass (the one eval.interval runs) over samples 0..n-1 of
 * the valid split of d. *nats: the summed token losses. */
static int heldout_gpu(const struct eopts *o, struct data_loader *d, const struct model_config *mc,
                       int T, uint64_t n, double *nats)
{
    long B = o->batch < (long)n ? o->batch : (long)n;
    while (n % (uint64_t)B)
        B--;
    struct train_opts to;
    memset(&to, 0, sizeof(to));
    to.mc = *mc;
    to.seq_len = T;
    to.micro_batch = to.global_batch = B;
    to.accum = 1;
    to.steps = 1;
    to.eval_interval = 1;
    to.eval_iters = (long)(n / (uint64_t)B);
    to.device = TRAIN_DEVICE_CUDA;
    to.attention = GPU_ATTN_AUTO;
    to.recompute = GPU_RECOMPUTE_NONE;
    to.grad_reduce = GPU_REDUCE_FP32;
    to.adam = (struct adamw){ 0.9, 0.95, 1e-8, 0.0 };
    void *ctx = NULL;
    size_t act = 0;
    double loss = NAN;
    sl_info("held-out loss on the GPU: the CUDA trainer's validation pass, %ld x %ld samples "
            "(its set-up lines follow)",
            to.eval_iters, B);
    int rc = o->gpu->setup(&ctx, &to, sl_world_get(), d, &act);
    if (!rc)
        rc = o->gpu->load(ctx, o->step, 0);
    if (!rc)
        rc = o->gpu->evaluate(ctx, &loss);
    if (ctx)
        o->gpu->release(ctx);
    *nats = loss * (double)n * T;
    return rc;
}

/* The split of --split that the held-out loss reads (*s) and the split weights that give it
 * (*weights): "all" is the train split of "1,0,0", or on the GPU, whose validation pass
 * reads the valid split, the valid split of "0,1,0" (the same range, hence the same
 * samples). 0, or 2 when the GPU cannot score the split (reported). */
static int pick_split(const struct eopts *o, int *s, const char **weights)
{
    static const char *const names[] = { "train", "valid", "test" };
    *s = DATA_VALID;
    *weights = o->split_weights;
    if (!strcmp(o->split, "all")) {
        *s = DATA_TRAIN;
        *weights = "1,0,0";
    } else {
        for (int i = 0; i < 3; i++)
            if (!strcmp(o->split, names[i]))
                *s = i;
    }
    if (!o->gpu)
        return 0;
    if (*s == DATA_TRAIN && !strcmp(o->split, "all")) {
        *weights = "0,1,0";
        *s = DATA_VALID;
    } else if (*s != DATA_VALID) {
        sl_error("--split %s: the GPU scores the valid split or all\nhint: --device cpu", o->split);
        return 2;
    }
    return 0;
}

/* The sums of a held-out pass: token losses (nats), tokens, and the bytes of the samples'
 * text (tok is NULL once a sample's ids cannot be decoded: no bits per byte). */
struct heldout_sums {
    double nats;
    uint64_t ntok, bytes;
    const struct tokenizer *tok;
    struct sl_buf text;
};

/* Add the bytes of row's target tokens (T of them) as text. */
static void count_bytes(struct heldout_sums *h, const uint32_t *row, int T)
{
    if (!h->tok)
        return;
    h->text.len = 0;
    if (tokenizer_decode(h->tok, row + 1, (size_t)T, &h->text) == 0)
        h->bytes += h->text.len;
    else
        h->tok = NULL; /* ids the tokenizer cannot decode: no bits per byte */
}

/* The held-out loss on the GPU (heldout_gpu), then the bytes of the same n samples. */
static int gpu_pass(const struct eopts *o, struct data_loader *d, const struct model_config *mc,
                    int s, int T, uint64_t n, struct heldout_sums *h)
{
    uint32_t *row = sl_xcalloc((size_t)T + 1, sizeof(uint32_t));
    int rc = heldout_gpu(o, d, mc, T, n, &h->nats);
    h->ntok = n * (uint64_t)T;
    for (uint64_t i = 0; i < n && !rc && h->tok; i++) {
        rc = data_loader_sample(d, (enum data_split)s, i, row);
        if (rc)
            h->tok = NULL;
        else
            count_bytes(h, row, T);
    }
    free(row);
    return rc;
}

/* The held-out loss on the CPU: n samples of split s in batches of B, the reference forward
 * pass of model m. A short last batch is filled with its first sample and its real rows
 * are scored one at a time, so the mean is over real rows only. */
static int cpu_pass(struct data_loader *d, struct cpu_model *m, const float *params, int s, int B,
                    int T, uint64_t n, struct heldout_sums *h)
{
    int32_t *tokens = sl_xcalloc((size_t)B * T, sizeof(int32_t));
    int32_t *targets = sl_xcalloc((size_t)B * T, sizeof(int32_t));
    uint32_t *row = sl_xcalloc((size_t)T + 1, sizeof(uint32_t));
    int rc = 0;
    for (uint64_t i = 0; i < n && !rc; i += (uint64_t)B) {
        int b = 0;
        for (; b < B && i + (uint64_t)b < n && !rc; b++) {
            rc = data_loader_sample(d, (enum data_split)s, i + (uint64_t)b, row);
            for (int k = 0; k < T && !rc; k++) {
                tokens[(size_t)b * T + k] = (int32_t)row[k];
                targets[(size_t)b * T + k] = (int32_t)row[k + 1];
            }
            if (!rc)
                count_bytes(h, row, T);
        }
        if (rc)
            break;
        for (; b < B; b++) /* a short last batch: repeat sample i, not counted */
            for (int k = 0; k < T; k++) {
                tokens[(size_t)b * T + k] = tokens[k];
                targets[(size_t)b * T + k] = targets[k];
            }
        int real = (int)((n - i) < (uint64_t)B ? (n - i) : (uint64_t)B);
        if (real == B) {
            h->nats += (double)cpu_model_forward(m, params, tokens, targets) * B * T;
        } else {
            for (int r = 0; r < real; r++) {
                for (int q = 0; q < B; q++)
                    for (int k = 0; k < T; k++) {
                        tokens[(size_t)q * T + k] = tokens[(size_t)r * T + k];
                        targets[(size_t)q * T + k] = targets[(size_t)r * T + k];
                    }
                h->nats += (double)cpu_model_forward(m, params, tokens, targets) * T;
            }
        }
        h->ntok += (uint64_t)real * T;
    }
    free(tokens);
    free(targets);
    free(row);
    return rc;
}

/* The held-out result: one JSON line on stdout and the info line. */
static void print_heldout(const struct eopts *o, const char *prefix, uint64_t n, int T,
                          const struct heldout_sums *h, double secs)
{
    double loss = h->nats / (double)h->ntok;
    double bpb = h->tok && h->bytes ? h->nats / (log(2.0) * (double)h->bytes) : NAN;
    printf("{\"data\":");
    struct sl_buf js = SL_BUF_INIT;
    sl_buf_json_str(&js, prefix, strlen(prefix));
    printf("%s,\"split\":\"%s\",\"samples\":%llu,\"seq_len\":%d,\"tokens\":%llu", js.data, o->split,
           (unsigned long long)n, T, (unsigned long long)h->ntok);
    printf(",\"device\":\"%s\"", o->gpu ? "cuda" : "cpu");
    sl_buf_release(&js);
    json_num("loss", loss);
    json_num("perplexity", exp(loss));
    json_num("bits_per_byte", bpb);
    printf(",\"bytes\":%llu", (unsigned long long)(h->tok ? h->bytes : 0));
    json_num("tokens_per_s", (double)h->ntok / secs);
    printf("}\n");
    fflush(stdout);
    sl_info("held-out %s of '%s': %llu tokens, loss %.4f, perplexity %.2f, bits per byte "
            "%s%.4f (%.0f tokens/s)",
            o->split, prefix, (unsigned long long)h->ntok, loss, exp(loss),
            isfinite(bpb) ? "" : "n/a ", isfinite(bpb) ? bpb : 0.0, (double)h->ntok / secs);
}

/* Held-out loss over `samples` samples of a split of prefix. */
static int heldout(const struct eopts *o, const char *prefix, const struct model_config *mc,
                   const struct model_layout *l, const float *params, const struct tokenizer *tok)
{
    int s;
    const char *split;
    if (pick_split(o, &s, &split))
        return 2;
    int T = (int)(o->seq_len > 0 ? o->seq_len : mc->max_seq_len), B = (int)o->batch;
    struct data_opts dopt;
    memset(&dopt, 0, sizeof(dopt));
    dopt.prefix = prefix;
    dopt.split = split;
    dopt.seq_len = (uint64_t)T;
    dopt.seed = 1234;
    dopt.num_samples[s] = (uint64_t)o->samples;
    dopt.vocab_size = (uint64_t)mc->vocab_size;
    dopt.write_cache = 1;
    struct data_loader *d = NULL;
    struct cpu_model *m = NULL;
    int rc = data_loader_open(&d, &dopt);
    if (!rc && !o->gpu)
        rc = cpu_model_new(&m, mc, l, B, T);
    if (rc) {
        sl_error("%s", sl_err_msg());
        data_loader_free(d);
        return 1;
    }
    uint64_t n = (uint64_t)o->samples;
    struct heldout_sums h = { .tok = tok, .text = SL_BUF_INIT };
    double t0 = sl_now();
    if (o->gpu)
        rc = gpu_pass(o, d, mc, s, T, n, &h);
    else
        rc = cpu_pass(d, m, params, s, B, T, n, &h);
    double secs = sl_now() - t0;
    if (rc)
        sl_error("%s", sl_err_msg());
    else
        print_heldout(o, prefix, n, T, &h, secs);
    sl_buf_release(&h.text);
    cpu_model_free(m);
    data_loader_free(d);
    return rc ? 1 : 0;
}

static int run_tasks(const struct eopts *o, const struct model_config *mc,
                     const struct model_layout *l, const float *params, const struct tokenizer *tok,
                     int64_t eod)
{
    struct eval_scorer *s = NULL;
    int rc = eval_scorer_new(&s, mc, l, params, mc->max_seq_len);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    FILE *det = NULL;
    if (o->details && !(det = fopen(o->details, "w"))) {
        sl_error("cannot write '%s': %s", o->details, strerror(errno));
        eval_scorer_free(s);
        return 1;
    }
    int code = 0;
    for (size_t i = 0; i < o->tasks.n && !code; i++) {
        struct eval_task t;
        struct eval_result r;
        rc = eval_task_load(&t, o->tasks.v[i], (size_t)o->limit);
        if (!rc && t.skipped)
            sl_warn("%llu lines of '%s' skipped; the first: %s", (unsigned long long)t.skipped,
                    t.path, t.first_bad);
        if (!rc)
            rc = eval_task_run(&t, tok, eod, s, &r, det);
        if (rc) {
            sl_error("%s", sl_err_msg());
            code = 1;
        } else {
            struct sl_buf js = SL_BUF_INIT;
            sl_buf_json_str(&js, t.path, strlen(t.path));
            printf("{\"task\":%s,\"format\":\"%s\",\"items\":%zu,\"skipped\":%llu", js.data,
                   t.format, r.items, (unsigned long long)(t.skipped + r.skipped_long));
            sl_buf_release(&js);
            json_num("acc", r.acc);
            if (t.kind == EVAL_LAMBADA)
                json_num("perplexity", r.ppl);
            else
                json_num("acc_norm", r.acc_norm);
            json_num("items_per_s", (double)r.items / r.seconds);
            printf("}\n");
            fflush(stdout);
            if (t.kind == EVAL_LAMBADA)
                sl_info("%s (%s): %zu items, acc %.4f, perplexity %.3f (%.1f items/s)", t.path,
                        t.format, r.items, r.acc, r.ppl, (double)r.items / r.seconds);
            else
                sl_info("%s (%s): %zu items, acc %.4f, acc_norm %.4f (%.1f items/s)", t.path,
                        t.format, r.items, r.acc, r.acc_norm, (double)r.items / r.seconds);
            if (r.skipped_long)
                sl_warn("%zu items of '%s' skipped: a continuation longer than the context "
                        "window or empty",
                        r.skipped_long, t.path);
        }
        eval_task_release(&t);
    }
    if (det && fclose(det) != 0 && !code) {
        sl_error("cannot write '%s': %s", o->details, strerror(errno));
        code = 1;
    }
    eval_scorer_free(s);
    return code;
}

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct eopts

const struct sl_option cmd_eval_options[] = {
    SL_OPT_STRINGS(0, "data", data, "PREFIX",
                   "held-out loss on these shards (repeatable; Megatron blend syntax)"),
    SL_OPT_STRING(0, "split", split, "NAME", "valid (default), test, train or all", .def = "valid",
                  .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_STRING(0, "split-weights", split_weights, "A,B,C",
                  "data.split of the run (default: the checkpoint's, else 969,30,1)"),
    SL_OPT_INTEGER(0, "samples", samples, "N", "samples of seq_len tokens (64)", .def = "64",
                   .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "seq-len", seq_len, "N",
                   "tokens per sample (default: the run's train.seq_len)"),
    SL_OPT_INTEGER(0, "batch", batch, "N", "samples per forward pass (4)", .def = "4",
                   .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_STRINGS(0, "tasks", tasks, "FILE", "zero-shot task file, JSONL (repeatable)"),
    SL_OPT_INTEGER(0, "limit", limit, "N", "score the first N items of each task (0: all)"),
    SL_OPT_STRING(0, "tokenizer", tokenizer, "SPEC",
                  TOKENIZER_SPECS "; default: the one recorded with the checkpoint's data"),
    SL_OPT_STRING(0, "details", details, "FILE",
                  "write each choice's token ids and log-likelihood as JSON lines"),
    SL_OPT_STRING(0, "device", device, "NAME",
                  "auto (default: the GPU when there is one), cpu or cuda: where the held-out "
                  "loss runs",
                  .def = "auto", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "threads", threads, "N", "OpenMP threads (default: all cores)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The checks of the command line after parsing: 0 or SL_ERR_USAGE with a message. */
static int check(void *opts, const struct sl_strlist *rest)
{
    const struct eopts *o = opts;
    int rc = 0;
    if (rest->n != 1)
        rc = sl_err_set(SL_ERR_USAGE,
                        rest->n ? "give exactly one checkpoint" : "no checkpoint given");
    if (!rc && !o->data.n && !o->tasks.n)
        rc = sl_err_set(SL_ERR_USAGE, "nothing to measure\nhint: --data PREFIX (held-out loss) "
                                      "or --tasks FILE.jsonl (zero-shot tasks)");
    if (!rc && (o->samples < 1 || o->batch < 1 || o->limit < 0 || o->seq_len < 0))
        rc = sl_err_set(SL_ERR_USAGE, "--samples and --batch must be at least 1, --limit and "
                                      "--seq-len not negative");
    if (!rc && strcmp(o->split, "valid") && strcmp(o->split, "test") && strcmp(o->split, "train") &&
        strcmp(o->split, "all"))
        rc = sl_err_set(SL_ERR_USAGE,
                        "--split: unknown split '%s'\nhint: valid, test, train or all", o->split);
    if (!rc && strcmp(o->device, "auto") && strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
        rc = sl_err_set(SL_ERR_USAGE, "--device: unknown device '%s'\nhint: auto, cpu or cuda",
                        o->device);
    return rc;
}

/* A checkpoint, loaded: its step directory, model, state, data and weights. */
struct loaded {
    char *step;
    struct model_config mc;
    struct ckpt_state st;
    struct model_layout l;
    float *params;
    struct data_info di;
};

static void loaded_release(struct loaded *c)
{
    data_info_release(&c->di);
    free(c->params);
    model_layout_release(&c->l);
    free(c->step);
}

/* The checkpoint at path (a step directory, or checkpoint.dir for its newest step), its
 * weights loaded. 0, or 1 (reported). */
static int load_checkpoint(const char *path, struct loaded *c)
{
    int rc;
    if ((rc = ckpt_resolve(path, &c->step)) || (rc = ckpt_read_meta(c->step, &c->mc, &c->st)) ||
        (rc = data_info_from_checkpoint(&c->di, c->step))) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    model_layout_init(&c->l, &c->mc);
    c->params = aligned_alloc(64, sl_mul_size((c->l.total + 15) / 16 * 16, sizeof(float)));
    if (!c->params) {
        sl_error("cannot allocate the parameters of '%s'", c->step);
        return 1;
    }
    if ((rc = ckpt_load(c->step, &c->l, c->params, NULL, NULL))) {
        sl_error("cannot load checkpoint '%s': %s", c->step, sl_err_msg());
        return 1;
    }
    sl_info("checkpoint '%s': step %ld, %llu parameters, vocabulary %d, context %d", c->step,
            c->st.step, (unsigned long long)c->l.params, c->mc.vocab_size, c->mc.max_seq_len);
    return 0;
}

/* The run's split weights and seq_len, each one unless given (--split-weights does not drop
 * the run's seq_len), from the step's checkpoint.json when it records them; the split's
 * text into *weights (the caller frees it). */
static void run_defaults(struct eopts *eo, const char *step, char **weights)
{
    struct sl_buf b = SL_BUF_INIT;
    char *jp = sl_xasprintf("%s/checkpoint.json", step);
    b.max = 64u << 20;
    int given = eo->split_weights != NULL;
    if (!given)
        eo->split_weights = "969,30,1";
    if (sl_read_file(jp, &b) == 0 && b.data) {
        const char *k = strstr(b.data, "\"split\":");
        if (k && !given) {
            k += 8;
            while (*k == ' ' || *k == '"')
                k++;
            const char *e = strchr(k, '"');
            if (e)
                eo->split_weights = *weights = sl_xasprintf("%.*s", (int)(e - k), k);
        }
        const char *q = strstr(b.data, "\"seq_len\":");
        if (q && !eo->seq_len)
            eo->seq_len = strtol(q + 10, NULL, 10);
    }
    free(jp);
    sl_buf_release(&b);
}

/* Where the held-out loss runs: eo->gpu, the GPU library loaded only for a held-out loss
 * that is not asked for on the CPU. 0, or 1 when --device cuda has no GPU (reported). */
static int pick_device(struct eopts *eo)
{
    if (!eo->data.n || !strcmp(eo->device, "cpu"))
        return 0;
    char why[256] = "";
    eo->gpu = gpu_train_backend(why, sizeof(why));
    if (!eo->gpu && !strcmp(eo->device, "cuda")) {
        sl_error("--device cuda: %s%s", why, strstr(why, "hint:") ? "" : "\nhint: --device cpu");
        return 1;
    }
    if (!eo->gpu)
        sl_info("held-out loss on the CPU (%s)", why);
    return 0;
}

/* Measure the checkpoint at path as o asks: its held-out loss on each --data, then the
 * tasks. Returns the exit code. */
static int evaluate(const struct eopts *o, const char *path)
{
    struct loaded c;
    struct tokenizer *tok = NULL;
    memset(&c, 0, sizeof(c));
    int code = 1;
    if (load_checkpoint(path, &c))
        goto out;
    const char *spec = o->tokenizer ? o->tokenizer : c.di.tokenizer;
    if (spec && tokenizer_open(&tok, spec)) {
        sl_error("%s", sl_err_msg());
        goto out;
    }
    if (o->tasks.n && !tok) {
        sl_error("no tokenizer for the tasks' text: none is recorded with '%s'\nhint: "
                 "--tokenizer SPEC, one of " TOKENIZER_SPECS,
                 c.step);
        code = 2;
        goto out;
    }
    if (tok && tok->vocab_size > (uint32_t)c.mc.vocab_size)
        sl_warn("the tokenizer has %u ids, the model %d: is it the one the model was "
                "trained with?",
                tok->vocab_size, c.mc.vocab_size);
    struct eopts eo = *o;
    char *weights = NULL;
    run_defaults(&eo, c.step, &weights);
    if (o->seq_len > c.mc.max_seq_len) {
        /* it was made the model's context silently: another measurement than asked */
        sl_error("--seq-len %ld is longer than the model's context (max_position_embeddings "
                 "%d)\nhint: --seq-len %d or less",
                 o->seq_len, c.mc.max_seq_len, c.mc.max_seq_len);
        code = 2;
        free(weights);
        goto out;
    }
    if (eo.seq_len <= 0 || eo.seq_len > c.mc.max_seq_len)
        eo.seq_len = c.mc.max_seq_len; /* the run's train.seq_len, when longer */
    int64_t eod = c.di.eod_id >= 0 ? c.di.eod_id : tok ? tok->eod_id : -1;
    eo.step = c.step;
    if (pick_device(&eo) == 0) {
        code = 0;
        for (size_t i = 0; i < eo.data.n && !code; i++)
            code = heldout(&eo, eo.data.v[i], &c.mc, &c.l, c.params, tok);
        if (!code && eo.tasks.n)
            code = run_tasks(&eo, &c.mc, &c.l, c.params, tok, eod);
    }
    free(weights);
out:
    tokenizer_free(tok);
    loaded_release(&c);
    return code;
}

static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct eopts *o = opts;
#ifdef _OPENMP
    if (o->threads > 0)
        omp_set_num_threads((int)o->threads);
#endif
    return evaluate(o, rest->v[0]);
}

const struct sl_cmd cmd_eval = SL_CMD(cmd_eval_usage, cmd_eval_options, struct eopts, check, run);
