/* struct sl_fctx (the document as filters see it, with cached views), the counting table
 * the duplicate rules use, and the registry of filter kinds. */
#include "curate/filter/filter.h"

#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/poly61.h"
#include "curate/filter/uchar.h"

#include <stdio.h>
#include <string.h>

/* ---- counting table ---------------------------------------------------------------- */

#define HCOUNT_START_MAX ((size_t)1 << 16) /* slots a reset sizes for at most */

void sl_hcount_reset(struct sl_hcount *h, size_t expect)
{
    size_t want = 64;
    while (want < expect * 2 && want < HCOUNT_START_MAX)
        want *= 2;
    if (h->cap < want || h->cap > want * 8) {
        free(h->v);
        h->v = sl_xmalloc(sl_mul_size(want, sizeof(*h->v)));
        h->cap = want;
    }
    for (size_t i = 0; i < h->cap; i++)
        h->v[i].count = 0;
    h->n = 0;
}

static inline size_t hcount_home(uint64_t key, size_t cap)
{
    return (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
}

static void hcount_grow(struct sl_hcount *h)
{
    size_t ncap = h->cap * 2;
    struct sl_hcount_slot *nv = sl_xmalloc(sl_mul_size(ncap, sizeof(*nv)));
    for (size_t i = 0; i < ncap; i++)
        nv[i].count = 0;
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->v[i].count)
            continue;
        size_t j = hcount_home(h->v[i].key, ncap);
        while (nv[j].count)
            j = (j + 1) & (ncap - 1);
        nv[j] = h->v[i];
    }
    free(h->v);
    h->v = nv;
    h->cap = ncap;
}

struct sl_hcount_slot *sl_hcount_add(struct sl_hcount *h, uint64_t key, uint32_t tag)
{
    if (!h->cap)
        sl_hcount_reset(h, 32);
    size_t j = hcount_home(key, h->cap);
    for (;; j = (j + 1) & (h->cap - 1)) {
        struct sl_hcount_slot *e = &h->v[j];
        if (!e->count)
            break;
        if (e->key == key) {
            e->count++;
            return e;
        }
    }
    if ((h->n + 1) * 4 > h->cap * 3) { /* load factor 3/4 */
        hcount_grow(h);
        for (j = hcount_home(key, h->cap); h->v[j].count; j = (j + 1) & (h->cap - 1))
            ;
    }
    struct sl_hcount_slot *e = &h->v[j];
    e->key = key;
    e->count = 1;
    e->tag = tag;
    h->n++;
    return e;
}

const struct sl_hcount_slot *sl_hcount_find(const struct sl_hcount *h, uint64_t key)
{
    if (!h->cap)
        return NULL;
    for (size_t j = hcount_home(key, h->cap);; j = (j + 1) & (h->cap - 1)) {
        const struct sl_hcount_slot *e = &h->v[j];
        if (!e->count)
            return NULL;
        if (e->key == key)
            return e;
    }
}

void sl_hcount_release(struct sl_hcount *h)
{
    free(h->v);
    memset(h, 0, sizeof(*h));
}

void sl_spanvec_push(struct sl_spanvec *v, size_t off, size_t len)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        v->v = sl_xrealloc(v->v, sl_mul_size(v->cap, sizeof(*v->v)));
    }
    v->v[v->n].off = (uint32_t)off;
    v->v[v->n].len = (uint32_t)len;
    v->n++;
}

/* ---- document context -------------------------------------------------------------- */

void sl_fctx_init(struct sl_fctx *c, const struct sl_filter_env *env)
{
    memset(c, 0, sizeof(*c));
    c->env = env;
}

void sl_fctx_release(struct sl_fctx *c)
{
    for (int i = 0; i < 2; i++)
        sl_buf_release(&c->own[i]);
    for (int i = 0; i < 3; i++)
        sl_wordvec_release(&c->words[i]);
    free(c->pylines.v);
    for (int i = 0; i < 3; i++)
        free(c->wprefix[i]);
    for (int i = 0; i < SL_VIEW_COUNT; i++) {
        if (c->views[i].release && c->views[i].data)
            c->views[i].release(c->views[i].data);
        free(c->views[i].data);
    }
    sl_hcount_release(&c->h1);
    sl_hcount_release(&c->h2);
    free(c->s1.v);
    free(c->s2.v);
    sl_buf_release(&c->b1);
    memset(c, 0, sizeof(*c));
}

