/* sluice stats: aggregate statistics of JSONL documents before choosing filter thresholds
 * (datatrove's DocStats/LineStats and its score summaries): document length in characters,
 * words and lines, languages, sources, and per-filter score histograms (from --config: every
 * filter of the chain scores every document; or the filter_scores of `filter --annotate`),
 * plus a pipeline's funnel from its summary.json. Written as DIR/stats.json and drawn as
 * DIR/stats.svg. Reads on rank 0; the other ranks wait. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/filter/chain.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_stats_usage[] = {
    "sluice stats --out DIR [--config F.yaml] [--pipeline WORK] [options] [IN...]",
    "",
    "Aggregate statistics of JSONL documents (files or directories), to look at before",
    "choosing filter thresholds: document length (characters, words, lines), languages",
    "(the lang member), sources (the source member) and, per filter, the histogram and",
    "quantiles of its score: with --config every filter of the chain scores every document",
    "(nothing is dropped); without it, the filter_scores that `filter --annotate` wrote.",
    "--pipeline WORK adds the funnel of a pipeline run (documents after each stage, from",
    "WORK/summary.json). Writes DIR/stats.json and DIR/stats.svg and prints a summary.",
    NULL,
};

#define NBINS      20
#define NLOG       32
#define MAX_VALUES (64u << 20) /* scores kept per filter (for quantiles) */

/* Counts by name (languages, sources), first-seen order. */
struct tally {
    char **names;
    uint64_t *n;
    size_t len, cap;
};

static void tally_add(struct tally *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->len; i++)
        if (strlen(t->names[i]) == len && !memcmp(t->names[i], name, len)) {
            t->n[i]++;
            return;
        }
    if (t->len == 10000) /* a cap: untrusted input */
        return tally_add(t, "(other)", 7);
    if (t->len == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->names = sl_xrealloc(t->names, t->cap * sizeof(char *));
        t->n = sl_xrealloc(t->n, t->cap * sizeof(uint64_t));
    }
    t->names[t->len] = sl_xstrndup(name, len);
    t->n[t->len++] = 1;
}

static void tally_release(struct tally *t)
{
    for (size_t i = 0; i < t->len; i++)
        free(t->names[i]);
    free(t->names);
    free(t->n);
}

/* Powers of two: bin 0 holds 0, bin k holds [2^(k-1), 2^k). */
struct loghist {
    uint64_t bin[NLOG];
    uint64_t sum, max;
};

static void loghist_add(struct loghist *h, uint64_t v)
{
    int k = 0;
    while (k < NLOG - 1 && v >= (1ull << k))
        k++;
    h->bin[k]++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

/* The scores of one filter. */
struct score {
    char *name;
    double *v;
    size_t n, cap;
    uint64_t missing; /* documents without a score (NaN, or the filter did not run) */
    struct tally reasons; /* with --config: documents by the reason it would drop them, or keep */
};

static void score_add(struct score *s, double v)
{
    if (isnan(v) || isinf(v)) {
        s->missing++;
        return;
    }
    if (s->n == MAX_VALUES)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->v = sl_xrealloc(s->v, s->cap * sizeof(double));
    }
    s->v[s->n++] = v;
}

static struct score *score_find(struct score **all, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp((*all)[i].name, name))
            return &(*all)[i];
    if (*n >= 256)
        return NULL;
    *all = sl_xrealloc(*all, (*n + 1) * sizeof(**all));
    struct score *s = &(*all)[(*n)++];
    memset(s, 0, sizeof(*s));
    s->name = sl_xstrdup(name);
    return s;
}

struct stats {
    uint64_t docs, bytes;
    struct loghist chars, words, lines;
    struct tally lang, source;
    struct score *scores;
    size_t nscores;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void count_text(struct stats *st, const char *t, size_t n)
{
    uint64_t chars = 0, words = 0, lines = n ? 1 : 0;
    int in_word = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)t[i];
        chars += (c & 0xC0) != 0x80;
        int space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (!space && !in_word)
            words++;
        in_word = !space;
        if (c == '\n' && i + 1 < n)
            lines++;
    }
    loghist_add(&st->chars, chars);
    loghist_add(&st->words, words);
    loghist_add(&st->lines, lines);
}

