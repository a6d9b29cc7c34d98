/* The summary of a pipeline run: a table, summary.json and funnel.svg. */
#include "pipeline/report.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "pipeline/internal.h"
#include "pipeline/pipeline.h"
#include "train/losscurve.h"

#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The trainer's log (log.file): loss per logged step and validation losses, as the curves of
 * train/losscurve.h (a resumed or restarted run's repeated steps replace the earlier ones),
 * and `seconds`, the sum of every logged step time, restarts included. */
struct curve {
    struct loss_curve lc;
    double seconds;
};

/* "7" is an integer in JSON, "7.25" a double: both are losses; null (not finite) is not */
static int is_number(struct json_object *v)
{
    return json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
}

static int load_curve(const char *path, struct curve *c)
{
    memset(c, 0, sizeof(*c));
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        struct json_object *o = json_tokener_parse(line), *t = NULL, *st = NULL, *v = NULL;
        if (!o)
            continue;
        if (json_object_object_get_ex(o, "type", &t) && json_object_object_get_ex(o, "step", &st)) {
            int64_t step = json_object_get_int64(st);
            const char *type = json_object_get_string(t);
            if (!strcmp(type, "train") && json_object_object_get_ex(o, "loss", &v) &&
                is_number(v)) {
                struct json_object *dt = NULL;
                loss_series_add(&c->lc.train, step, json_object_get_double(v));
                if (json_object_object_get_ex(o, "step_time_s", &dt))
                    c->seconds += json_object_get_double(dt);
            } else if (!strcmp(type, "valid") && json_object_object_get_ex(o, "val_loss", &v) &&
                       is_number(v)) {
                loss_series_add(&c->lc.val, step, json_object_get_double(v));
            }
        }
        json_object_put(o);
    }
    free(line);
    fclose(f);
    return c->lc.train.n > 0;
}

/* the last point of a series (n > 0) */
static const struct loss_point *last(const struct loss_series *s)
{
    return &s->v[s->n - 1];
}

static unsigned long long get_u64(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;
    return o && json_object_object_get_ex(o, k, &v) ? (unsigned long long)json_object_get_uint64(v)
                                                    : 0;
}

/* A step's counts from its manifest, then what its stage's report hook adds. */
static void load_row(struct pl_row *r)
{
    void (*report)(struct pl_row *, struct json_object *) = pl_stages[r->s->stage].report;
    struct json_object *m = NULL, *c = NULL, *w = NULL;
    struct stat st;
    if (r->s->counts_manifest && stat(r->s->counts_manifest, &st) == 0)
        m = json_object_from_file(r->s->counts_manifest);
    if (m && json_object_object_get_ex(m, "counts", &c)) {
        r->have = 1;
        r->docs_in = get_u64(c, "documents_in");
        r->docs_out = get_u64(c, "documents_out");
        r->bytes_out = get_u64(c, "bytes_out");
        r->tokens = get_u64(c, "tokens");
        if (json_object_object_get_ex(m, "wall_seconds", &w))
            r->seconds = json_object_get_double(w);
    }
    if (report)
        report(r, r->have ? m : NULL);
    json_object_put(m);
}

static void commas(char *buf, size_t n, unsigned long long v)
{
    char raw[32];
    snprintf(raw, sizeof(raw), "%llu", v);
    size_t l = strlen(raw), k = 0;
    for (size_t i = 0; i < l && k + 2 < n; i++) {
        if (i && (l - i) % 3 == 0)
            buf[k++] = ',';
        buf[k++] = raw[i];
    }
    buf[k] = '\0';
}

