/* The trainer's TensorBoard events and loss.svg: one event file per run segment, the curves
 * of earlier segments read back from their event files. */
#include "train/trainlog.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/log.h"
#include "train/losscurve.h"
#include "train/tbevents.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct train_log {
    char *dir, *svg;
    struct tb_writer *tb;
    struct loss_curve curve;
    int failed;
};

char *train_log_dir_for(const char *setting, const char *ckpt_dir)
{
    if (setting)
        return !setting[0] || !strcmp(setting, "none") ? NULL : sl_xstrdup(setting);
    return ckpt_dir ? sl_xasprintf("%s/tb", ckpt_dir) : NULL;
}

/* Earlier segments: losses by tag; a restart marker drops what it restarts. */
static int on_scalar(void *ctx, const char *tag, int64_t step, double wall, float value)
{
    struct loss_curve *c = ctx;
    (void)wall;
    if (!tag)
        loss_curve_truncate(c, step - 1);
    else if (!strcmp(tag, "train/loss"))
        loss_series_add(&c->train, step, value);
    else if (!strcmp(tag, "val/loss"))
        loss_series_add(&c->val, step, value);
    else if (!strncmp(tag, "eval/", 5)) {
        /* eval/TASK/acc, eval/TASK/acc_norm (eval/TASK/perplexity is not an accuracy) */
        const char *name = tag + 5, *slash = strrchr(name, '/');
        if (slash && slash > name && slash - name < 128) {
            char task[128];
            snprintf(task, sizeof(task), "%.*s", (int)(slash - name), name);
            if (!strcmp(slash + 1, "acc"))
                loss_curve_task_add(c, task, step, value, NAN);
            else if (!strcmp(slash + 1, "acc_norm"))
                loss_curve_task_add(c, task, step, NAN, value);
        }
    }
    return 0;
}

int train_log_open(struct train_log **out, const char *dir, long resume_step)
{
    *out = NULL;
    struct train_log *tl = sl_xcalloc(1, sizeof(*tl));
    tl->dir = sl_xstrdup(dir);
    tl->svg = sl_xasprintf("%s/loss.svg", dir);
    int rc = 0;
    if (resume_step > 0) {
        rc = tb_read_dir(dir, on_scalar, &tl->curve);
        if (rc)
            sl_err_wrap(rc, "reading the earlier TensorBoard events: ");
        loss_curve_truncate(&tl->curve, resume_step);
    }
    if (!rc)
        rc = tb_writer_open(&tl->tb, dir);
    /* a fresh run in a directory of an earlier one replaces it too */
    if (!rc)
        rc = tb_writer_session_start(tl->tb, resume_step + 1);
    if (rc) {
        tl->failed = 1;
        train_log_close(tl);
        return rc;
    }
    *out = tl;
    return 0;
}

const char *train_log_events_path(const struct train_log *tl)
{
    return tb_writer_path(tl->tb);
}

/* The first error is returned; later ones are swallowed. */
static int fail(struct train_log *tl, int rc)
{
    if (!rc || tl->failed)
        return 0;
    tl->failed = 1;
    return rc;
}

int train_log_step(struct train_log *tl, long step, double loss, double lr, double grad_norm,
                   double tokens_per_s, double mfu)
{
    if (!tl || tl->failed)
        return 0;
    loss_series_add(&tl->curve.train, step, loss);
    int rc = tb_writer_scalar(tl->tb, step, "train/loss", (float)loss);
    if (!rc)
        rc = tb_writer_scalar(tl->tb, step, "train/lr", (float)lr);
    if (!rc)
        rc = tb_writer_scalar(tl->tb, step, "train/grad_norm", (float)grad_norm);
    if (!rc)
        rc = tb_writer_scalar(tl->tb, step, "train/tokens_per_s", (float)tokens_per_s);
    if (!rc && isfinite(mfu))
        rc = tb_writer_scalar(tl->tb, step, "train/mfu", (float)mfu);
    return fail(tl, rc);
}

int train_log_valid(struct train_log *tl, long step, double val_loss)
{
    if (!tl || tl->failed)
        return 0;
    loss_series_add(&tl->curve.val, step, val_loss);
    int rc = tb_writer_scalar(tl->tb, step, "val/loss", (float)val_loss);
    if (rc)
        return fail(tl, rc);
    return train_log_plot(tl);
}

int train_log_plot(struct train_log *tl)
{
    if (!tl || tl->failed)
        return 0;
    char *title = sl_xasprintf("loss: %s", tl->dir);
    int rc = loss_curve_write_svg(&tl->curve, title, tl->svg);
    free(title);
    return fail(tl, rc);
}

int train_log_close(struct train_log *tl)
{
    if (!tl)
        return 0;
    int rc = train_log_plot(tl);
    int rc2 = tb_writer_close(tl->tb);
    if (!rc)
        rc = fail(tl, rc2);
    loss_curve_release(&tl->curve);
    free(tl->dir);
    free(tl->svg);
    free(tl);
    return rc;
}

