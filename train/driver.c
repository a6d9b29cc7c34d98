/* The trainer's driver, one for both backends (train/train_run.h): reads the keys
 * (train/train_config.h), picks the device, opens the data indices, finds the checkpoint to
 * resume from, and runs optimizer steps of global_batch_size samples through a backend: the
 * CPU reference path (train/cpu_train.c) or the CUDA trainer of the GPU library
 * (train/gpu_train.c). Logs a line per step on stdout and JSON lines to log.file; validates
 * and saves checkpoints at their intervals.
 */
#include "train/train_run.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/log.h"
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
#include "train/train_config.h"
#include "train/trainlog.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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
    if (t->o.device != TRAIN_DEVICE_CPU)
        gpu = gpu_train_backend(why, sizeof(why));
    int64_t have = gpu != NULL;
    sl_world_allreduce_i64(t->w, &have, 1, SL_MIN);
    t->be = have ? gpu : &train_backend_cpu;
    if (have && t->o.fp8 != TRAIN_FP8_NONE) {
        if (t->w->rank == 0)
            sl_error("train.fp8 runs on the CPU path only, not with train.device=cuda\nhint: "
                     "train.fp8=none, or train.device=cpu for the FP8 reference");
        return 1;
    }
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
    if (!t->be->state) { /* the GPU backend logs its arena against its own plan */
        sl_info("parallel: tensor %d x pipeline %d%s x data %d%s (Megatron order, tensor "
                "fastest); optim.zero=%d",
                o->par.tp, o->par.pp, vs, o->par.dp, o->par.sp ? ", sequence parallel" : "",
                o->par.zero);
        return;
    }
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
        sl_info("optim.zero=%d: ZeRO-%d over %d data-parallel ranks: rank 0 keeps the AdamW "
                "moments%s of %llu of its %llu parameters",
                o->par.zero, o->par.zero, o->par.dp,
                o->par.zero == 3   ? ", gradient and weights"
                : o->par.zero == 2 ? " and gradient"
                                   : "",
                (unsigned long long)moments, (unsigned long long)params);
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

/* What checkpoint.json records of the run: the config as JSON, the optimizer's settings
 * (ckpt_changed_settings compares them on resume) and the data's facts. */
static void record_settings(struct train_opts *o, struct sl_cfg *root)
{
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
}

/* Rank 0's lines about the model, the batch and the layout, and its logs: log.file (cut
 * back to the resumed step) and TensorBoard. 0 or an error about log.file. */
static int start_logs(struct trainer *t, const char *from, size_t act_bytes)
{
    const struct train_opts *o = &t->o;
    int rc = 0;
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
    return rc;
}

int train_run(struct sl_cfg *root, int print_only)
{
    struct trainer tr;
    memset(&tr, 0, sizeof(tr));
    struct trainer *t = &tr;
    t->w = sl_world_get();
    char *from = NULL;
    int rc = train_config_load(&t->o, root, print_only ? 0 : t->w->size);
    if (rc) {
        sl_error("%s", sl_err_msg());
        train_config_release(&t->o);
        return 2;
    }
    struct train_opts *o = &t->o;
    if (print_only) {
        if (t->w->rank == 0)
            train_config_print(o, stdout);
        train_config_release(o);
        return 0;
    }
    record_settings(o, root);
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
    if (t->w->rank == 0)
        rc = start_logs(t, from, act_bytes);
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
    model_layout_release(&t->l);
    free(o->config_json);
    free(o->optim_json);
    free(o->data_json);
    train_config_release(o);
    return rc;
}
