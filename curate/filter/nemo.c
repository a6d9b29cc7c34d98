/* NeMo Curator's heuristic filters (nemo_curator/filters/heuristic_filter.py), one kind
 * each, with NeMo's definitions, parameter names and defaults (docs/filters.md). Words are
 * whitespace-split (str.split), or one per character for unspaced languages. */
#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/poly61.h"
#include "curate/filter/filter.h"
#include "curate/filter/uchar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum nemo_kind {
    N_WORD_COUNT, N_MEAN_WORD_LENGTH, N_SYMBOLS, N_BULLETS, N_ELLIPSIS, N_ALPHA_WORDS,
    N_COMMON_EN, N_NON_ALNUM, N_NUMBERS, N_URLS, N_WHITESPACE, N_PARENS, N_LONG_WORD,
    N_BOILERPLATE, N_PUNCTUATION, N_REP_LINES, N_REP_PARAS, N_REP_LINES_CHAR,
    N_REP_PARAS_CHAR, N_TOP_NGRAMS, N_DUP_NGRAMS, N_PORN_URLS,
};

struct nemo {
    enum nemo_kind kind;
    double lo, hi; /* keep when lo <= score <= hi */
    long n;
    enum sl_words_sel words;
    struct sl_buf tmp;
};

/* NeMo's words: whitespace-split, or one per character for unspaced languages. */
static enum sl_words_sel nword_sel(struct sl_fctx *c, enum sl_words_sel sel)
{
    if (sel == SL_WSEL_AUTO)
        sel = sl_words_mode_for_lang(c->lang) == SL_WORDS_CHARS ? SL_WSEL_CHARS : SL_WSEL_SPACE;
    return sel;
}

static const struct sl_wordvec *nwords(struct sl_fctx *c, enum sl_words_sel sel)
{
    return sl_fctx_words(c, nword_sel(c, sel));
}

static void spanvec_free(void *p)
{
    free(((struct sl_spanvec *)p)->v);
}

/* get_sentences: "\n"-split pieces with a non-whitespace character (not stripped). */
static const struct sl_spanvec *nonempty_lines(struct sl_fctx *c)
{
    struct sl_fctx_view *v =
        sl_fctx_view(c, SL_VIEW_NONBLANK_LINES, sizeof(struct sl_spanvec), spanvec_free);
    struct sl_spanvec *out = v->data;
    if (v->ver == c->version)
        return out;
    out->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= c->len; i++) {
        if (i < c->len && c->text[i] != '\n')
            continue;
        int blank = 1;
        for (size_t j = start; j < i && blank;) {
            uint32_t cp;
            j += uc_next(c->text + j, i - j, &cp);
            blank = uc_isspace(cp);
        }
        if (!blank)
            sl_spanvec_push(out, start, i - start);
        start = i + 1;
    }
    v->ver = c->version;
    return out;
}

/* get_paragraphs: text.split("\n\n"), empty pieces included. */
static const struct sl_spanvec *paragraphs(struct sl_fctx *c)
{
    struct sl_fctx_view *v =
        sl_fctx_view(c, SL_VIEW_PARAGRAPHS, sizeof(struct sl_spanvec), spanvec_free);
    struct sl_spanvec *out = v->data;
    if (v->ver == c->version)
        return out;
    out->n = 0;
    size_t start = 0, i = 0;
    while (i + 1 < c->len) {
        const char *nl = memchr(c->text + i, '\n', c->len - 1 - i);
        if (!nl)
            break;
        i = (size_t)(nl - c->text);
        if (c->text[i + 1] == '\n') {
            sl_spanvec_push(out, start, i - start);
            i += 2;
            start = i;
            continue;
        }
        i++;
    }
    sl_spanvec_push(out, start, c->len - start);
    v->ver = c->version;
    return out;
}

/* The character classes of the ratio filters, counted in one pass over the text. */
enum { CC_NON_ALNUM, CC_NUMBERS, CC_WHITESPACE, CC_PARENS, CC_COUNT };