/* a JSON number, or null for NaN and infinities */
static void jnum(char *buf, size_t n, double v)
{
    if (isfinite(v))
        snprintf(buf, n, "%.9g", v);
    else
        snprintf(buf, n, "null");
}

void train_report_step(FILE *jsonl, struct train_log *tl, const struct train_step_report *r)
{
    char mfu_s[32] = "-";
    if (isfinite(r->mfu))
        snprintf(mfu_s, sizeof(mfu_s), "%.2f%%", 100.0 * r->mfu);
    printf("step %ld/%ld | consumed_samples %llu | loss %.4f | lr %.4e | grad_norm %.4f | "
           "step_time %.3f s | tokens/s %.0f | TFLOP/s/rank %.4f | MFU %s%s\n",
           r->step, r->steps, r->consumed_samples, r->loss, r->lr, r->grad_norm, r->step_time_s,
           r->tokens_per_s, r->tflops_per_rank, mfu_s, r->skipped ? " | skipped" : "");
    fflush(stdout);
    if (jsonl) {
        char jl[32], jn[32], jm[32];
        jnum(jl, sizeof(jl), r->loss);
        jnum(jn, sizeof(jn), r->grad_norm);
        jnum(jm, sizeof(jm), r->mfu);
        fprintf(jsonl,
                "{\"type\":\"train\",\"step\":%ld,\"consumed_samples\":%llu,\"loss\":%s,"
                "\"lr\":%.9g,\"grad_norm\":%s,\"step_time_s\":%.6f,\"tokens_per_s\":%.3f,"
                "\"tflops_per_rank\":%.6f,\"mfu\":%s,\"skipped\":%s}\n",
                r->step, r->consumed_samples, jl, r->lr, jn, r->step_time_s, r->tokens_per_s,
                r->tflops_per_rank, jm, r->skipped ? "true" : "false");
        fflush(jsonl);
    }
    if (train_log_step(tl, r->step, r->loss, r->lr, r->grad_norm, r->tokens_per_s, r->mfu))
        sl_warn("TensorBoard log: %s; no more events are written", sl_err_msg());
}

void train_report_valid(FILE *jsonl, struct train_log *tl, long step, double val_loss)
{
    printf("validation at step %ld | val_loss %.4f | val_ppl %.2f\n", step, val_loss,
           exp(val_loss));
    fflush(stdout);
    if (jsonl) {
        char jv[32];
        jnum(jv, sizeof(jv), val_loss);
        fprintf(jsonl, "{\"type\":\"valid\",\"step\":%ld,\"val_loss\":%s}\n", step, jv);
        fflush(jsonl);
    }
    if (train_log_valid(tl, step, val_loss))
        sl_warn("TensorBoard log: %s; no more events are written", sl_err_msg());
}

int train_log_task(struct train_log *tl, long step, const char *task, const char *second,
                   double acc, double acc_norm)
{
    if (!tl || tl->failed)
        return 0;
    char tag[160];
    /* the plot's accuracy panel: acc, and acc_norm (a perplexity is not an accuracy); the
     * values as TensorBoard stores them, so that a resumed run's plot is the same */
    loss_curve_task_add(&tl->curve, task, step, (float)acc,
                        strcmp(second, "acc_norm") ? NAN : (double)(float)acc_norm);
    snprintf(tag, sizeof(tag), "eval/%s/acc", task);
    int rc = tb_writer_scalar(tl->tb, step, tag, (float)acc);
    if (!rc && isfinite(acc_norm)) {
        snprintf(tag, sizeof(tag), "eval/%s/%s", task, second);
        rc = tb_writer_scalar(tl->tb, step, tag, (float)acc_norm);
    }
    if (rc)
        return fail(tl, rc);
    return train_log_plot(tl);
}

void train_report_task(FILE *jsonl, struct train_log *tl, long step, const char *task,
                       const char *second, double acc, double acc_norm, size_t items,
                       double seconds)
{
    char an[32];
    jnum(an, sizeof(an), acc_norm);
    printf("eval at step %ld | %s | acc %.4f | %s %s | %zu items, %.1f items/s\n", step, task, acc,
           second, an, items, seconds > 0 ? (double)items / seconds : 0.0);
    fflush(stdout);
    if (jsonl) {
        fprintf(jsonl, "{\"type\":\"task\",\"step\":%ld,\"task\":\"", step);
        for (const char *c = task; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
                fputc('_', jsonl);
            else
                fputc(*c, jsonl);
        fprintf(jsonl, "\",\"acc\":%.9g,\"%s\":%s,\"items\":%zu,\"items_per_s\":%.3f}\n", acc,
                second, an, items, seconds > 0 ? (double)items / seconds : 0.0);
        fflush(jsonl);
    }
    if (train_log_task(tl, step, task, second, acc, acc_norm))
        sl_warn("TensorBoard log: %s; no more events are written", sl_err_msg());
}