/* What one input's documents are measured with. */
struct read_run {
    struct stats *st;
    const struct sl_input *in;
    struct sl_filter_chain *ch; /* NULL: the documents' own filter_scores */
    struct sl_fctx ctx;
    struct sl_filter_result *res;
    struct sl_buf b;
    struct sl_progress *prog;
    uint64_t done; /* bytes of the inputs before this one */
};

/* Every filter of the chain scores the document. */
static int score_chain(struct read_run *x, struct sl_jsonl_reader *r, struct sl_doc *doc,
                       const char *text, size_t tlen)
{
    struct sl_filter_chain *ch = x->ch;
    sl_buf_reset(&x->b);
    const char *lg = NULL;
    if (!sl_doc_get_str(doc, ch->env.lang_key, &x->b) && x->b.len && x->b.len < 16)
        lg = x->b.data;
    sl_fctx_begin(&x->ctx, doc, text, tlen, lg);
    if (sl_filter_chain_run(ch, &x->ctx, 1, x->res) < -1)
        return sl_err_wrap(SL_ERR_STATE, "%s:%llu: ", x->in->path,
                           (unsigned long long)sl_jsonl_line_no(r));
    for (size_t i = 0; i < ch->n; i++) {
        struct score *s = score_find(&x->st->scores, &x->st->nscores, ch->f[i].name);
        if (s) {
            score_add(s, x->res[i].score);
            const char *why = x->res[i].keep || !x->res[i].reason ? "keep" : x->res[i].reason;
            tally_add(&s->reasons, why, strlen(why));
        }
    }
    return 0;
}

/* The filter_scores that `filter --annotate` wrote into the document. */
static void score_annotated(struct stats *st, struct sl_doc *doc)
{
    struct json_object *fs = sl_doc_get_json(doc, "filter_scores");
    if (fs && json_object_is_type(fs, json_type_object)) {
        json_object_object_foreach(fs, k, v)
        {
            struct score *s = score_find(&st->scores, &st->nscores, k);
            if (s)
                score_add(s,
                          json_object_is_type(v, json_type_null) ? NAN : json_object_get_double(v));
        }
    }
    json_object_put(fs);
}

static int count_doc(void *arg, struct sl_jsonl_reader *r, struct sl_doc *doc)
{
    struct read_run *x = arg;
    struct stats *st = x->st;
    size_t tlen;
    const char *text = sl_doc_text(doc, &tlen);
    st->docs++;
    st->bytes += doc->raw.len + 1;
    count_text(st, text, tlen);
    sl_buf_reset(&x->b);
    if (sl_doc_get_str(doc, "lang", &x->b) == 0 && x->b.len)
        tally_add(&st->lang, x->b.data, x->b.len);
    else
        tally_add(&st->lang, "(none)", 6);
    sl_buf_reset(&x->b);
    if (sl_doc_get_str(doc, "source", &x->b) == 0 && x->b.len)
        tally_add(&st->source, x->b.data, x->b.len);
    else
        tally_add(&st->source, "(none)", 6);
    int rc = 0;
    if (x->ch)
        rc = score_chain(x, r, doc, text, tlen);
    else
        score_annotated(st, doc);
    if (!rc && st->docs % 256 == 0)
        sl_progress_update(x->prog, x->done + sl_jsonl_bytes_in(r), st->docs);
    return rc;
}