static const size_t *char_classes(struct sl_fctx *c)
{
    struct sl_fctx_view *v = sl_fctx_view(c, SL_VIEW_CHAR_CLASSES, CC_COUNT * sizeof(size_t), NULL);
    size_t *out = v->data;
    if (v->ver == c->version)
        return out;
    /* a histogram of the bytes, then the classes from it: every character outside ASCII is
     * outside [a-zA-Z0-9\n?!,.]; the only ones counted elsewhere are the mathematical angle
     * brackets U+27E8/U+27E9 (E2 9F A8/A9) */
    size_t hist[256] = { 0 };
    const unsigned char *t = (const unsigned char *)c->text;
    for (size_t i = 0; i < c->len; i++)
        hist[t[i]]++;
    size_t k[4] = { 0, 0, 0, 0 }, ascii = 0;
    for (unsigned ch = 0; ch < 0x80; ch++) {
        size_t h = hist[ch];
        ascii += h;
        k[CC_NON_ALNUM] +=
            h * !(((ch | 32) >= 'a' && (ch | 32) <= 'z') || (ch >= '0' && ch <= '9') ||
                  ch == '\n' || ch == '?' || ch == '!' || ch == ',' || ch == '.');
        k[CC_NUMBERS] += h * (ch >= '0' && ch <= '9');
        k[CC_WHITESPACE] += h * (ch == '\t' || ch == '\n' || ch == '\r' || ch == '\b' || ch == ' ');
        k[CC_PARENS] +=
            h * (ch == '{' || ch == '}' || ch == '[' || ch == ']' || ch == '(' || ch == ')');
    }
    k[CC_NON_ALNUM] += c->nchar - ascii;
    if (hist[0xE2])
        for (const unsigned char *p = t, *end = t + c->len;
             (p = memchr(p, 0xE2, (size_t)(end - p))) != NULL && end - p >= 3; p++)
            k[CC_PARENS] += p[1] == 0x9F && (p[2] == 0xA8 || p[2] == 0xA9);
    memcpy(out, k, sizeof(k));
    v->ver = c->version;
    return out;
}

static int ends_lit(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && !memcmp(s + n - l, lit, l);
}

static int url_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch >= '$' && ch <= '_') || ch == '@' || ch == '.' || ch == '&' || ch == '+' ||
           ch == '!' || ch == '*' || ch == '(' || ch == ')' || ch == ',';
}

/* NeMo's URL pattern http[s]?://[url chars]+ : calls fn for every match, left to right. */
static size_t find_urls(const char *t, size_t n, int (*fn)(void *, const char *, size_t), void *ctx)
{
    size_t total = 0;
    for (size_t i = 0; i + 8 <= n;) {
        const char *p = memmem(t + i, n - i, "http", 4);
        if (!p)
            break;
        size_t k = (size_t)(p - t) + 4;
        if (k < n && t[k] == 's')
            k++;
        if (k + 3 <= n && !memcmp(t + k, "://", 3) && k + 3 < n && url_char((unsigned char)t[k + 3])) {
            size_t e = k + 3;
            while (e < n && url_char((unsigned char)t[e]))
                e++;
            size_t s = (size_t)(p - t);
            total += e - s;
            if (fn && fn(ctx, t + s, e - s))
                return total;
            i = e;
        } else {
            i = (size_t)(p - t) + 1;
        }
    }
    return total;
}

static int has_porn(void *ctx, const char *u, size_t n)
{
    if (memmem(u, n, "porn", 4)) {
        *(int *)ctx = 1;
        return 1;
    }
    return 0;
}

#define ELLIPSIS_MAXLEN 11 /* bytes of the longest mark, "read more.." */
static const char *const ellipsis_marks[] = { "...", "[...]", "\xe2\x80\xa6", "(...)", "[\xe2\x80\xa6]",
                                              "-\xc2\xbb", "read more..", "read more", NULL };