/* One bar per document stage: what is left after it; the part the stage removed is pale. */
static void funnel_svg(const struct pl_pipeline *p, const struct pl_row *rows, struct sl_buf *b)
{
    struct bar {
        const char *name;
        unsigned long long in, out;
        int stage;
    } bars[PL_NSTAGES];
    size_t nb = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct pl_row *r = &rows[i];
        if (!r->have || r->s->aux || r->files)
            continue;
        if (nb && bars[nb - 1].stage == r->s->stage) {
            bars[nb - 1].in += r->docs_in;
            bars[nb - 1].out += r->docs_out;
            continue;
        }
        bars[nb].name = pl_stage_name(r->s->stage);
        bars[nb].in = r->docs_in;
        bars[nb].out = r->docs_out;
        bars[nb].stage = r->s->stage;
        nb++;
    }
    unsigned long long max = 1;
    for (size_t i = 0; i < nb; i++) {
        unsigned long long first = pl_stages[bars[i].stage].source ? bars[i].out : bars[i].in;
        if (first > max)
            max = first;
        if (bars[i].out > max)
            max = bars[i].out;
    }
    const int left = 150, width = 420, rowh = 34, top = 56;
    int h = top + (int)nb * rowh + 40;
    sl_buf_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"760\" height=\"%d\" "
                  "viewBox=\"0 0 760 %d\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
                  "font-size=\"13\">\n"
                  "<rect width=\"760\" height=\"%d\" fill=\"#ffffff\"/>\n"
                  "<text x=\"20\" y=\"30\" font-size=\"17\" font-weight=\"bold\">",
                  h, h, h);
    sl_buf_xml_text(b, p->name);
    sl_buf_puts(b, ": documents after each stage</text>\n");
    for (size_t i = 0; i < nb; i++) {
        int y = top + (int)i * rowh;
        /* a source stage (extract) has no documents before it: its bar is its output */
        unsigned long long in = pl_stages[bars[i].stage].source ? bars[i].out : bars[i].in;
        double win = (double)width * (double)in / (double)max;
        double wout = (double)width * (double)bars[i].out / (double)max;
        char nin[32], nout[32], nrem[32];
        commas(nin, sizeof(nin), in);
        commas(nout, sizeof(nout), bars[i].out);
        commas(nrem, sizeof(nrem), in > bars[i].out ? in - bars[i].out : 0);
        sl_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", left - 10,
                      y + 18, bars[i].name);
        sl_buf_printf(b,
                      "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"24\" fill=\"#c6dbef\"/>\n",
                      left, y + 3, win);
        sl_buf_printf(b,
                      "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"24\" fill=\"#2171b5\"/>\n",
                      left, y + 3, wout);
        sl_buf_printf(b, "<text x=\"%.1f\" y=\"%d\">%s", left + (win > wout ? win : wout) + 8,
                      y + 19, nout);
        if (in > bars[i].out)
            sl_buf_printf(b, " (&#8722;%s)", nrem);
        sl_buf_puts(b, "</text>\n");
        (void)nin;
    }
    sl_buf_printf(b,
                  "<text x=\"20\" y=\"%d\" fill=\"#555555\">dark: documents kept; pale: removed by "
                  "the stage</text>\n</svg>\n",
                  top + (int)nb * rowh + 20);
}