static int read_file(struct stats *st, const struct sl_input *in, const char *text_key,
                     struct sl_filter_chain *ch, struct sl_progress *prog, uint64_t *done)
{
    struct sl_jsonl_opts jo = { .max_line = SL_JSONL_DEFAULT_MAX_LINE,
                                .text_key = text_key,
                                .repair_utf8 = 1,
                                .on_skip = sl_warn_skip };
    struct read_run x = { .st = st, .in = in, .ch = ch, .prog = prog, .done = *done };
    if (ch) {
        sl_fctx_init(&x.ctx, &ch->env);
        x.res = sl_xcalloc(ch->n, sizeof(*x.res));
    }
    int rc = sl_input_docs(in, &jo, count_doc, &x);
    *done += in->size;
    sl_progress_update(prog, *done, st->docs);
    sl_buf_release(&x.b);
    if (ch) {
        sl_fctx_release(&x.ctx);
        free(x.res);
    }
    return rc;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_loghist(struct sl_buf *b, const char *name, const struct loghist *h, uint64_t n)
{
    sl_buf_printf(b, "  \"%s\": {\"mean\": %.6g, \"max\": %llu, \"bins\": [", name,
                  n ? (double)h->sum / (double)n : 0.0, (unsigned long long)h->max);
    int last = 0;
    for (int k = 0; k < NLOG; k++)
        if (h->bin[k])
            last = k;
    for (int k = 0; k <= last; k++)
        sl_buf_printf(b, "%s{\"from\": %llu, \"to\": %llu, \"documents\": %llu}", k ? ", " : "",
                      k ? 1ull << (k - 1) : 0ull, k ? (1ull << k) : 1ull,
                      (unsigned long long)h->bin[k]);
    sl_buf_puts(b, "]},\n");
}

static void json_tally(struct sl_buf *b, const char *name, const struct tally *t, int last)
{
    /* most documents first */
    size_t *idx = sl_xcalloc(t->len + 1, sizeof(size_t));
    for (size_t i = 0; i < t->len; i++)
        idx[i] = i;
    for (size_t i = 1; i < t->len; i++)
        for (size_t j = i; j > 0 && t->n[idx[j - 1]] < t->n[idx[j]]; j--) {
            size_t x = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = x;
        }
    sl_buf_printf(b, "  \"%s\": {", name);
    for (size_t i = 0; i < t->len; i++) {
        sl_buf_puts(b, i ? ", " : "");
        sl_buf_json_str(b, t->names[idx[i]], strlen(t->names[idx[i]]));
        sl_buf_printf(b, ": %llu", (unsigned long long)t->n[idx[i]]);
    }
    sl_buf_puts(b, last ? "}\n" : "},\n");
    free(idx);
}

static double quantile(const struct score *s, double q)
{
    if (!s->n)
        return NAN;
    double pos = q * (double)(s->n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < s->n ? s->v[i] * (1 - f) + s->v[i + 1] * f : s->v[i];
}

static void put_num(struct sl_buf *b, double v)
{
    if (isnan(v) || isinf(v))
        sl_buf_puts(b, "null");
    else
        sl_buf_printf(b, "%.6g", v);
}

/* Equal-width bins between the smallest and largest score. */
static void score_bins(const struct score *s, uint64_t bins[NBINS], double *lo, double *hi)
{
    memset(bins, 0, sizeof(uint64_t) * NBINS);
    *lo = s->n ? s->v[0] : 0;
    *hi = s->n ? s->v[s->n - 1] : 0;
    double w = (*hi - *lo) / NBINS;
    for (size_t i = 0; i < s->n; i++) {
        int k = w > 0 ? (int)((s->v[i] - *lo) / w) : 0;
        bins[k >= NBINS ? NBINS - 1 : k]++;
    }
}

static const double qs[] = { 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99 };

static void json_scores(struct sl_buf *b, const struct stats *st)
{
    sl_buf_puts(b, "  \"filter_scores\": {");
    for (size_t i = 0; i < st->nscores; i++) {
        const struct score *s = &st->scores[i];
        sl_buf_puts(b, i ? ",\n    " : "\n    ");
        sl_buf_json_str(b, s->name, strlen(s->name));
        sl_buf_printf(b, ": {\"documents\": %llu, \"no_score\": %llu, \"mean\": ",
                      (unsigned long long)s->n, (unsigned long long)s->missing);
        double sum = 0;
        for (size_t k = 0; k < s->n; k++)
            sum += s->v[k];
        put_num(b, s->n ? sum / (double)s->n : NAN);
        sl_buf_puts(b, ", \"quantiles\": {");
        for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
            sl_buf_printf(b, "%s\"p%g\": ", k ? ", " : "", qs[k] * 100);
            put_num(b, quantile(s, qs[k]));
        }
        uint64_t bins[NBINS];
        double lo, hi;
        score_bins(s, bins, &lo, &hi);
        sl_buf_puts(b, "}, \"bins\": [");
        for (int k = 0; s->n && k < NBINS; k++) {
            double w = (hi - lo) / NBINS;
            sl_buf_puts(b, k ? ", {\"from\": " : "{\"from\": ");
            put_num(b, lo + k * w);
            sl_buf_puts(b, ", \"to\": ");
            put_num(b, k + 1 == NBINS ? hi : lo + (k + 1) * w);
            sl_buf_printf(b, ", \"documents\": %llu}", (unsigned long long)bins[k]);
        }
        sl_buf_puts(b, "]}");
    }
    sl_buf_puts(b, st->nscores ? "\n  }" : "}");
}

/* With --config: per filter, the documents it would keep and drop by reason (first seen
 * first), as "filter_reasons"; nothing without --config. */
static void json_reasons(struct sl_buf *b, const struct stats *st)
{
    int any = 0;
    for (size_t i = 0; i < st->nscores; i++) {
        const struct tally *t = &st->scores[i].reasons;
        if (!t->len)
            continue;
        sl_buf_puts(b, any ? ",\n    " : ",\n  \"filter_reasons\": {\n    ");
        any = 1;
        sl_buf_json_str(b, st->scores[i].name, strlen(st->scores[i].name));
        sl_buf_puts(b, ": {");
        for (size_t k = 0; k < t->len; k++) {
            sl_buf_puts(b, k ? ", " : "");
            sl_buf_json_str(b, t->names[k], strlen(t->names[k]));
            sl_buf_printf(b, ": %llu", (unsigned long long)t->n[k]);
        }
        sl_buf_putc(b, '}');
    }
    if (any)
        sl_buf_puts(b, "\n  }");
}

/* The funnel of a pipeline run: its steps' documents in and out, from summary.json. */
struct funnel {
    char **step;
    uint64_t *in, *out;
    size_t n;
};

static int load_funnel(const char *work, struct funnel *f)
{
    char *path = sl_xasprintf("%s/summary.json", work);
    struct json_object *m = json_object_from_file(path), *steps;
    int rc = 0;
    if (!m || !json_object_object_get_ex(m, "steps", &steps) ||
        !json_object_is_type(steps, json_type_array)) {
        rc = sl_err_set(SL_ERR_NOTFOUND,
                        "cannot read the pipeline summary '%s'\nhint: --pipeline takes the "
                        "work_dir of a `sluice run` that finished",
                        path);
    } else {
        size_t n = json_object_array_length(steps);
        f->step = sl_xcalloc(n + 1, sizeof(char *));
        f->in = sl_xcalloc(n + 1, sizeof(uint64_t));
        f->out = sl_xcalloc(n + 1, sizeof(uint64_t));
        for (size_t i = 0; i < n; i++) {
            struct json_object *s = json_object_array_get_idx(steps, i), *v;
            if (!json_object_object_get_ex(s, "documents_out", &v))
                continue; /* tokenizer training: no documents */
            f->out[f->n] = (uint64_t)json_object_get_int64(v);
            f->in[f->n] = json_object_object_get_ex(s, "documents_in", &v)
                              ? (uint64_t)json_object_get_int64(v)
                              : 0;
            f->step[f->n] = sl_xstrdup(
                json_object_object_get_ex(s, "step", &v) ? json_object_get_string(v) : "?");
            f->n++;
        }
    }
    json_object_put(m);
    free(path);
    return rc;
}

static void funnel_release(struct funnel *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->step[i]);
    free(f->step);
    free(f->in);
    free(f->out);
}

