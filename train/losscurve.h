/* The loss curves of a run (train loss per logged step, validation loss per evaluation, and
 * the zero-shot task accuracies of eval.tasks) and their plot as a self-contained SVG file
 * (axes, ticks, labels, legend; no scripts, no external fonts or styles). The accuracies get
 * a second panel under the losses, on the same step axis. */
#ifndef SL_TRAIN_LOSSCURVE_H
#define SL_TRAIN_LOSSCURVE_H

#include <stddef.h>
#include <stdint.h>

struct loss_point {
    int64_t step;
    double loss;
};

struct loss_series {
    struct loss_point *v;
    size_t n, cap;
};

/* One task's accuracies (acc, and acc_norm unless the task has none: LAMBADA). */
struct loss_task {
    char *name;
    struct loss_series acc, acc_norm;
};

/* At most this many tasks are kept (the plot's legend has room for them). */
#define LOSS_CURVE_MAX_TASKS 16

struct loss_curve {
    struct loss_series train, val;
    struct loss_task *tasks;
    size_t ntasks;
};

/* A zeroed struct is empty; loss_curve_release frees the points. */
void loss_curve_release(struct loss_curve *c);

/* Add a point. A step at or before the series' last one replaces the points from that step
 * on (a resumed run redoing steps). Non-finite losses are kept out of the plot. */
void loss_series_add(struct loss_series *s, int64_t step, double loss);
/* A task's scores at step (names beyond LOSS_CURVE_MAX_TASKS are ignored; a non-finite
 * value is no point). */
void loss_curve_task_add(struct loss_curve *c, const char *task, int64_t step, double acc,
                         double acc_norm);
/* Drop the points after step (those of a run past the checkpoint it is resumed from). */
void loss_curve_truncate(struct loss_curve *c, int64_t step);

/* The SVG document for the curves, appended to out. */
struct sl_buf;
int loss_curve_svg(const struct loss_curve *c, const char *title, struct sl_buf *out);
/* Write it to path atomically (a reader never sees half a file). */
int loss_curve_write_svg(const struct loss_curve *c, const char *title, const char *path);

#endif
