/* Loss curves and their SVG plot: linear axes with 1-2-5 ticks, one polyline per series
 * (long series averaged into at most MAX_POINTS points), markers for validation points, and a
 * second panel for the task accuracies when there are any. */
#include "train/losscurve.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W          800
#define H          480 /* the loss panel; the task panel adds HT */
#define HT         300
#define ML         70 /* margins: left, right, top, bottom */
#define MR         20
#define MT         40
#define MB         55
#define MAX_POINTS 1500

void loss_curve_release(struct loss_curve *c)
{
    free(c->train.v);
    free(c->val.v);
    for (size_t i = 0; i < c->ntasks; i++) {
        free(c->tasks[i].name);
        free(c->tasks[i].acc.v);
        free(c->tasks[i].acc_norm.v);
    }
    free(c->tasks);
    memset(c, 0, sizeof(*c));
}

void loss_series_add(struct loss_series *s, int64_t step, double loss)
{
    while (s->n && s->v[s->n - 1].step >= step)
        s->n--;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = sl_xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = (struct loss_point){ step, loss };
}

void loss_curve_task_add(struct loss_curve *c, const char *task, int64_t step, double acc,
                         double acc_norm)
{
    size_t i = 0;
    while (i < c->ntasks && strcmp(c->tasks[i].name, task))
        i++;
    if (i == c->ntasks) {
        if (c->ntasks == LOSS_CURVE_MAX_TASKS)
            return;
        c->tasks = sl_xrealloc(c->tasks, (c->ntasks + 1) * sizeof(*c->tasks));
        memset(&c->tasks[i], 0, sizeof(c->tasks[i]));
        c->tasks[i].name = sl_xstrdup(task);
        c->ntasks++;
    }
    if (isfinite(acc))
        loss_series_add(&c->tasks[i].acc, step, acc);
    if (isfinite(acc_norm))
        loss_series_add(&c->tasks[i].acc_norm, step, acc_norm);
}

static void series_truncate(struct loss_series *s, int64_t step)
{
    while (s->n && s->v[s->n - 1].step > step)
        s->n--;
}

void loss_curve_truncate(struct loss_curve *c, int64_t step)
{
    series_truncate(&c->train, step);
    series_truncate(&c->val, step);
    for (size_t i = 0; i < c->ntasks; i++) {
        series_truncate(&c->tasks[i].acc, step);
        series_truncate(&c->tasks[i].acc_norm, step);
    }
}

/* A 1, 2 or 5 times a power of ten near span / n. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = pow(10.0, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* A panel: data ranges x0..x1, y0..y1 drawn into the pixel box left..right, top..bottom. */
struct frame {
    double x0, x1, y0, y1;
    int top, bottom;
};

static double px(const struct frame *f, double x)
{
    return ML + (x - f->x0) / (f->x1 - f->x0) * (W - ML - MR);
}

static double py(const struct frame *f, double y)
{
    return f->bottom - (y - f->y0) / (f->y1 - f->y0) * (f->bottom - f->top);
}

static void range(const struct loss_series *s, struct frame *f, int *any)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!isfinite(s->v[i].loss))
            continue;
        double x = (double)s->v[i].step, y = s->v[i].loss;
        if (!*any) {
            f->x0 = f->x1 = x;
            f->y0 = f->y1 = y;
            *any = 1;
        }
        f->x0 = fmin(f->x0, x), f->x1 = fmax(f->x1, x);
        f->y0 = fmin(f->y0, y), f->y1 = fmax(f->y1, y);
    }
}