int pl_report(const struct pl_pipeline *p, FILE *table, const char *json_path, const char *svg_path,
              const char *loss_svg_path)
{
    struct pl_row *rows = sl_xcalloc(p->n ? p->n : 1, sizeof(*rows));
    struct curve cv;
    memset(&cv, 0, sizeof(cv));
    const struct pl_step *tr = NULL;
    for (size_t i = 0; i < p->n; i++) {
        rows[i].s = &p->steps[i];
        load_row(&rows[i]);
        if (p->steps[i].train_log && !tr) {
            tr = &p->steps[i];
            if (!load_curve(tr->train_log, &cv))
                tr = NULL;
        }
    }
    if (table) {
        fprintf(table, "%-22s %12s %12s %10s %10s %8s\n", "step", "docs in", "docs out", "removed",
                "MB out", "seconds");
        for (size_t i = 0; i < p->n; i++) {
            const struct pl_row *r = &rows[i];
            if (r->s->aux)
                continue;
            if (r->s == tr) {
                fprintf(table, "%-22s %lld steps, %.1f s; loss %.4f", r->s->label,
                        (long long)last(&cv.lc.train)->step, cv.seconds, last(&cv.lc.train)->loss);
                if (cv.lc.val.n)
                    fprintf(table, ", validation loss %.4f (step %lld)", last(&cv.lc.val)->loss,
                            (long long)last(&cv.lc.val)->step);
                fputc('\n', table);
                continue;
            }
            if (!r->have) {
                if (r->line)
                    fprintf(table, "%-22s %s\n", r->s->label, r->line);
                continue;
            }
            char in[32], out[32], rem[32];
            commas(in, sizeof(in), r->docs_in);
            commas(out, sizeof(out), r->docs_out);
            commas(rem, sizeof(rem), r->docs_in > r->docs_out ? r->docs_in - r->docs_out : 0);
            fprintf(table, "%-22s %12s %12s %10s %10.2f %8.1f", r->s->label, in, out, rem,
                    (double)r->bytes_out / 1e6, r->seconds);
            if (r->has_tokens) {
                char tk[32];
                commas(tk, sizeof(tk), r->tokens);
                fprintf(table, "  %s tokens", tk);
            }
            if (r->files)
                fprintf(table, "  (files)");
            fputc('\n', table);
        }
    }
    int rc = 0;
    if (json_path) {
        struct sl_buf b = SL_BUF_INIT;
        sl_buf_puts(&b, "{\n  \"pipeline\": ");
        sl_buf_json_str(&b, p->name, strlen(p->name));
        sl_buf_puts(&b, ",\n  \"work_dir\": ");
        sl_buf_json_str(&b, p->work_dir, strlen(p->work_dir));
        sl_buf_puts(&b, ",\n  \"steps\": [");
        int first = 1;
        for (size_t i = 0; i < p->n; i++) {
            const struct pl_row *r = &rows[i];
            if (!r->have || r->s->aux)
                continue;
            sl_buf_puts(&b, first ? "\n    {\"step\": " : ",\n    {\"step\": ");
            first = 0;
            sl_buf_json_str(&b, r->s->label, strlen(r->s->label));
            sl_buf_puts(&b, ", \"stage\": ");
            sl_buf_json_str(&b, pl_stage_name(r->s->stage), strlen(pl_stage_name(r->s->stage)));
            sl_buf_puts(&b, ", \"out\": ");
            sl_buf_json_str(&b, r->s->out, strlen(r->s->out));
            sl_buf_printf(&b,
                          ", \"documents_in\": %llu, \"documents_out\": %llu, \"bytes_out\": %llu, "
                          "\"seconds\": %.3f",
                          r->docs_in, r->docs_out, r->bytes_out, r->seconds);
            if (r->has_tokens)
                sl_buf_printf(&b, ", \"tokens\": %llu", r->tokens);
            sl_buf_putc(&b, '}');
        }
        sl_buf_puts(&b, first ? "]" : "\n  ]");
        if (tr) {
            sl_buf_puts(&b, ",\n  \"train\": {\"out\": ");
            sl_buf_json_str(&b, tr->out, strlen(tr->out));
            sl_buf_puts(&b, ", \"log\": ");
            sl_buf_json_str(&b, tr->train_log, strlen(tr->train_log));
            sl_buf_printf(&b, ", \"steps\": %ld, \"seconds\": %.3f, \"loss\": %.9g",
                          (long)last(&cv.lc.train)->step, cv.seconds, last(&cv.lc.train)->loss);
            if (cv.lc.val.n)
                sl_buf_printf(&b, ", \"val_loss\": %.9g, \"val_step\": %ld", last(&cv.lc.val)->loss,
                              (long)last(&cv.lc.val)->step);
            sl_buf_putc(&b, '}');
        }
        sl_buf_puts(&b, "\n}\n");
        rc = sl_write_file_atomic(json_path, b.data, b.len);
        sl_buf_release(&b);
    }
    if (!rc && svg_path) {
        struct sl_buf b = SL_BUF_INIT;
        funnel_svg(p, rows, &b);
        rc = sl_write_file_atomic(svg_path, b.data, b.len);
        sl_buf_release(&b);
    }
    if (!rc && loss_svg_path && tr) {
        char *title = sl_xasprintf("%s: loss (nats per token)", p->name);
        rc = loss_curve_write_svg(&cv.lc, title, loss_svg_path);
        free(title);
    }
    loss_curve_release(&cv.lc);
    for (size_t i = 0; i < p->n; i++)
        free(rows[i].line);
    free(rows);
    return rc;
}