static const char *const bullets[] = {
    "\xe2\x80\xa2", "\xe2\x80\xa3", "\xe2\x81\x83", "\xe2\x81\x8c", "\xe2\x81\x8d", "\xe2\x88\x99",
    "\xe2\x97\x8b", "\xe2\x97\x8f", "\xe2\x97\x98", "\xe2\x97\xa6", "\xe2\xa6\xbe", "\xe2\xa6\xbf", NULL,
};
static const char *const common_en[] = { "the", "be", "to", "of", "and", "that", "have", "with", NULL };
static const char *const nemo_policy[] = {
    "terms of use", "privacy policy", "cookie policy", "uses cookies", "privacy overview",
    "use of cookies", "use cookies", "privacy & cookies policy", "privacy and cookies policy",
    "this website uses cookies to improve your experience while you navigate through the website. out of these cookies, the cookies that are categorized as necessary are stored on your browser as they are essential for the working of basic functionalities of the website. we also use third-party cookies that help us analyze and understand how you use this website. these cookies will be stored in your browser only with your consent. you also have the option to opt-out of these cookies. but opting out of some of these cookies may have an effect on your browsing experience.",
    "necessary cookies are absolutely essential for the website to function properly. this category only includes cookies that ensures basic functionalities and security features of the website. these cookies do not store any personal information.",
    "any cookies that may not be particularly necessary for the website to function and is used specifically to collect user personal data via analytics, ads, other embedded contents are termed as non-necessary cookies. it is mandatory to procure user consent prior to running these cookies on your website.",
    "this site uses cookies, including for analytics, personalization, and advertising purposes. for more information or to change your cookie settings, click here.",
    "if you continue to browse this site without changing your cookie settings, you agree to this use. acceptread more",
    NULL,
};

static int is_one_of(const char *s, size_t n, const char *const *set)
{
    if (!n)
        return 0;
    for (size_t i = 0; set[i]; i++)
        if (set[i][0] == s[0] && strlen(set[i]) == n && !memcmp(set[i], s, n))
            return 1;
    return 0;
}

static void lower_ascii(struct sl_buf *b, const char *s, size_t n)
{
    sl_buf_reset(b);
    sl_buf_append(b, s, n);
    unsigned char *d = (unsigned char *)b->data;
    for (size_t i = 0; i < n; i++) /* branch-free, so the compiler vectorizes it */
        d[i] = (unsigned char)(d[i] + (((unsigned)(d[i] - 'A') < 26u) << 5));
}

/* ---- the kinds: each scores the text; *empty when there is nothing to measure ---------- */

static double word_count(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)empty;
    return (double)nwords(c, q->words)->n;
}

/* The words, with the sum and the longest of their lengths in characters. */
static const struct sl_wordvec *word_lengths(struct nemo *q, struct sl_fctx *c, size_t *sum,
                                             size_t *mx)
{
    const struct sl_wordvec *w = nwords(c, q->words);
    *sum = *mx = 0;
    for (size_t i = 0; i < w->n; i++) {
        *sum += w->v[i].nchar;
        *mx = w->v[i].nchar > *mx ? w->v[i].nchar : *mx;
    }
    return w;
}

static double mean_word_length(struct nemo *q, struct sl_fctx *c, int *empty)
{
    size_t sum, mx;
    const struct sl_wordvec *w = word_lengths(q, c, &sum, &mx);
    if (!w->n) {
        *empty = 1;
        return 0;
    }
    return (double)sum / (double)w->n;
}

static double long_word(struct nemo *q, struct sl_fctx *c, int *empty)
{
    size_t sum, mx;
    const struct sl_wordvec *w = word_lengths(q, c, &sum, &mx);
    if (!w->n) {
        *empty = 1;
        return 0;
    }
    return (double)mx;
}