/* One series; cls names it in the document (class="..."; tests find the curves by it). */
static void polyline(struct sl_buf *b, const struct frame *f, const struct loss_series *s,
                     const char *color, int markers, int dashed, const char *cls)
{
    size_t finite = 0;
    for (size_t i = 0; i < s->n; i++)
        finite += isfinite(s->v[i].loss) != 0;
    if (!finite)
        return;
    size_t group = (finite + MAX_POINTS - 1) / MAX_POINTS;
    sl_buf_puts(b, "<polyline class=\"");
    sl_buf_xml_text(b, cls);
    sl_buf_printf(b, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", color,
                  dashed ? " stroke-dasharray=\"5 3\"" : "");
    double sx = 0, sy = 0;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!isfinite(s->v[i].loss))
            continue;
        sx += (double)s->v[i].step;
        sy += s->v[i].loss;
        if (++k == group) {
            sl_buf_printf(b, "%.1f,%.1f ", px(f, sx / k), py(f, sy / k));
            sx = sy = 0;
            k = 0;
        }
    }
    if (k)
        sl_buf_printf(b, "%.1f,%.1f ", px(f, sx / k), py(f, sy / k));
    sl_buf_puts(b, "\"/>\n");
    if (markers && finite <= MAX_POINTS)
        for (size_t i = 0; i < s->n; i++)
            if (isfinite(s->v[i].loss))
                sl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                              px(f, (double)s->v[i].step), py(f, s->v[i].loss), color);
}

/* Pad the y range by 5 % (a flat series gets a band around its value). */
static void pad_y(struct frame *f)
{
    double pad = (f->y1 - f->y0) * 0.05;
    if (pad <= 0)
        pad = fmax(fabs(f->y0) * 0.05, 0.05);
    f->y0 -= pad, f->y1 += pad;
}

/* Grid, ticks, the box and the axis labels of a panel. */
static void axes(struct sl_buf *b, const struct frame *f, const char *ylabel)
{
    double xs = nice_step(f->x1 - f->x0, 8), ys = nice_step(f->y1 - f->y0, 6);
    for (double x = ceil(f->x0 / xs) * xs; x <= f->x1 + 1e-9 * xs; x += xs)
        sl_buf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n"
                      "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.10g</text>\n",
                      px(f, x), f->top, px(f, x), f->bottom, px(f, x), f->bottom + 16, x);
    for (double y = ceil(f->y0 / ys) * ys; y <= f->y1 + 1e-9 * ys; y += ys)
        sl_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n"
                      "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n",
                      ML, py(f, y), W - MR, py(f, y), ML - 6, py(f, y) + 4,
                      fabs(y) < 1e-12 * ys ? 0.0 : y);
    int mid = (f->top + f->bottom) / 2;
    sl_buf_printf(b,
                  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                  "stroke=\"#444\"/>\n"
                  "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n"
                  "<text x=\"18\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 18 %d)\">"
                  "%s</text>\n",
                  ML, f->top, W - ML - MR, f->bottom - f->top, (W + ML - MR) / 2, f->bottom + 41,
                  mid, mid, ylabel);
}

