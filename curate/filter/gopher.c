/* gopher_quality and gopher_repetition: the Gopher (Rae et al. 2021) rules with the
 * definitions and defaults of datatrove's GopherQualityFilter and GopherRepetitionFilter
 * (docs/filters.md). Words come from the spaCy-rules splitter, as datatrove's do. */
#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/poly61.h"
#include "curate/filter/filter.h"
#include "curate/filter/punct.h"
#include "curate/filter/strset.h"
#include "curate/filter/uchar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- gopher_quality ------------------------------------------------------------------ */

struct gq {
    long min_words, max_words;
    double min_avg, max_avg, max_symbol, max_bullet, max_ellipsis, min_alpha;
    long min_stop;
    struct sl_strset stop;
    enum sl_words_sel words;
};

static size_t count_sub(const char *s, size_t n, const char *pat, size_t pl)
{
    size_t c = 0;
    const char *p = s, *end = s + n;
    while ((size_t)(end - p) >= pl) {
        const char *q = memmem(p, (size_t)(end - p), pat, pl);
        if (!q)
            break;
        c++;
        p = q + pl;
    }
    return c;
}

static int is_symbol_word(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += uc_next(s + i, n - i, &cp);
        if (!sl_punct_is_symbol(cp))
            return 0;
    }
    return 1;
}

static int has_alpha(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += uc_next(s + i, n - i, &cp);
        if (uc_isalpha(cp))
            return 1;
    }
    return 0;
}

static int gq_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct gq *g = f->state;
    const struct sl_wordvec *w = sl_fctx_words(c, g->words);
    const char *t = c->text;
    size_t nw = w->n, nsw = 0, chars = 0, alpha = 0;
    for (size_t i = 0; i < nw; i++) {
        const char *s = t + w->v[i].off;
        if (!is_symbol_word(s, w->v[i].len)) {
            nsw++;
            chars += w->v[i].nchar;
        }
        alpha += (size_t)has_alpha(s, w->v[i].len);
    }
    r->keep = 1;
    r->score = (double)nsw;
    if (g->min_words && (long)nsw < g->min_words)
        return sl_filter_drop(r, "gopher_short_doc", (double)nsw);
    if (g->max_words && (long)nsw > g->max_words)
        return sl_filter_drop(r, "gopher_long_doc", (double)nsw);
    double avg = nsw ? (double)chars / (double)nsw : NAN;
    if (g->min_avg != 0 && avg < g->min_avg)
        return sl_filter_drop(r, "gopher_below_avg_threshold", avg);
    if (g->max_avg != 0 && avg > g->max_avg)
        return sl_filter_drop(r, "gopher_above_avg_threshold", avg);
    double dn = nw ? (double)nw : INFINITY;
    if (g->max_symbol != 0) {
        double h = (double)count_sub(t, c->len, "#", 1) / dn;
        if (h > g->max_symbol)
            return sl_filter_drop(r, "gopher_too_many_hashes", h);
        double e = (double)(count_sub(t, c->len, "...", 3) +
                            count_sub(t, c->len, "\xe2\x80\xa6", 3)) / dn;
        if (e > g->max_symbol)
            return sl_filter_drop(r, "gopher_too_many_ellipsis", e);
    }
    const struct sl_spanvec *lines = sl_fctx_pylines(c);
    if (lines->n && (g->max_bullet != 0 || g->max_ellipsis != 0)) {
        size_t bul = 0, ell = 0;
        for (size_t i = 0; i < lines->n; i++) {
            const char *s = t + lines->v[i].off;
            size_t n = lines->v[i].len, a = 0, b = n;
            while (a < n) {
                uint32_t cp;
                size_t l = uc_next(s + a, n - a, &cp);
                if (!uc_isspace(cp))
                    break;
                a += l;
            }
            if (a < n && (s[a] == '-' || (n - a >= 3 && !memcmp(s + a, "\xe2\x80\xa2", 3))))
                bul++;
            while (b > 0) {
                size_t l = uc_prev_len(s, b);
                uint32_t cp;
                uc_next(s + b - l, l, &cp);
                if (!uc_isspace(cp))
                    break;
                b -= l;
            }
            if ((b >= 3 && !memcmp(s + b - 3, "...", 3)) ||
                (b >= 3 && !memcmp(s + b - 3, "\xe2\x80\xa6", 3)))
                ell++;
        }
        double rb = (double)bul / (double)lines->n, re = (double)ell / (double)lines->n;
        if (g->max_bullet != 0 && rb > g->max_bullet)
            return sl_filter_drop(r, "gopher_too_many_bullets", rb);
        if (g->max_ellipsis != 0 && re > g->max_ellipsis)
            return sl_filter_drop(r, "gopher_too_many_end_ellipsis", re);
    }
    if (g->min_alpha != 0) {
        double ra = (double)alpha / dn;
        if (ra < g->min_alpha)
            return sl_filter_drop(r, "gopher_below_alpha_threshold", ra);
    }
    if (g->min_stop) {
        /* distinct stop words among the words */
        long found = 0;
        struct sl_hcount *seen = &c->h1;
        sl_hcount_reset(seen, 16);
        for (size_t i = 0; i < nw && found < g->min_stop; i++) {
            const struct sl_strset_slot *e =
                sl_strset_find(&g->stop, t + w->v[i].off, w->v[i].len);
            if (e && sl_hcount_add(seen, e->hash, 0)->count == 1)
                found++;
        }
        if (found < g->min_stop)
            return sl_filter_drop(r, "gopher_enough_stop_words", (double)found);
    }
    return 0;
}

