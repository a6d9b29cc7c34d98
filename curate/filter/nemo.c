/* NeMo Curator's heuristic filters (nemo_curator/filters/heuristic_filter.py), one kind
 * each, with NeMo's definitions, parameter names and defaults (docs/filters.md). Words are
 * whitespace-split (str.split), or one per character for unspaced languages. */
#include "core/alloc.h"
#include "core/config.h"
#include "core/err.h"
#include "core/hash.h"
#include "curate/filter/filter.h"
#include "curate/filter/poly61.h"
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

static const char *const kind_names[] = {
    "word_count", "mean_word_length", "symbols_to_words", "bullets", "ellipsis",
    "words_without_alphabets", "common_english_words", "non_alphanumeric", "numbers", "urls",
    "whitespace", "parentheses", "long_word", "boilerplate_string", "punctuation",
    "repeated_lines", "repeated_paragraphs", "repeated_lines_by_char",
    "repeated_paragraphs_by_char", "repeating_top_ngrams", "repeating_duplicate_ngrams",
    "pornographic_urls", NULL,
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

/* get_sentences: "\n"-split pieces with a non-whitespace character (not stripped). */
static const struct sl_spanvec *nonempty_lines(struct sl_fctx *c)
{
    struct sl_spanvec *out = &c->nemo_lines;
    if (c->nemo_lines_ver == c->version)
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
    c->nemo_lines_ver = c->version;
    return out;
}

/* get_paragraphs: text.split("\n\n"), empty pieces included. */
static const struct sl_spanvec *paragraphs(struct sl_fctx *c)
{
    struct sl_spanvec *out = &c->nemo_paras;
    if (c->nemo_paras_ver == c->version)
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
    c->nemo_paras_ver = c->version;
    return out;
}

/* The character classes of the ratio filters, counted in one pass over the text. */
enum { CC_NON_ALNUM, CC_NUMBERS, CC_WHITESPACE, CC_PARENS };

static const size_t *char_classes(struct sl_fctx *c)
{
    if (c->nemo_chars_ver == c->version)
        return c->nemo_chars;
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
    memcpy(c->nemo_chars, k, sizeof(k));
    c->nemo_chars_ver = c->version;
    return c->nemo_chars;
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

static double score(struct nemo *q, struct sl_fctx *c, int *empty)
{
    const char *t = c->text;
    double nchar = (double)c->nchar;
    *empty = 0;
    switch (q->kind) {
    case N_WORD_COUNT:
        return (double)nwords(c, q->words)->n;
    case N_MEAN_WORD_LENGTH:
    case N_LONG_WORD: {
        const struct sl_wordvec *w = nwords(c, q->words);
        size_t sum = 0, mx = 0;
        for (size_t i = 0; i < w->n; i++) {
            sum += w->v[i].nchar;
            mx = w->v[i].nchar > mx ? w->v[i].nchar : mx;
        }
        if (!w->n) {
            *empty = 1;
            return 0;
        }
        return q->kind == N_LONG_WORD ? (double)mx : (double)sum / (double)w->n;
    }
    case N_SYMBOLS:
    case N_ALPHA_WORDS:
    case N_COMMON_EN: {
        const struct sl_wordvec *w = nwords(c, q->words);
        size_t k = 0;
        for (size_t i = 0; i < w->n; i++) {
            const char *s = t + w->v[i].off;
            size_t n = w->v[i].len;
            if (q->kind == N_SYMBOLS) {
                size_t runs = 0;
                if (memchr(s, '#', n))
                    for (size_t j = 0; j < n; j++)
                        if (s[j] == '#' && (j == 0 || s[j - 1] != '#'))
                            runs++;
                if ((double)runs / (double)w->v[i].nchar > 0.5 || is_one_of(s, n, ellipsis_marks))
                    k++;
            } else if (q->kind == N_ALPHA_WORDS) {
                for (size_t j = 0; j < n;) {
                    uint32_t cp;
                    j += uc_next(s + j, n - j, &cp);
                    if (uc_isalpha(cp)) {
                        k++;
                        break;
                    }
                }
            } else if (is_one_of(s, n, common_en) && (double)++k >= q->lo) {
                return (double)k; /* stop_at_false */
            }
        }
        if (q->kind == N_COMMON_EN)
            return (double)k;
        if (!w->n) {
            *empty = 1;
            return 0;
        }
        return (double)k / (double)w->n;
    }
    case N_NON_ALNUM:
    case N_NUMBERS:
    case N_WHITESPACE:
    case N_PARENS: {
        if (!c->nchar)
            return 1.0;
        const size_t *k = char_classes(c);
        size_t which = q->kind == N_NON_ALNUM    ? CC_NON_ALNUM
                       : q->kind == N_NUMBERS    ? CC_NUMBERS
                       : q->kind == N_WHITESPACE ? CC_WHITESPACE
                                                 : CC_PARENS;
        return (double)k[which] / nchar;
    }
    case N_URLS:
        return c->nchar ? (double)find_urls(t, c->len, NULL, NULL) / nchar : 1.0;
    case N_PORN_URLS: {
        int hit = 0;
        find_urls(t, c->len, has_porn, &hit);
        return hit;
    }
    case N_BULLETS:
    case N_ELLIPSIS:
    case N_PUNCTUATION: {
        const struct sl_spanvec *s = nonempty_lines(c);
        if (!s->n) {
            *empty = 1;
            return 0;
        }
        size_t k = 0;
        for (size_t i = 0; i < s->n; i++) {
            size_t a = s->v[i].off, b = a + s->v[i].len;
            uc_strip_space(t, &a, &b);
            const char *p = t + a;
            size_t n = b - a;
            if (q->kind == N_BULLETS) {
                for (size_t j = 0; bullets[j]; j++)
                    if (n >= 3 && !memcmp(p, bullets[j], 3)) {
                        k++;
                        break;
                    }
            } else if (q->kind == N_ELLIPSIS) {
                size_t tail = n < ELLIPSIS_MAXLEN ? n : ELLIPSIS_MAXLEN; /* enough to compare */
                lower_ascii(&q->tmp, p + n - tail, tail);
                for (size_t j = 0; ellipsis_marks[j]; j++)
                    if (ends_lit(q->tmp.data ? q->tmp.data : "", tail, ellipsis_marks[j])) {
                        k++;
                        break;
                    }
            } else {
                char last = n ? p[n - 1] : 0;
                k += !(last == '.' || last == '?' || last == '!' || last == '"' || last == '\'');
            }
        }
        return (double)k / (double)s->n;
    }
    case N_BOILERPLATE: {
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
    case N_REP_LINES:
    case N_REP_PARAS:
    case N_REP_LINES_CHAR:
    case N_REP_PARAS_CHAR: {
        const struct sl_spanvec *s = q->kind == N_REP_LINES || q->kind == N_REP_LINES_CHAR
                                         ? nonempty_lines(c)
                                         : paragraphs(c);
        sl_hcount_reset(&c->h2, s->n);
        size_t uniq = 0, uchars = 0, chars = 0;
        for (size_t i = 0; i < s->n; i++) {
            const char *p = t + s->v[i].off;
            size_t cn = uc_count(p, s->v[i].len);
            chars += cn;
            if (sl_hcount_add(&c->h2, sl_hash64(p, s->v[i].len, 7), 0)->count == 1) {
                uniq++;
                uchars += cn;
            }
        }
        if (q->kind == N_REP_LINES || q->kind == N_REP_PARAS) {
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
    case N_TOP_NGRAMS:
    case N_DUP_NGRAMS: {
        enum sl_words_sel sel = nword_sel(c, q->words);
        const struct sl_wordvec *w = sl_fctx_words(c, sel);
        size_t n = (size_t)q->n;
        if (w->n < n)
            return 1.0;
        if (!c->nchar)
            return 1.0;
        const uint64_t *wp = sl_fctx_word_prefix(c, sel);
        uint64_t bn = sl_pow61(SL_POLY_BASE, n);
        size_t npos = w->n - n + 1;
        /* An n-gram that occurs twice starts with an m-gram (m < n) that occurs twice. Once
         * the positions of repeated m-grams are known (rep[i] == m, from an earlier n-gram
         * filter on the same words), only those positions can hold a repeated n-gram: the
         * others hold n-grams that occur once, which count 1 and are never seen again. */
        size_t m = 0;
        int record = 1;
        if (c->nemo_rep_ver == c->version && c->nemo_rep_sel == (int)sel) {
            if (c->nemo_rep_n < n)
                m = c->nemo_rep_n;
            else
                record = 0;
        }
        if (record && c->nemo_rep_cap < w->n) {
            free(c->nemo_rep);
            c->nemo_rep_cap = w->n;
            c->nemo_rep = sl_xmalloc(c->nemo_rep_cap);
        }
        uint8_t *rep = c->nemo_rep;
#define NGRAM(i)  sl_sub61(wp[(i) + n], sl_mul61(wp[i], bn))
#define ACTIVE(i) (!m || rep[i] == m)
        sl_hcount_reset(&c->h1, m ? c->nemo_rep_active : w->n);
        double res;
        if (q->kind == N_TOP_NGRAMS) {
            struct sl_hcount_slot best = { 0, 0, UINT32_MAX };
            for (size_t i = 0; i < npos; i++) {
                if (!ACTIVE(i))
                    continue;
                struct sl_hcount_slot *e = sl_hcount_add(&c->h1, NGRAM(i), (uint32_t)i);
                if (e->count > best.count || (e->count == best.count && e->tag < best.tag))
                    best = *e;
            }
            if (best.count < 2) { /* every n-gram occurs once: the first one wins */
                best.count = 1;
                best.tag = 0;
            }
            /* " ".join(ngram), then its non-overlapping occurrences in the text */
            sl_buf_reset(&q->tmp);
            for (size_t j = 0; j < n; j++) {
                if (j)
                    sl_buf_putc(&q->tmp, ' ');
                sl_buf_append(&q->tmp, t + w->v[best.tag + j].off, w->v[best.tag + j].len);
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
            res = (double)(occ * uc_count(q->tmp.data, q->tmp.len)) / nchar;
        } else {
            size_t dup = 0, overlap = 0;
            for (size_t i = 0; i < npos; i++) {
                if (ACTIVE(i) && sl_hcount_add(&c->h1, NGRAM(i), 0)->count > 1) {
                    size_t g = 0;
                    for (size_t j = overlap; j < n; j++)
                        g += w->v[i + j].nchar;
                    size_t sp = n - overlap < n - 1 ? n - overlap : n - 1;
                    dup += g + sp;
                    overlap = n;
                }
                overlap = overlap ? overlap - 1 : 0;
            }
            res = (double)dup / nchar;
        }
        if (record) { /* the positions whose n-gram occurs more than once */
            size_t active = 0;
            for (size_t i = 0; i < npos; i++)
                if (ACTIVE(i)) {
                    const struct sl_hcount_slot *e = sl_hcount_find(&c->h1, NGRAM(i));
                    rep[i] = e && e->count > 1 ? (uint8_t)n : 0;
                    active += rep[i] != 0;
                }
            c->nemo_rep_active = active;
            c->nemo_rep_ver = c->version;
            c->nemo_rep_sel = (int)sel;
            c->nemo_rep_n = n;
        }
#undef NGRAM
#undef ACTIVE
        return res;
    }
    }
    return 0;
}

static int nemo_apply(struct sl_filter *f, struct sl_fctx *c, struct sl_filter_result *r)
{
    struct nemo *q = f->state;
    int empty;
    double s = score(q, c, &empty);
    r->score = s;
    r->keep = !empty && s >= q->lo && s <= q->hi;
    if (!r->keep)
        r->reason = empty ? "empty" : kind_names[q->kind];
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
    struct nemo *q = sl_xcalloc(1, sizeof(*q));
    f->state = q;
    f->apply = nemo_apply;
    f->release = nemo_release;
    size_t k = 0;
    while (kind_names[k] && strcmp(kind_names[k], f->kind))
        k++;
    q->kind = (enum nemo_kind)k;
    q->lo = -INFINITY;
    q->hi = INFINITY;
    int rc = sl_filter_words_param(p, SL_WSEL_AUTO, &q->words);
    double d;
    long l;
    /* (parameter, default): keep if score <= max, or >= min */
#define MAX(name, def)                                                                     \
    do {                                                                                   \
        if (!rc)                                                                           \
            rc = sl_cfg_double(p, name, def, &q->hi);                                      \
    } while (0)
#define MIN(name, def)                                                                     \
    do {                                                                                   \
        if (!rc)                                                                           \
            rc = sl_cfg_double(p, name, def, &q->lo);                                      \
    } while (0)
    switch (q->kind) {
    case N_WORD_COUNT: MIN("min_words", 50); MAX("max_words", 100000); break;
    case N_MEAN_WORD_LENGTH: MIN("min_mean_word_length", 3); MAX("max_mean_word_length", 10); break;
    case N_SYMBOLS: MAX("max_symbol_to_word_ratio", 0.1); break;
    case N_BULLETS: MAX("max_bullet_lines_ratio", 0.9); break;
    case N_ELLIPSIS: MAX("max_num_lines_ending_with_ellipsis_ratio", 0.3); break;
    case N_ALPHA_WORDS: MIN("min_words_with_alphabets", 0.8); break;
    case N_COMMON_EN: MIN("min_num_common_words", 2); break;
    case N_NON_ALNUM: MAX("max_non_alpha_numeric_to_text_ratio", 0.25); break;
    case N_NUMBERS: MAX("max_number_to_text_ratio", 0.15); break;
    case N_URLS: MAX("max_url_to_text_ratio", 0.2); break;
    case N_WHITESPACE: MAX("max_white_space_ratio", 0.25); break;
    case N_PARENS: MAX("max_parentheses_ratio", 0.1); break;
    case N_LONG_WORD: MAX("max_word_length", 1000); break;
    case N_BOILERPLATE:
        MAX("max_boilerplate_string_ratio", 0.4);
        if (!rc) rc = sl_cfg_bool(p, "remove_if_at_top_or_bottom", 1, &(int){ 0 });
        break;
    case N_PUNCTUATION: MAX("max_num_sentences_without_endmark_ratio", 0.85); break;
    case N_REP_LINES: MIN("max_repeated_line_fraction", 0.7); break;
    case N_REP_PARAS: MIN("max_repeated_paragraphs_ratio", 0.7); break;
    case N_REP_LINES_CHAR: MIN("max_repeated_lines_char_ratio", 0.8); break;
    case N_REP_PARAS_CHAR: MIN("max_repeated_paragraphs_char_ratio", 0.8); break;
    case N_TOP_NGRAMS:
    case N_DUP_NGRAMS:
        if (!rc) rc = sl_cfg_int(p, "n", 2, &l);
        q->n = l;
        if (!rc && (l < 1 || l > 64))
            rc = sl_err_set(SL_ERR_CONFIG, "%s: n: expected 1..64, got %ld",
                            sl_cfg_where(sl_cfg_child(p, "n")), l);
        if (q->kind == N_TOP_NGRAMS)
            MAX("max_repeating_ngram_ratio", 0.2);
        else
            MAX("max_repeating_duplicate_ngram_ratio", 0.2);
        break;
    case N_PORN_URLS: q->hi = 0; break;
    }
    if (!rc && q->kind == N_COMMON_EN)
        rc = sl_cfg_bool(p, "stop_at_false", 1, &(int){ 0 });
    (void)d;
    (void)env;
    return rc;
}