void sl_fctx_begin(struct sl_fctx *c, struct sl_doc *doc, const char *text, size_t len,
                   const char *lang)
{
    c->doc = doc;
    c->text = text ? text : "";
    c->len = text ? len : 0;
    c->nchar = uc_count(c->text, c->len);
    snprintf(c->lang, sizeof(c->lang), "%s",
             lang && *lang ? lang : (c->env->default_lang ? c->env->default_lang : "en"));
    c->version++;
    if (!c->version)
        c->version = 1;
}

void sl_fctx_set_text(struct sl_fctx *c, const char *s, size_t n)
{
    struct sl_buf *b = &c->own[c->cur_own ^= 1];
    sl_buf_reset(b);
    sl_buf_append(b, s, n);
    sl_buf_putc(b, 0);
    b->len--;
    c->text = b->data;
    c->len = n;
    c->nchar = uc_count(c->text, c->len);
    c->version++;
    if (!c->version)
        c->version = 1;
}

struct sl_fctx_view *sl_fctx_view(struct sl_fctx *c, enum sl_fctx_view_id id, size_t size,
                                  void (*release)(void *data))
{
    struct sl_fctx_view *v = &c->views[id];
    if (!v->data) {
        v->data = sl_xcalloc(1, size);
        v->release = release;
    }
    return v;
}

static enum sl_words_mode words_mode(struct sl_fctx *c, enum sl_words_sel sel)
{
    switch (sel) {
    case SL_WSEL_SPACE:
        return SL_WORDS_SPACE;
    case SL_WSEL_RULES:
        return SL_WORDS_RULES;
    case SL_WSEL_CHARS:
        return SL_WORDS_CHARS;
    default:
        return sl_words_mode_for_lang(c->lang);
    }
}

const uint64_t *sl_fctx_word_prefix(struct sl_fctx *c, enum sl_words_sel sel)
{
    enum sl_words_mode mode = words_mode(c, sel);
    const struct sl_wordvec *w = sl_fctx_words(c, sel);
    if (c->wprefix_ver[mode] == c->version)
        return c->wprefix[mode];
    if (c->wprefix_cap[mode] < w->n + 1) {
        free(c->wprefix[mode]);
        c->wprefix_cap[mode] = w->n + 1 > 256 ? w->n + 1 : 256;
        c->wprefix[mode] = sl_xmalloc(sl_mul_size(c->wprefix_cap[mode], sizeof(uint64_t)));
    }
    uint64_t *p = c->wprefix[mode];
    p[0] = 0;
    for (size_t i = 0; i < w->n; i++)
        p[i + 1] = sl_add61(sl_mul61(p[i], SL_POLY_BASE),
                            sl_hash64(c->text + w->v[i].off, w->v[i].len, 11) % SL_M61);
    c->wprefix_ver[mode] = c->version;
    return p;
}

const struct sl_wordvec *sl_fctx_words(struct sl_fctx *c, enum sl_words_sel sel)
{
    enum sl_words_mode mode = words_mode(c, sel);
    if (c->words_ver[mode] != c->version) {
        sl_words_split(c->env->words, mode, c->text, c->len, &c->words[mode]);
        c->words_ver[mode] = c->version;
    }
    return &c->words[mode];
}

const struct sl_spanvec *sl_fctx_pylines(struct sl_fctx *c)
{
    if (c->pylines_ver == c->version)
        return &c->pylines;
    c->pylines.n = 0;
    const char *s = c->text;
    size_t n = c->len, start = 0, i = 0;
    while (i < n) {
        uint32_t cp;
        size_t l = uc_next(s + i, n - i, &cp);
        if (uc_islinebreak(cp)) {
            sl_spanvec_push(&c->pylines, start, i - start);
            i += l;
            if (cp == '\r' && i < n && s[i] == '\n')
                i++;
            start = i;
            continue;
        }
        i += l;
    }
    if (start < n)
        sl_spanvec_push(&c->pylines, start, n - start);
    c->pylines_ver = c->version;
    return &c->pylines;
}

/* ---- registry ---------------------------------------------------------------------- */

