/* fineweb_quality: the FineWeb line rules with the definitions and defaults of datatrove's
 * FineWebQualityFilter (docs/filters.md). */
#include "core/alloc.h"
#include "core/config.h"
#include "core/hash.h"
#include "curate/filter/filter.h"
#include "curate/filter/punct.h"
#include "curate/filter/uchar.h"

#include <string.h>

struct fw {
    double line_punct_thr, short_line_thr, char_dup_ratio, new_line_ratio;
    int exclude_zero;
    long short_line_length;
    enum sl_words_sel words;
};

static int fw_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct fw *q = f->state;
    const char *t = c->text;
    struct sl_spanvec *lines = &c->s1;
    lines->n = 0;
    size_t start = 0, newlines = 0;
    for (size_t i = 0; i <= c->len; i++) {
        if (i < c->len && t[i] != '\n')
            continue;
        newlines += i < c->len;
        /* keep lines with a non-whitespace character */
        int blank = 1;
        for (size_t j = start; j < i && blank;) {
            uint32_t cp;
            j += uc_next(t + j, i - j, &cp);
            blank = uc_isspace(cp);
        }
        if (!blank)
            sl_spanvec_push(lines, start, i - start);
        start = i + 1;
    }
    r->keep = 1;
    r->score = 0;
    if (!lines->n)
        return sl_filter_drop(r, "empty", 0);
    size_t punct = 0, shorts = 0;
    for (size_t i = 0; i < lines->n; i++) {
        const char *s = t + lines->v[i].off;
        size_t n = lines->v[i].len;
        size_t l = uc_prev_len(s, n);
        uint32_t cp;
        uc_next(s + n - l, l, &cp);
        punct += (size_t)sl_punct_is_terminal(cp);
        shorts += uc_count(s, n) <= (size_t)q->short_line_length;
    }
    double x = (double)punct / (double)lines->n;
    if (x < q->line_punct_thr && !(x == 0 && q->exclude_zero))
        return sl_filter_drop(r, "line_punct_ratio", x);
    x = (double)shorts / (double)lines->n;
    if (x > q->short_line_thr)
        return sl_filter_drop(r, "short_line_ratio", x);
    size_t dchars = 0;
    sl_hcount_reset(&c->h2, lines->n);
    for (size_t i = 0; i < lines->n; i++) {
        const char *s = t + lines->v[i].off;
        if (sl_hcount_add(&c->h2, sl_hash64(s, lines->v[i].len, 7), 0)->count > 1)
            dchars += uc_count(s, lines->v[i].len);
    }
    size_t nonnl = c->nchar - newlines;
    x = nonnl ? (double)dchars / (double)nonnl : 0;
    if (x > q->char_dup_ratio)
        return sl_filter_drop(r, "char_dup_ratio", x);
    const struct sl_wordvec *w = sl_fctx_words(c, q->words);
    x = w->n ? (double)newlines / (double)w->n : (newlines ? 1e300 : 0);
    if (x > q->new_line_ratio)
        return sl_filter_drop(r, "list_ratio", x);
    return 0;
}

static void fw_release(struct sl_filter *f)
{
    free(f->state);
}

int sl_filter_build_fineweb_quality(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct fw *q = sl_xcalloc(1, sizeof(*q));
    f->state = q;
    f->apply = fw_apply;
    f->release = fw_release;
    int rc = 0;
    if (!rc) rc = sl_cfg_double(p, "line_punct_thr", 0.12, &q->line_punct_thr);
    if (!rc) rc = sl_cfg_bool(p, "line_punct_exclude_zero", 0, &q->exclude_zero);
    if (!rc) rc = sl_cfg_double(p, "short_line_thr", 0.67, &q->short_line_thr);
    if (!rc) rc = sl_cfg_int(p, "short_line_length", 30, &q->short_line_length);
    if (!rc) rc = sl_cfg_double(p, "char_duplicates_ratio", 0.01, &q->char_dup_ratio);
    if (!rc) rc = sl_cfg_double(p, "new_line_ratio", 0.3, &q->new_line_ratio);
    if (!rc) rc = sl_filter_words_param(p, SL_WSEL_AUTO, &q->words);
    (void)env;
    return rc;
}