/* The share of the words for which hit() holds. */
static double word_ratio(struct nemo *q, struct sl_fctx *c, int *empty,
                         int (*hit)(const char *s, size_t n, size_t nchar))
{
    const struct sl_wordvec *w = nwords(c, q->words);
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++)
        k += hit(c->text + w->v[i].off, w->v[i].len, w->v[i].nchar) != 0;
    if (!w->n) {
        *empty = 1;
        return 0;
    }
    return (double)k / (double)w->n;
}

/* A word of mostly '#' runs, or an ellipsis. */
static int symbol_word(const char *s, size_t n, size_t nchar)
{
    size_t runs = 0;
    if (memchr(s, '#', n))
        for (size_t j = 0; j < n; j++)
            if (s[j] == '#' && (j == 0 || s[j - 1] != '#'))
                runs++;
    return (double)runs / (double)nchar > 0.5 || is_one_of(s, n, ellipsis_marks);
}

static int alpha_word(const char *s, size_t n, size_t nchar)
{
    (void)nchar;
    for (size_t j = 0; j < n;) {
        uint32_t cp;
        j += uc_next(s + j, n - j, &cp);
        if (uc_isalpha(cp))
            return 1;
    }
    return 0;
}

static double symbols(struct nemo *q, struct sl_fctx *c, int *empty)
{
    return word_ratio(q, c, empty, symbol_word);
}

static double alpha_words(struct nemo *q, struct sl_fctx *c, int *empty)
{
    return word_ratio(q, c, empty, alpha_word);
}

static double common_english(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)empty;
    const struct sl_wordvec *w = nwords(c, q->words);
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++)
        if (is_one_of(c->text + w->v[i].off, w->v[i].len, common_en) && (double)++k >= q->lo)
            return (double)k; /* stop_at_false */
    return (double)k;
}

/* The share of the characters in class cc. */
static double char_ratio(struct sl_fctx *c, int cc)
{
    if (!c->nchar)
        return 1.0;
    return (double)char_classes(c)[cc] / (double)c->nchar;
}

static double non_alnum(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    (void)empty;
    return char_ratio(c, CC_NON_ALNUM);
}

static double numbers(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    (void)empty;
    return char_ratio(c, CC_NUMBERS);
}

static double whitespace(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    (void)empty;
    return char_ratio(c, CC_WHITESPACE);
}

static double parens(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    (void)empty;
    return char_ratio(c, CC_PARENS);
}

static double urls(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    (void)empty;
    return c->nchar ? (double)find_urls(c->text, c->len, NULL, NULL) / (double)c->nchar : 1.0;
}

static double porn_urls(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    (void)empty;
    int hit = 0;
    find_urls(c->text, c->len, has_porn, &hit);
    return hit;
}

/* The share of the non-blank lines (stripped) for which hit() holds. */
static double line_ratio(struct nemo *q, struct sl_fctx *c, int *empty,
                         int (*hit)(struct nemo *q, const char *p, size_t n))
{
    const struct sl_spanvec *s = nonempty_lines(c);
    if (!s->n) {
        *empty = 1;
        return 0;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t a = s->v[i].off, b = a + s->v[i].len;
        uc_strip_space(c->text, &a, &b);
        k += hit(q, c->text + a, b - a) != 0;
    }
    return (double)k / (double)s->n;
}

static int bullet_line(struct nemo *q, const char *p, size_t n)
{
    (void)q;
    for (size_t j = 0; bullets[j]; j++)
        if (n >= 3 && !memcmp(p, bullets[j], 3))
            return 1;
    return 0;
}

static int ellipsis_line(struct nemo *q, const char *p, size_t n)
{
    size_t tail = n < ELLIPSIS_MAXLEN ? n : ELLIPSIS_MAXLEN; /* enough to compare */
    lower_ascii(&q->tmp, p + n - tail, tail);
    for (size_t j = 0; ellipsis_marks[j]; j++)
        if (ends_lit(q->tmp.data ? q->tmp.data : "", tail, ellipsis_marks[j]))
            return 1;
    return 0;
}

