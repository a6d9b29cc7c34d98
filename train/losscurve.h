/* The loss curves of a run (train loss per logged step, validation loss per evaluation) and
 * their plot as a self-contained SVG file (axes, ticks, labels, legend; no scripts, no
 * external fonts or styles). */
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

struct loss_curve {
    struct loss_series train, val;
};

/* A zeroed struct is empty; loss_curve_release frees the points. */
void loss_curve_release(struct loss_curve *c);

/* Add a point. A step at or before the series' last one replaces the points from that step
 * on (a resumed run redoing steps). Non-finite losses are kept out of the plot. */
void loss_series_add(struct loss_series *s, int64_t step, double loss);
/* Drop the points after step (those of a run past the checkpoint it is resumed from). */
void loss_curve_truncate(struct loss_curve *c, int64_t step);

/* The SVG document for the curves, appended to out. */
struct sl_buf;
int loss_curve_svg(const struct loss_curve *c, const char *title, struct sl_buf *out);
/* Write it to path atomically (a reader never sees half a file). */
int loss_curve_write_svg(const struct loss_curve *c, const char *title, const char *path);

#endif