static const char *const task_colors[] = { "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                           "#e377c2", "#7f7f7f", "#bcbd22", "#17becf" };

/* The accuracy panel: acc solid, acc_norm dashed, one color per task. */
static void task_panel(const struct loss_curve *c, struct frame f, struct sl_buf *b)
{
    int any = 0;
    struct frame r = f;
    for (size_t i = 0; i < c->ntasks; i++) {
        range(&c->tasks[i].acc, &r, &any);
        range(&c->tasks[i].acc_norm, &r, &any);
    }
    f.y0 = any ? r.y0 : 0, f.y1 = any ? r.y1 : 1;
    pad_y(&f);
    f.y0 = fmax(f.y0, 0.0), f.y1 = fmin(f.y1, 1.0);
    if (f.y1 - f.y0 < 0.01)
        f.y0 = fmax(0.0, f.y1 - 0.05), f.y1 = fmin(1.0, f.y0 + 0.1);
    sl_buf_puts(b, "<g class=\"tasks\">\n");
    axes(b, &f, "task accuracy");
    int lx = W - MR - 230, ly = f.top + 12;
    for (size_t i = 0; i < c->ntasks; i++) {
        const struct loss_task *t = &c->tasks[i];
        const char *color = task_colors[i % (sizeof(task_colors) / sizeof(task_colors[0]))];
        char *cls = sl_xasprintf("task %s acc", t->name);
        polyline(b, &f, &t->acc, color, 1, 0, cls);
        free(cls);
        cls = sl_xasprintf("task %s acc_norm", t->name);
        polyline(b, &f, &t->acc_norm, color, 1, 1, cls);
        free(cls);
        for (int k = 0; k < 2; k++) {
            const struct loss_series *s = k ? &t->acc_norm : &t->acc;
            if (!s->n)
                continue;
            sl_buf_printf(b,
                          "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                          "stroke-width=\"2\"%s/><text x=\"%d\" y=\"%d\">",
                          lx, ly, lx + 24, ly, color, k ? " stroke-dasharray=\"5 3\"" : "", lx + 30,
                          ly + 4);
            sl_buf_xml_text(b, t->name);
            sl_buf_puts(b, k ? " acc_norm</text>\n" : " acc</text>\n");
            ly += 18;
        }
    }
    sl_buf_puts(b, "</g>\n");
}

int loss_curve_svg(const struct loss_curve *c, const char *title, struct sl_buf *b)
{
    struct frame f = { 0, 1, 0, 1, MT, H - MB };
    int any = 0;
    range(&c->train, &f, &any);
    range(&c->val, &f, &any);
    /* the task panel shares the step axis */
    struct frame all = f;
    int any_all = any, tasks = 0;
    for (size_t i = 0; i < c->ntasks; i++) {
        tasks |= c->tasks[i].acc.n || c->tasks[i].acc_norm.n;
        range(&c->tasks[i].acc, &all, &any_all);
        range(&c->tasks[i].acc_norm, &all, &any_all);
    }
    f.x0 = all.x0, f.x1 = all.x1;
    if (!any)
        f.y0 = 0, f.y1 = 1;
    if (f.x1 - f.x0 < 1)
        f.x0 -= 1, f.x1 += 1;
    pad_y(&f);
    int height = H + (tasks ? HT : 0);
    sl_buf_printf(b,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                  "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
                  W, height, W, height, W, height);
    sl_buf_printf(b, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", W / 2);
    sl_buf_xml_text(b, title);
    sl_buf_puts(b, "</text>\n");
    axes(b, &f, "loss");
    if (!any)
        sl_buf_printf(b,
                      "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#888\">no "
                      "losses yet</text>\n",
                      (W + ML - MR) / 2, (H + MT - MB) / 2);
    polyline(b, &f, &c->train, "#1f77b4", 0, 0, "train loss");
    polyline(b, &f, &c->val, "#ff7f0e", 1, 0, "validation loss");
    /* legend */
    int lx = W - MR - 150, ly = MT + 12;
    sl_buf_printf(b,
                  "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#1f77b4\" "
                  "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">train loss</text>\n",
                  lx, ly, lx + 24, ly, lx + 30, ly + 4);
    if (c->val.n)
        sl_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ff7f0e\" "
                      "stroke-width=\"2\"/><circle cx=\"%d\" cy=\"%d\" r=\"3\" fill=\"#ff7f0e\"/>"
                      "<text x=\"%d\" y=\"%d\">validation loss</text>\n",
                      lx, ly + 18, lx + 24, ly + 18, lx + 12, ly + 18, lx + 30, ly + 22);
    if (tasks) {
        struct frame tf = f;
        tf.top = H + MT - 20;
        tf.bottom = H + HT - MB;
        task_panel(c, tf, b);
    }
    return sl_buf_puts(b, "</svg>\n");
}

int loss_curve_write_svg(const struct loss_curve *c, const char *title, const char *path)
{
    struct sl_buf b = SL_BUF_INIT;
    int rc = loss_curve_svg(c, title, &b);
    if (!rc)
        rc = sl_write_file_atomic(path, b.data, b.len);
    sl_buf_release(&b);
    return rc;
}