static int unpunctuated_line(struct nemo *q, const char *p, size_t n)
{
    (void)q;
    char last = n ? p[n - 1] : 0;
    return !(last == '.' || last == '?' || last == '!' || last == '"' || last == '\'');
}

static double bullet_lines(struct nemo *q, struct sl_fctx *c, int *empty)
{
    return line_ratio(q, c, empty, bullet_line);
}

static double ellipsis_lines(struct nemo *q, struct sl_fctx *c, int *empty)
{
    return line_ratio(q, c, empty, ellipsis_line);
}

static double unpunctuated_lines(struct nemo *q, struct sl_fctx *c, int *empty)
{
    return line_ratio(q, c, empty, unpunctuated_line);
}

static double boilerplate(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)empty;
    const char *t = c->text;
    const struct sl_spanvec *s = paragraphs(c);
    size_t k = 0;
    /* every policy string holds "cookie", "privacy" or "terms of use": a text with
     * none of them (nor "lorem ipsum") has no boilerplate paragraph */
    lower_ascii(&q->tmp, t, c->len);
    const char *lt = q->tmp.data ? q->tmp.data : "";
    if (!memmem(lt, c->len, "cookie", 6) && !memmem(lt, c->len, "privacy", 7) &&
        !memmem(lt, c->len, "terms of use", 12) && !memmem(lt, c->len, "lorem ipsum", 11))
        return 0.0;
    for (size_t i = 0; i < s->n; i++) {
        size_t a = s->v[i].off, b = a + s->v[i].len;
        uc_strip_space(t, &a, &b);
        lower_ascii(&q->tmp, t + a, b - a);
        const char *p = q->tmp.data ? q->tmp.data : "";
        size_t n = b - a;
        if (memmem(p, n, "lorem ipsum", 11))
            return 1.0;
        for (size_t j = 0; nemo_policy[j]; j++)
            if (memmem(p, n, nemo_policy[j], strlen(nemo_policy[j]))) {
                k++;
                break;
            }
    }
    return (double)k / (double)s->n;
}

/* Unique pieces / pieces, or (by_char) their characters / all characters. */
static double unique_share(struct sl_fctx *c, const struct sl_spanvec *s, int by_char, int *empty)
{
    sl_hcount_reset(&c->h2, s->n);
    size_t uniq = 0, uchars = 0, chars = 0;
    for (size_t i = 0; i < s->n; i++) {
        const char *p = c->text + s->v[i].off;
        size_t cn = uc_count(p, s->v[i].len);
        chars += cn;
        if (sl_hcount_add(&c->h2, sl_hash64(p, s->v[i].len, 7), 0)->count == 1) {
            uniq++;
            uchars += cn;
        }
    }
    if (!by_char) {
        if (!s->n) {
            *empty = 1;
            return 0;
        }
        return (double)uniq / (double)s->n;
    }
    if (!chars) {
        *empty = 1;
        return 0;
    }
    return (double)uchars / (double)chars;
}

static double repeated_lines(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    return unique_share(c, nonempty_lines(c), 0, empty);
}

static double repeated_paras(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    return unique_share(c, paragraphs(c), 0, empty);
}

static double repeated_lines_char(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    return unique_share(c, nonempty_lines(c), 1, empty);
}

static double repeated_paras_char(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)q;
    return unique_share(c, paragraphs(c), 1, empty);
}

/* ---- the n-gram kinds ------------------------------------------------------------------- */

/* The view the n-gram filters share: where the n-grams of the last one (on words `sel`)
 * occur more than once. rep[i] == n if the n-gram at word i does. */
struct ngram_rep {
    uint8_t *rep;
    size_t cap, n, active;
    int sel;
};

static void ngram_rep_free(void *p)
{
    free(((struct ngram_rep *)p)->rep);
}

