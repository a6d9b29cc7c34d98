/* The trainer's logs for people: TensorBoard scalars (train/tbevents.h) and a loss.svg plot
 * (train/losscurve.h) in one directory, written by rank 0.
 *
 * Tags: train/loss, train/lr, train/grad_norm, train/tokens_per_s, train/mfu (when
 * log.peak_tflops is set) per logged step, val/loss per evaluation, eval/TASK/acc and
 * eval/TASK/acc_norm (or eval/TASK/perplexity) per scored task (eval.tasks); loss.svg plots
 * the losses and, in a second panel, the task accuracies. Each run segment writes
 * a new event file that starts with a restart marker at the first step it runs (TensorBoard
 * then hides the earlier files' events from that step on); a resumed run's curves start
 * from those of the earlier event files, so loss.svg covers the whole run.
 *
 * Every call returns 0 or, once, the first error (a message for a warning); after an error
 * nothing more is written and later calls return 0, so logging never stops training.
 */
#ifndef SL_TRAIN_TRAINLOG_H
#define SL_TRAIN_TRAINLOG_H

#include <stddef.h>
#include <stdio.h>

struct train_log;

/* The log directory for log.tensorboard_dir = setting (NULL when unset) and checkpoint.dir
 * ckpt_dir (may be NULL): setting; else ckpt_dir/tb; NULL when logging is off (setting
 * "none" or "", or neither set). A fresh string. */
char *train_log_dir_for(const char *setting, const char *ckpt_dir);

/* Open dir (created) for a run that continues after resume_step (0: a fresh run). On error
 * *out is NULL. */
int train_log_open(struct train_log **out, const char *dir, long resume_step);
/* The new event file's path. */
const char *train_log_events_path(const struct train_log *tl);

int train_log_step(struct train_log *tl, long step, double loss, double lr, double grad_norm,
                   double tokens_per_s, double mfu);
/* A validation loss; also rewrites loss.svg. */
int train_log_valid(struct train_log *tl, long step, double val_loss);
/* A zero-shot task's scores (eval.tasks): eval/<task>/acc and eval/<task>/<second> (when
 * finite; second is "acc_norm", or "perplexity" for LAMBADA); the accuracies also go into
 * loss.svg's task panel, which is rewritten. */
int train_log_task(struct train_log *tl, long step, const char *task, const char *second,
                   double acc, double acc_norm);
/* Rewrite dir/loss.svg from the curves so far (at checkpoints). */
int train_log_plot(struct train_log *tl);
/* Rewrite loss.svg, close the event file, free. NULL is a no-op. */
int train_log_close(struct train_log *tl);

/* What a logged step reports, the same from the CPU and the GPU loop. */
struct train_step_report {
    long step, steps;
    unsigned long long consumed_samples;
    double loss, lr, grad_norm, step_time_s, tokens_per_s, tflops_per_rank, mfu;
    int skipped;
};

/* Rank 0, at a logged step: the step line on stdout, a {"type":"train",...} line in jsonl
 * (the log.file; NULL: none) and the TensorBoard scalars in tl (NULL: none; a failure is
 * warned about once). */
void train_report_step(FILE *jsonl, struct train_log *tl, const struct train_step_report *r);
/* Rank 0, after a validation: the same three for the validation loss. */
void train_report_valid(FILE *jsonl, struct train_log *tl, long step, double val_loss);

/* Rank 0, after scoring a task (eval.tasks): a line on stdout, {"type":"task","step",
 * "task","acc",second,"items","items_per_s"} in jsonl, the TensorBoard scalars. second: "acc_norm" or
 * "perplexity" (LAMBADA), whose value is acc_norm. */
void train_report_task(FILE *jsonl, struct train_log *tl, long step, const char *task,
                       const char *second, double acc, double acc_norm, size_t items,
                       double seconds);

#endif