int sl_filter_words_param(struct sl_cfg *params, enum sl_words_sel def, enum sl_words_sel *out)
{
    static const char *const names[] = { "auto", "space", "rules", "chars" };
    const char *v;
    int rc = sl_cfg_str(params, "words", names[def], &v);
    if (rc)
        return rc;
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, names[i])) {
            *out = (enum sl_words_sel)i;
            return 0;
        }
    return sl_err_set(SL_ERR_CONFIG, "%s: words: expected auto, space, rules or chars, got '%s'",
                      sl_cfg_where(sl_cfg_child(params, "words")), v);
}

const struct sl_filter_kind sl_filter_kinds[] = {
    /* datatrove's filters, same definitions */
    { "gopher_quality", "Gopher quality rules (datatrove GopherQualityFilter)", sl_filter_build_gopher_quality },
    { "gopher_repetition", "Gopher repetition rules (datatrove GopherRepetitionFilter)", sl_filter_build_gopher_repetition },
    { "c4_quality", "C4 line and page rules (datatrove C4QualityFilter); edits the text", sl_filter_build_c4_quality },
    { "c4_paragraph", "mC4 paragraph rule: at least 3 lines of 200+ characters", sl_filter_build_c4_paragraph },
    { "c4_badwords", "C4 bad-words lists per language (LDNOOBW)", sl_filter_build_c4_badwords },
    { "fineweb_quality", "FineWeb line rules (datatrove FineWebQualityFilter)", sl_filter_build_fineweb_quality },
    /* NeMo Curator's heuristic filters, same definitions */
    { "word_count", "words (whitespace split) within [min_words, max_words]", sl_filter_build_nemo },
    { "mean_word_length", "mean word length within [min, max]", sl_filter_build_nemo },
    { "symbols_to_words", "share of '#'-heavy or ellipsis words", sl_filter_build_nemo },
    { "bullets", "share of lines starting with a bullet", sl_filter_build_nemo },
    { "ellipsis", "share of lines ending with an ellipsis", sl_filter_build_nemo },
    { "words_without_alphabets", "share of words with a letter", sl_filter_build_nemo },
    { "common_english_words", "occurrences of the 8 Gopher stop words", sl_filter_build_nemo },
    { "non_alphanumeric", "share of characters outside [a-zA-Z0-9\\n?!,.]", sl_filter_build_nemo },
    { "numbers", "share of digit characters", sl_filter_build_nemo },
    { "urls", "share of characters inside http(s) URLs", sl_filter_build_nemo },
    { "whitespace", "share of whitespace characters", sl_filter_build_nemo },
    { "parentheses", "share of bracket characters", sl_filter_build_nemo },
    { "long_word", "longest word", sl_filter_build_nemo },
    { "boilerplate_string", "share of paragraphs with policy strings; lorem ipsum", sl_filter_build_nemo },
    { "punctuation", "share of lines without terminal punctuation", sl_filter_build_nemo },
    { "repeated_lines", "unique lines / lines", sl_filter_build_nemo },
    { "repeated_paragraphs", "unique paragraphs / paragraphs", sl_filter_build_nemo },
    { "repeated_lines_by_char", "characters of unique lines / of all lines", sl_filter_build_nemo },
    { "repeated_paragraphs_by_char", "characters of unique paragraphs / of all", sl_filter_build_nemo },
    { "repeating_top_ngrams", "character share of the most frequent word n-gram", sl_filter_build_nemo },
    { "repeating_duplicate_ngrams", "character share of duplicated word n-grams", sl_filter_build_nemo },
    { "pornographic_urls", "any URL in the text containing 'porn'", sl_filter_build_nemo },
    /* language-aware stop words */
    { "stop_words", "stop words of the document's language (24 mC4 languages)", sl_filter_build_stop_words },
    /* regular expressions, URLs, language, classifier */
    { "regex", "PCRE2 patterns: drop the document or the matching lines", sl_filter_build_regex },
    { "url", "block/allow lists on the document URL; rules: datatrove for URLFilter's", sl_filter_build_url },
    { "language", "language ID (CLD2, or fastText lid.176 / GlotLID)", sl_filter_build_language },
    { "pii", "redact e-mails, IPs, phone numbers, cards, US SSNs, IBANs; edits the text", sl_filter_build_pii },
    { "classifier", "fastText quality classifier: threshold or Pareto sampling", sl_filter_build_classifier },
    { NULL, NULL, NULL },
};

const struct sl_filter_kind *sl_filter_kind_find(const char *name)
{
    for (const struct sl_filter_kind *k = sl_filter_kinds; k->name; k++)
        if (!strcmp(k->name, name))
            return k;
    return NULL;
}