/* The n-grams of a text, hashed from the words' prefix hashes. An n-gram that occurs twice
 * starts with an m-gram (m < n) that occurs twice. Once the positions of repeated m-grams
 * are known (rep[i] == m, from an earlier n-gram filter on the same words), only those
 * positions can hold a repeated n-gram: the others hold n-grams that occur once, which
 * count 1 and are never seen again. */
struct ngrams {
    const struct sl_wordvec *w;
    const uint64_t *wp;
    uint64_t bn; /* SL_POLY_BASE^n */
    size_t n, npos, m;
    const uint8_t *rep;
};

static inline uint64_t ngram_at(const struct ngrams *g, size_t i)
{
    return sl_sub61(g->wp[i + g->n], sl_mul61(g->wp[i], g->bn));
}

static inline int ngram_active(const struct ngrams *g, size_t i)
{
    return !g->m || g->rep[i] == g->m;
}

/* The character share of the most frequent n-gram's non-overlapping occurrences. */
static double top_ngram_ratio(struct nemo *q, struct sl_fctx *c, const struct ngrams *g)
{
    const char *t = c->text;
    struct sl_hcount_slot best = { 0, 0, UINT32_MAX };
    for (size_t i = 0; i < g->npos; i++) {
        if (!ngram_active(g, i))
            continue;
        struct sl_hcount_slot *e = sl_hcount_add(&c->h1, ngram_at(g, i), (uint32_t)i);
        if (e->count > best.count || (e->count == best.count && e->tag < best.tag))
            best = *e;
    }
    if (best.count < 2) { /* every n-gram occurs once: the first one wins */
        best.count = 1;
        best.tag = 0;
    }
    /* " ".join(ngram), then its non-overlapping occurrences in the text */
    sl_buf_reset(&q->tmp);
    for (size_t j = 0; j < g->n; j++) {
        if (j)
            sl_buf_putc(&q->tmp, ' ');
        sl_buf_append(&q->tmp, t + g->w->v[best.tag + j].off, g->w->v[best.tag + j].len);
    }
    size_t occ = 0;
    const char *p = t, *end = t + c->len;
    while ((size_t)(end - p) >= q->tmp.len) {
        const char *f = memmem(p, (size_t)(end - p), q->tmp.data, q->tmp.len);
        if (!f)
            break;
        occ++;
        p = f + q->tmp.len;
    }
    return (double)(occ * uc_count(q->tmp.data, q->tmp.len)) / (double)c->nchar;
}

/* The character share of the words in n-grams that occur more than once. */
static double dup_ngram_ratio(struct nemo *q, struct sl_fctx *c, const struct ngrams *g)
{
    (void)q;
    size_t n = g->n, dup = 0, overlap = 0;
    for (size_t i = 0; i < g->npos; i++) {
        if (ngram_active(g, i) && sl_hcount_add(&c->h1, ngram_at(g, i), 0)->count > 1) {
            size_t k = 0;
            for (size_t j = overlap; j < n; j++)
                k += g->w->v[i + j].nchar;
            size_t sp = n - overlap < n - 1 ? n - overlap : n - 1;
            dup += k + sp;
            overlap = n;
        }
        overlap = overlap ? overlap - 1 : 0;
    }
    return (double)dup / (double)c->nchar;
}