static void gq_release(struct sl_filter *f)
{
    struct gq *g = f->state;
    if (g)
        sl_strset_release(&g->stop);
    free(g);
}

static const char *const gopher_stop[] = { "the", "be", "to", "of", "and", "that", "have", "with", NULL };

int sl_filter_build_gopher_quality(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct gq *g = sl_xcalloc(1, sizeof(*g));
    f->state = g;
    f->apply = gq_apply;
    f->release = gq_release;
    sl_strset_init(&g->stop);
    int rc = 0;
    if (!rc) rc = sl_cfg_int(p, "min_doc_words", 50, &g->min_words);
    if (!rc) rc = sl_cfg_int(p, "max_doc_words", 100000, &g->max_words);
    if (!rc) rc = sl_cfg_double(p, "min_avg_word_length", 3, &g->min_avg);
    if (!rc) rc = sl_cfg_double(p, "max_avg_word_length", 10, &g->max_avg);
    if (!rc) rc = sl_cfg_double(p, "max_symbol_word_ratio", 0.1, &g->max_symbol);
    if (!rc) rc = sl_cfg_double(p, "max_bullet_lines_ratio", 0.9, &g->max_bullet);
    if (!rc) rc = sl_cfg_double(p, "max_ellipsis_lines_ratio", 0.3, &g->max_ellipsis);
    if (!rc) rc = sl_cfg_double(p, "max_non_alpha_words_ratio", 0.8, &g->min_alpha);
    if (!rc) rc = sl_cfg_int(p, "min_stop_words", 2, &g->min_stop);
    if (!rc) rc = sl_filter_words_param(p, SL_WSEL_AUTO, &g->words);
    const char **sw = NULL;
    size_t nsw = 0;
    if (!rc) rc = sl_cfg_strs(p, "stop_words", &sw, &nsw);
    if (!rc) {
        if (nsw)
            for (size_t i = 0; i < nsw; i++)
                sl_strset_add(&g->stop, sw[i], strlen(sw[i]), 1);
        else
            for (size_t i = 0; gopher_stop[i]; i++)
                sl_strset_add(&g->stop, gopher_stop[i], strlen(gopher_stop[i]), 1);
    }
    free(sw);
    (void)env;
    return rc;
}

/* ---- gopher_repetition --------------------------------------------------------------- */

struct ngram_rule {
    long n;
    double frac;
    char reason[32];
};

#define POW_TABLE 64 /* powers of the hash base kept for words shorter than this */

struct gr {
    double dup_line, dup_para, dup_line_char, dup_para_char;
    struct ngram_rule top[16], dup[16];
    size_t ntop, ndup;
    enum sl_words_sel words;
    uint64_t pow[POW_TABLE], ipow[POW_TABLE]; /* B^k and B^-k modulo 2^61 - 1 */
};

/* datatrove find_duplicates over spans: (duplicate elements, their characters). */
static void find_duplicates(struct sl_fctx *c, const struct sl_spanvec *v, size_t *dups, size_t *dchars)
{
    *dups = *dchars = 0;
    sl_hcount_reset(&c->h2, v->n);
    for (size_t i = 0; i < v->n; i++) {
        const char *s = c->text + v->v[i].off;
        uint64_t h = sl_hash64(s, v->v[i].len, 7);
        if (sl_hcount_add(&c->h2, h, 0)->count > 1) {
            (*dups)++;
            *dchars += uc_count(s, v->v[i].len);
        }
    }
}