static void json_funnel(struct sl_buf *b, const struct funnel *f)
{
    sl_buf_puts(b, ",\n  \"funnel\": [");
    for (size_t i = 0; i < f->n; i++) {
        sl_buf_puts(b, i ? ",\n    {\"step\": " : "\n    {\"step\": ");
        sl_buf_json_str(b, f->step[i], strlen(f->step[i]));
        sl_buf_printf(b, ", \"documents_in\": %llu, \"documents_out\": %llu, \"kept_of_first\": ",
                      (unsigned long long)f->in[i], (unsigned long long)f->out[i]);
        put_num(b, f->in[0] ? (double)f->out[i] / (double)f->in[0] : NAN);
        sl_buf_putc(b, '}');
    }
    sl_buf_puts(b, f->n ? "\n  ]" : "]");
}

/* ---- SVG: one small bar chart per panel ------------------------------------------------ */

struct panel {
    char title[160];
    size_t n;
    const uint64_t *v;
    char (*label)[24]; /* n labels */
};

static void svg_panel(struct sl_buf *b, const struct panel *p, int x, int y, int w, int h)
{
    uint64_t max = 1;
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i] > max)
            max = p->v[i];
    sl_buf_printf(b, "<g transform=\"translate(%d,%d)\">\n<text x=\"0\" y=\"14\" font-size=\"13\">",
                  x, y);
    sl_buf_xml_text(b, p->title);
    sl_buf_puts(b, "</text>\n");
    int top = 24, bottom = h - 28, ph = bottom - top;
    sl_buf_printf(b, "<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", bottom, w,
                  bottom);
    double bw = p->n ? (double)w / (double)p->n : w;
    for (size_t i = 0; i < p->n; i++) {
        double bh = (double)ph * (double)p->v[i] / (double)max;
        sl_buf_printf(b,
                      "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                      "fill=\"#4a7ab5\"><title>",
                      i * bw + 1, bottom - bh, bw > 3 ? bw - 2 : bw, bh);
        sl_buf_xml_text(b, p->label[i]);
        sl_buf_printf(b, ": %llu</title></rect>\n", (unsigned long long)p->v[i]);
        if (p->n <= 12 || i % (p->n / 6 + 1) == 0) {
            sl_buf_printf(b, "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">",
                          i * bw + bw / 2, bottom + 12);
            sl_buf_xml_text(b, p->label[i]);
            sl_buf_puts(b, "</text>\n");
        }
    }
    sl_buf_printf(b, "<text x=\"0\" y=\"%d\" font-size=\"9\" fill=\"#555\">max %llu</text>\n",
                  bottom + 24, (unsigned long long)max);
    sl_buf_puts(b, "</g>\n");
}