/* Count the n-grams with ratio(), then keep where they repeat for the next n-gram kind. */
static double ngram_score(struct nemo *q, struct sl_fctx *c,
                          double (*ratio)(struct nemo *, struct sl_fctx *, const struct ngrams *))
{
    enum sl_words_sel sel = nword_sel(c, q->words);
    struct ngrams g;
    g.w = sl_fctx_words(c, sel);
    g.n = (size_t)q->n;
    if (g.w->n < g.n)
        return 1.0;
    if (!c->nchar)
        return 1.0;
    g.wp = sl_fctx_word_prefix(c, sel);
    g.bn = sl_pow61(SL_POLY_BASE, g.n);
    g.npos = g.w->n - g.n + 1;
    struct sl_fctx_view *v =
        sl_fctx_view(c, SL_VIEW_REPEATED_NGRAMS, sizeof(struct ngram_rep), ngram_rep_free);
    struct ngram_rep *r = v->data;
    g.m = 0;
    int record = 1;
    if (v->ver == c->version && r->sel == (int)sel) {
        if (r->n < g.n)
            g.m = r->n;
        else
            record = 0;
    }
    if (record && r->cap < g.w->n) {
        free(r->rep);
        r->cap = g.w->n;
        r->rep = sl_xmalloc(r->cap);
    }
    g.rep = r->rep;
    sl_hcount_reset(&c->h1, g.m ? r->active : g.w->n);
    double res = ratio(q, c, &g);
    if (record) { /* the positions whose n-gram occurs more than once */
        size_t active = 0;
        for (size_t i = 0; i < g.npos; i++)
            if (ngram_active(&g, i)) {
                const struct sl_hcount_slot *e = sl_hcount_find(&c->h1, ngram_at(&g, i));
                r->rep[i] = e && e->count > 1 ? (uint8_t)g.n : 0;
                active += r->rep[i] != 0;
            }
        r->active = active;
        r->n = g.n;
        r->sel = (int)sel;
        v->ver = c->version;
    }
    return res;
}

static double top_ngrams(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)empty;
    return ngram_score(q, c, top_ngram_ratio);
}

static double dup_ngrams(struct nemo *q, struct sl_fctx *c, int *empty)
{
    (void)empty;
    return ngram_score(q, c, dup_ngram_ratio);
}

/* ---- the table ---------------------------------------------------------------------------- */

/* Each kind: its score, and the parameters (with their defaults) bounding it: keep if
 * min <= score <= max. */
struct bound {
    const char *param; /* or NULL: no bound */
    double def;
};
/* clang-format off */
#define NONE { NULL, 0 }
static const struct nemo_kind_def {
    const char *name;
    double (*score)(struct nemo *q, struct sl_fctx *c, int *empty);
    struct bound min, max;
} kinds[] = {
    [N_WORD_COUNT]       = { "word_count", word_count,
                             { "min_words", 50 }, { "max_words", 100000 } },
    [N_MEAN_WORD_LENGTH] = { "mean_word_length", mean_word_length,
                             { "min_mean_word_length", 3 }, { "max_mean_word_length", 10 } },
    [N_SYMBOLS]          = { "symbols_to_words", symbols,
                             NONE, { "max_symbol_to_word_ratio", 0.1 } },
    [N_BULLETS]          = { "bullets", bullet_lines,
                             NONE, { "max_bullet_lines_ratio", 0.9 } },
    [N_ELLIPSIS]         = { "ellipsis", ellipsis_lines,
                             NONE, { "max_num_lines_ending_with_ellipsis_ratio", 0.3 } },
    [N_ALPHA_WORDS]      = { "words_without_alphabets", alpha_words,
                             { "min_words_with_alphabets", 0.8 }, NONE },
    [N_COMMON_EN]        = { "common_english_words", common_english,
                             { "min_num_common_words", 2 }, NONE },
    [N_NON_ALNUM]        = { "non_alphanumeric", non_alnum,
                             NONE, { "max_non_alpha_numeric_to_text_ratio", 0.25 } },
    [N_NUMBERS]          = { "numbers", numbers,
                             NONE, { "max_number_to_text_ratio", 0.15 } },
    [N_URLS]             = { "urls", urls,
                             NONE, { "max_url_to_text_ratio", 0.2 } },
    [N_WHITESPACE]       = { "whitespace", whitespace,
                             NONE, { "max_white_space_ratio", 0.25 } },
    [N_PARENS]           = { "parentheses", parens,
                             NONE, { "max_parentheses_ratio", 0.1 } },
    [N_LONG_WORD]        = { "long_word", long_word,
                             NONE, { "max_word_length", 1000 } },
    [N_BOILERPLATE]      = { "boilerplate_string", boilerplate,
                             NONE, { "max_boilerplate_string_ratio", 0.4 } },
    [N_PUNCTUATION]      = { "punctuation", unpunctuated_lines,
                             NONE, { "max_num_sentences_without_endmark_ratio", 0.85 } },
    [N_REP_LINES]        = { "repeated_lines", repeated_lines,
                             { "max_repeated_line_fraction", 0.7 }, NONE },
    [N_REP_PARAS]        = { "repeated_paragraphs", repeated_paras,
                             { "max_repeated_paragraphs_ratio", 0.7 }, NONE },
    [N_REP_LINES_CHAR]   = { "repeated_lines_by_char", repeated_lines_char,
                             { "max_repeated_lines_char_ratio", 0.8 }, NONE },
    [N_REP_PARAS_CHAR]   = { "repeated_paragraphs_by_char", repeated_paras_char,
                             { "max_repeated_paragraphs_char_ratio", 0.8 }, NONE },
    [N_TOP_NGRAMS]       = { "repeating_top_ngrams", top_ngrams,
                             NONE, { "max_repeating_ngram_ratio", 0.2 } },
    [N_DUP_NGRAMS]       = { "repeating_duplicate_ngrams", dup_ngrams,
                             NONE, { "max_repeating_duplicate_ngram_ratio", 0.2 } },
    [N_PORN_URLS]        = { "pornographic_urls", porn_urls, NONE, NONE }, /* max 0, fixed */
};
#undef NONE
/* clang-format on */
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static int nemo_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct nemo *q = f->state;
    int empty = 0;
    double s = kinds[q->kind].score(q, c, &empty);
    if (empty || !(s >= q->lo && s <= q->hi))
        return sl_filter_drop(r, empty ? "empty" : kinds[q->kind].name, s);
    r->keep = 1;
    r->score = s;
    return 0;
}