static int gr_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct gr *g = f->state;
    const char *t = c->text;
    double len = c->nchar ? (double)c->nchar : NAN;
    r->keep = 1;
    r->score = 0;
    if (!c->len)
        return sl_filter_drop(r, "empty", 0);
    /* paragraphs: re.split(r"\n{2,}", text.strip()) */
    size_t a = 0, b = c->len;
    uc_strip_space(t, &a, &b);
    struct sl_spanvec *paras = &c->s1;
    paras->n = 0;
    size_t start = a;
    for (size_t i = a; i < b;) {
        if (t[i] == '\n' && i + 1 < b && t[i + 1] == '\n') {
            size_t j = i;
            while (j < b && t[j] == '\n')
                j++;
            sl_spanvec_push(paras, start, i - start);
            start = i = j;
            continue;
        }
        i++;
    }
    sl_spanvec_push(paras, start, b - start);
    size_t dups, dchars;
    find_duplicates(c, paras, &dups, &dchars);
    double x = (double)dups / (double)paras->n;
    if (g->dup_para != 0 && x > g->dup_para)
        return sl_filter_drop(r, "dup_para_frac", x);
    x = (double)dchars / len;
    if (g->dup_para_char != 0 && x > g->dup_para_char)
        return sl_filter_drop(r, "dup_para_char_frac", x);
    /* lines: re.split("\n+", text) */
    struct sl_spanvec *lines = &c->s2;
    lines->n = 0;
    start = 0;
    for (size_t i = 0; i < c->len;) {
        if (t[i] == '\n') {
            size_t j = i;
            while (j < c->len && t[j] == '\n')
                j++;
            sl_spanvec_push(lines, start, i - start);
            start = i = j;
            continue;
        }
        i++;
    }
    sl_spanvec_push(lines, start, c->len - start);
    find_duplicates(c, lines, &dups, &dchars);
    x = (double)dups / (double)lines->n;
    if (g->dup_line != 0 && x > g->dup_line)
        return sl_filter_drop(r, "dup_line_frac", x);
    x = (double)dchars / len;
    if (g->dup_line_char != 0 && x > g->dup_line_char)
        return sl_filter_drop(r, "dup_line_char_frac", x);

    const struct sl_wordvec *w = sl_fctx_words(c, g->words);
    size_t nw = w->n;
    if (!nw)
        return 0;
    /* top n-grams: " ".join(words[i:i+n]) counted; a word never holds a space, so the
     * n-gram is the sequence of its words, hashed from the prefix hashes of the words */
    const uint64_t *wp = sl_fctx_word_prefix(c, g->words);
    int dropped = 0;
    for (size_t k = 0; k < g->ntop && !dropped; k++) {
        size_t n = (size_t)g->top[k].n;
        if (nw < n)
            continue;
        sl_hcount_reset(&c->h1, nw);
        uint64_t bn = sl_pow61(SL_POLY_BASE, n);
        struct sl_hcount_slot best = { 0, 0, UINT32_MAX };
        for (size_t i = 0; i + n <= nw; i++) {
            uint64_t h = sl_sub61(wp[i + n], sl_mul61(wp[i], bn));
            struct sl_hcount_slot *e = sl_hcount_add(&c->h1, h, (uint32_t)i);
            if (e->count > best.count || (e->count == best.count && e->tag < best.tag))
                best = *e;
        }
        size_t chars = n - 1;
        for (size_t j = 0; j < n; j++)
            chars += w->v[best.tag + j].nchar;
        double v = (double)chars * (double)best.count / len;
        if (v > g->top[k].frac) {
            sl_filter_drop(r, g->top[k].reason, v);
            dropped = 1;
        }
    }
    if (dropped || !g->ndup)
        return 0;
    /* duplicated n-grams: "".join(words[i:i+n]), so word boundaries do not count ("ab" "c"
     * equals "a" "bc"). A polynomial hash of the bytes modulo 2^61 - 1, from prefix sums
     * over the words, gives each n-gram's hash in O(1). */
    uint64_t *pre = sl_xmalloc(sl_mul_size(nw + 1, 3 * sizeof(uint64_t)));
    uint64_t *bp = pre + (nw + 1), *ibp = bp + (nw + 1);
    pre[0] = 0;
    bp[0] = ibp[0] = 1;
    for (size_t i = 0; i < nw; i++) {
        const unsigned char *s = (const unsigned char *)t + w->v[i].off;
        size_t l = w->v[i].len;
        uint64_t h = 0;
        for (size_t j = 0; j < l; j++)
            h = sl_add61(sl_mul61(h, SL_POLY_BASE), (uint64_t)s[j] + 1);
        uint64_t pl = l < POW_TABLE ? g->pow[l] : sl_pow61(SL_POLY_BASE, l);
        uint64_t ipl = l < POW_TABLE ? g->ipow[l] : sl_pow61(g->ipow[1], l);
        pre[i + 1] = sl_add61(sl_mul61(pre[i], pl), h);
        bp[i + 1] = sl_mul61(bp[i], pl);
        ibp[i + 1] = sl_mul61(ibp[i], ipl);
    }
    for (size_t k = 0; k < g->ndup && !dropped; k++) {
        size_t n = (size_t)g->dup[k].n;
        sl_hcount_reset(&c->h1, nw);
        size_t repeated = 0, idx = 0;
        while (nw >= n && idx < nw - n + 1) {
            /* hash(words[idx:idx+n]) = pre[idx+n] - pre[idx] * B^(bytes of the n-gram) */
            uint64_t h =
                sl_sub61(pre[idx + n], sl_mul61(pre[idx], sl_mul61(bp[idx + n], ibp[idx])));
            if (sl_hcount_add(&c->h1, h, 0)->count > 1) {
                for (size_t j = 0; j < n; j++)
                    repeated += w->v[idx + j].nchar;
                idx += n;
            } else {
                idx += 1;
            }
        }
        double v = (double)repeated / len;
        if (v > g->dup[k].frac) {
            sl_filter_drop(r, g->dup[k].reason, v);
            dropped = 1;
        }
    }
    free(pre);
    return 0;
}