static void loghist_panel(struct panel *p, const char *title, const struct loghist *h, uint64_t *v,
                          char (*lab)[24])
{
    int last = 0;
    for (int k = 0; k < NLOG; k++)
        if (h->bin[k])
            last = k;
    for (int k = 0; k <= last; k++) {
        v[k] = h->bin[k];
        unsigned long long lo = k ? 1ull << (k - 1) : 0;
        if (lo >= 1000000)
            snprintf(lab[k], 24, "%lluM", lo / 1000000);
        else if (lo >= 1000)
            snprintf(lab[k], 24, "%lluk", lo / 1000);
        else
            snprintf(lab[k], 24, "%llu", lo);
    }
    snprintf(p->title, sizeof(p->title), "%s (log2 bins)", title);
    p->n = (size_t)last + 1;
    p->v = v;
    p->label = lab;
}

static void tally_panel(struct panel *p, const char *title, const struct tally *t, uint64_t *v,
                        char (*lab)[24])
{
    /* the 12 largest */
    size_t n = 0;
    int *taken = sl_xcalloc(t->len + 1, sizeof(int));
    for (; n < 12 && n < t->len; n++) {
        size_t best = (size_t)-1;
        for (size_t i = 0; i < t->len; i++)
            if (!taken[i] && (best == (size_t)-1 || t->n[i] > t->n[best]))
                best = i;
        taken[best] = 1;
        v[n] = t->n[best];
        snprintf(lab[n], 24, "%s", t->names[best]);
    }
    free(taken);
    snprintf(p->title, sizeof(p->title), "%s (%zu values)", title, t->len);
    p->n = n;
    p->v = v;
    p->label = lab;
}