static void nemo_release(struct sl_filter *f)
{
    struct nemo *q = f->state;
    if (q)
        sl_buf_release(&q->tmp);
    free(q);
}

int sl_filter_build_nemo(struct sl_filter *f, struct sl_cfg *p, const struct sl_filter_env *env)
{
    (void)env;
    struct nemo *q = sl_xcalloc(1, sizeof(*q));
    f->state = q;
    f->apply = nemo_apply;
    f->release = nemo_release;
    size_t k = 0;
    while (k < NKINDS && strcmp(kinds[k].name, f->kind))
        k++;
    if (k == NKINDS)
        return sl_err_set(SL_ERR_CONFIG, "'%s' is not a NeMo filter kind", f->kind);
    const struct nemo_kind_def *d = &kinds[k];
    q->kind = (enum nemo_kind)k;
    q->lo = -INFINITY;
    q->hi = INFINITY;
    int rc = sl_filter_words_param(p, SL_WSEL_AUTO, &q->words);
    if (!rc && (q->kind == N_TOP_NGRAMS || q->kind == N_DUP_NGRAMS)) {
        long l;
        rc = sl_cfg_int(p, "n", 2, &l);
        q->n = l;
        if (!rc && (l < 1 || l > 64))
            rc = sl_err_set(SL_ERR_CONFIG, "%s: n: expected 1..64, got %ld",
                            sl_cfg_where(sl_cfg_child(p, "n")), l);
    }
    /* keep if score >= min, and <= max */
    if (!rc && d->min.param)
        rc = sl_cfg_double(p, d->min.param, d->min.def, &q->lo);
    if (!rc && d->max.param)
        rc = sl_cfg_double(p, d->max.param, d->max.def, &q->hi);
    if (!rc && q->kind == N_BOILERPLATE)
        rc = sl_cfg_bool(p, "remove_if_at_top_or_bottom", 1, &(int){ 0 });
    if (!rc && q->kind == N_COMMON_EN)
        rc = sl_cfg_bool(p, "stop_at_false", 1, &(int){ 0 });
    if (q->kind == N_PORN_URLS)
        q->hi = 0;
    return rc;
}