static void gr_release(struct sl_filter *f)
{
    free(f->state);
}

/* A list of [n, fraction] pairs. */
static int ngram_rules(struct sl_cfg *p, const char *key, struct ngram_rule *out, size_t *n,
                       const char *fmt)
{
    struct sl_cfg *node = p ? sl_cfg_child(p, key) : NULL;
    if (!node)
        return 0;
    sl_cfg_mark_used(node);
    if (node->kind != SL_CFG_SEQ)
        return sl_err_set(SL_ERR_CONFIG, "%s: %s: expected a list of [n, fraction] pairs",
                          sl_cfg_where(node), key);
    *n = 0;
    for (size_t i = 0; i < node->n && *n < 16; i++) {
        struct sl_cfg *it = node->items[i];
        if (it->kind != SL_CFG_SEQ || it->n != 2 || sl_cfg_node_int(it->items[0], &out[*n].n) ||
            sl_cfg_node_double(it->items[1], &out[*n].frac) || out[*n].n < 1 || out[*n].n > 64)
            return sl_err_set(SL_ERR_CONFIG, "%s: %s: expected [n, fraction] with 1 <= n <= 64",
                              sl_cfg_where(it), key);
        snprintf(out[*n].reason, sizeof(out[*n].reason), fmt, (int)out[*n].n);
        (*n)++;
    }
    return 0;
}

int sl_filter_build_gopher_repetition(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    struct gr *g = sl_xcalloc(1, sizeof(*g));
    f->state = g;
    f->apply = gr_apply;
    f->release = gr_release;
    static const double top[][2] = { { 2, 0.2 }, { 3, 0.18 }, { 4, 0.16 } };
    static const double dup[][2] = { { 5, 0.15 }, { 6, 0.14 }, { 7, 0.13 },
                                     { 8, 0.12 }, { 9, 0.11 }, { 10, 0.10 } };
    for (size_t i = 0; i < 3; i++) {
        g->top[i].n = (long)top[i][0];
        g->top[i].frac = top[i][1];
        snprintf(g->top[i].reason, sizeof(g->top[i].reason), "top_%d_gram", (int)top[i][0]);
    }
    g->ntop = 3;
    for (size_t i = 0; i < 6; i++) {
        g->dup[i].n = (long)dup[i][0];
        g->dup[i].frac = dup[i][1];
        snprintf(g->dup[i].reason, sizeof(g->dup[i].reason), "duplicated_%d_n_grams", (int)dup[i][0]);
    }
    g->ndup = 6;
    g->pow[0] = g->ipow[0] = 1;
    uint64_t inv = sl_pow61(SL_POLY_BASE, SL_M61 - 2); /* Fermat: B^(p-2) = B^-1 */
    for (size_t i = 1; i < POW_TABLE; i++) {
        g->pow[i] = sl_mul61(g->pow[i - 1], SL_POLY_BASE);
        g->ipow[i] = sl_mul61(g->ipow[i - 1], inv);
    }
    int rc = 0;
    if (!rc) rc = sl_cfg_double(p, "dup_line_frac", 0.3, &g->dup_line);
    if (!rc) rc = sl_cfg_double(p, "dup_para_frac", 0.3, &g->dup_para);
    if (!rc) rc = sl_cfg_double(p, "dup_line_char_frac", 0.2, &g->dup_line_char);
    if (!rc) rc = sl_cfg_double(p, "dup_para_char_frac", 0.2, &g->dup_para_char);
    if (!rc) rc = ngram_rules(p, "top_n_grams", g->top, &g->ntop, "top_%d_gram");
    if (!rc) rc = ngram_rules(p, "dup_n_grams", g->dup, &g->ndup, "duplicated_%d_n_grams");
    if (!rc) rc = sl_filter_words_param(p, SL_WSEL_AUTO, &g->words);
    (void)env;
    return rc;
}