static int write_svg(const char *path, const struct stats *st, const struct funnel *f)
{
    size_t npanels = 5 + st->nscores;
    struct panel *ps = sl_xcalloc(npanels, sizeof(*ps));
    uint64_t(*vals)[NLOG] = sl_xcalloc(npanels, sizeof(*vals));
    char(*labs)[NLOG][24] = sl_xcalloc(npanels, sizeof(*labs));
    size_t np = 0;
    loghist_panel(&ps[np], "characters per document", &st->chars, vals[np], labs[np]);
    np++;
    loghist_panel(&ps[np], "words per document", &st->words, vals[np], labs[np]);
    np++;
    loghist_panel(&ps[np], "lines per document", &st->lines, vals[np], labs[np]);
    np++;
    tally_panel(&ps[np], "languages", &st->lang, vals[np], labs[np]);
    np++;
    tally_panel(&ps[np], "sources", &st->source, vals[np], labs[np]);
    np++;
    for (size_t i = 0; i < st->nscores; i++, np++) {
        const struct score *s = &st->scores[i];
        double lo, hi;
        score_bins(s, vals[np], &lo, &hi);
        for (int k = 0; k < NBINS; k++)
            snprintf(labs[np][k], 24, "%.3g", lo + k * (hi - lo) / NBINS);
        snprintf(ps[np].title, sizeof(ps[np].title), "score of %s (p50 %.3g)", s->name,
                 quantile(s, 0.5));
        ps[np].n = s->n ? NBINS : 0;
        ps[np].v = vals[np];
        ps[np].label = labs[np];
    }
    int cols = 3, pw = 300, ph = 170;
    int rows = (int)((np + (size_t)cols - 1) / (size_t)cols);
    int fh = f->n ? 40 + 26 * (int)f->n : 0;
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_printf(&b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
                  "fill=\"white\"/>\n<text x=\"20\" y=\"24\" font-size=\"16\">%llu documents, "
                  "%llu bytes</text>\n",
                  cols * (pw + 30) + 20, 40 + rows * (ph + 20) + fh, (unsigned long long)st->docs,
                  (unsigned long long)st->bytes);
    for (size_t i = 0; i < np; i++)
        svg_panel(&b, &ps[i], 20 + (int)(i % (size_t)cols) * (pw + 30),
                  40 + (int)(i / (size_t)cols) * (ph + 20), pw, ph);
    if (f->n) {
        int y0 = 40 + rows * (ph + 20);
        sl_buf_printf(&b,
                      "<text x=\"20\" y=\"%d\" font-size=\"14\">pipeline funnel: documents "
                      "after each step</text>\n",
                      y0 + 16);
        uint64_t top = f->in[0] > f->out[0] ? f->in[0] : f->out[0];
        for (size_t i = 0; i < f->n; i++) {
            double w = top ? 600.0 * (double)f->out[i] / (double)top : 0;
            int y = y0 + 28 + 26 * (int)i;
            sl_buf_printf(&b, "<text x=\"20\" y=\"%d\" font-size=\"12\">", y + 14);
            sl_buf_xml_text(&b, f->step[i]);
            sl_buf_printf(&b,
                          "</text>\n<rect x=\"160\" y=\"%d\" width=\"%.1f\" height=\"18\" "
                          "fill=\"#5a9e6f\"/>\n<text x=\"%.1f\" y=\"%d\" font-size=\"11\">%llu"
                          "</text>\n",
                          y, w, 166 + w, y + 14, (unsigned long long)f->out[i]);
        }
    }
    sl_buf_puts(&b, "</svg>\n");
    int rc = sl_write_file_atomic(path, b.data, b.len);
    sl_buf_release(&b);
    free(ps);
    free(vals);
    free(labs);
    return rc;
}

static int write_json(const char *path, const struct stats *st, const struct funnel *f,
                      const char *config)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_printf(&b, "{\n  \"documents\": %llu,\n  \"bytes\": %llu,\n  \"scores_from\": ",
                  (unsigned long long)st->docs, (unsigned long long)st->bytes);
    if (config)
        sl_buf_json_str(&b, config, strlen(config));
    else
        sl_buf_puts(&b, "\"filter_scores\"");
    sl_buf_puts(&b, ",\n");
    json_loghist(&b, "characters", &st->chars, st->docs);
    json_loghist(&b, "words", &st->words, st->docs);
    json_loghist(&b, "lines", &st->lines, st->docs);
    json_tally(&b, "languages", &st->lang, 0);
    json_tally(&b, "sources", &st->source, 0);
    json_scores(&b, st);
    json_reasons(&b, st);
    if (f->n)
        json_funnel(&b, f);
    sl_buf_puts(&b, "\n}\n");
    int rc = sl_write_file_atomic(path, b.data, b.len);
    sl_buf_release(&b);
    return rc;
}

static void print_summary(const struct stats *st, const struct funnel *f)
{
    printf("documents: %llu (%llu bytes); mean %.0f characters, %.0f words, %.1f lines\n",
           (unsigned long long)st->docs, (unsigned long long)st->bytes,
           st->docs ? (double)st->chars.sum / (double)st->docs : 0.0,
           st->docs ? (double)st->words.sum / (double)st->docs : 0.0,
           st->docs ? (double)st->lines.sum / (double)st->docs : 0.0);
    if (st->nscores)
        printf("%-28s %10s %10s %10s %10s %10s\n", "filter score", "p5", "p25", "p50", "p75",
               "p95");
    for (size_t i = 0; i < st->nscores; i++) {
        const struct score *s = &st->scores[i];
        printf("%-28s %10.4g %10.4g %10.4g %10.4g %10.4g\n", s->name, quantile(s, 0.05),
               quantile(s, 0.25), quantile(s, 0.5), quantile(s, 0.75), quantile(s, 0.95));
    }
    for (size_t i = 0; i < f->n; i++)
        printf("%s%-20s %12llu -> %12llu\n", i ? "" : "funnel:\n", f->step[i],
               (unsigned long long)f->in[i], (unsigned long long)f->out[i]);
}

struct opts {
    const char *out, *config, *pipeline, *text_key;
    struct sl_strlist set;
};

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_stats_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "writes DIR/stats.json and DIR/stats.svg", .required = 1),
    SL_OPT_STRING('c', "config", config, "F.yaml",
                  "score every document with every filter of this chain"),
    SL_OPT_STRINGS(0, "set", set, "KEY=VALUE", "override a value of the --config chain"),
    SL_OPT_STRING(0, "pipeline", pipeline, "WORK",
                  "add the funnel of the pipeline run in WORK (its summary.json)"),
    SL_OPT_STRING(0, "text-key", text_key, "KEY", "member that holds the text", .def = "text"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int check(void *opts, const struct sl_strlist *rest)
{
    const struct opts *o = opts;
    if (rest->n == 0 && !o->pipeline)
        return sl_err_set(SL_ERR_USAGE, "no inputs given (and no --pipeline)");
    if (o->set.n && !o->config)
        return sl_err_set(SL_ERR_USAGE, "--set goes with --config");
    return 0;
}

/* rank 0 reads (rank0) */
static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct opts *o = opts;
    const char *out = o->out, *config = o->config, *pipeline = o->pipeline, *text_key = o->text_key;
    const struct sl_strlist set = o->set;
    int rc = 0;
    struct stats st;
    memset(&st, 0, sizeof(st));
    struct funnel fn;
    memset(&fn, 0, sizeof(fn));
    struct sl_filter_chain *ch = NULL;
    struct sl_inputs in;
    memset(&in, 0, sizeof(in));
    if (config)
        rc = sl_filter_chain_load(&ch, config, set.v, set.n);
    if (!rc && rest->n)
        rc = sl_inputs_expand(&in, (const char *const *)rest->v, rest->n, sl_jsonl_exts);
    if (!rc && pipeline)
        rc = load_funnel(pipeline, &fn);
    if (!rc)
        rc = sl_mkdir_p(out);
    struct sl_progress prog;
    sl_progress_start(&prog, "stats", sl_inputs_total_size(&in), 1, 1);
    uint64_t done = 0;
    for (size_t i = 0; !rc && i < in.n; i++)
        rc = read_file(&st, &in.v[i], text_key, ch, &prog, &done);
    sl_progress_finish(&prog);
    sl_warn_limited_summary();
    for (size_t i = 0; !rc && i < st.nscores; i++)
        qsort(st.scores[i].v, st.scores[i].n, sizeof(double), cmp_double);
    char *jp = sl_xasprintf("%s/stats.json", out), *sp = sl_xasprintf("%s/stats.svg", out);
    if (!rc)
        rc = write_json(jp, &st, &fn, config);
    if (!rc)
        rc = write_svg(sp, &st, &fn);
    if (!rc) {
        print_summary(&st, &fn);
        if (rest->n && !st.nscores)
            sl_info("stats: no filter scores: give --config F.yaml, or inputs written by "
                    "`sluice filter --annotate`");
        printf("stats: %s\nhistograms: %s\n", jp, sp);
    }
    free(jp);
    free(sp);
    for (size_t i = 0; i < st.nscores; i++) {
        free(st.scores[i].name);
        free(st.scores[i].v);
        tally_release(&st.scores[i].reasons);
    }
    free(st.scores);
    tally_release(&st.lang);
    tally_release(&st.source);
    funnel_release(&fn);
    if (in.v)
        sl_inputs_release(&in);
    sl_filter_chain_free(ch);
    return rc;
}

const struct sl_cmd cmd_stats =
    SL_CMD(cmd_stats_usage, cmd_stats_options, struct opts, check, run, .rank0 = 1);
