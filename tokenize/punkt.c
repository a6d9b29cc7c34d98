/* NLTK's Punkt sentence splitter (see tokenize/punkt.h), written from the methods of
 * PunktSentenceTokenizer in NLTK 3.10.4: _match_potential_end_contexts, _slices_from_text,
 * text_contains_sentbreak with the two annotation passes, and _realign_boundaries. */
#include "tokenize/punkt.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "tokenize/punkt_map.h"
#include "tokenize/punkt_params.h"
#include "tokenize/punkt_uni.h"
#include "tokenize/punkt_word.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct punkt {
    const struct punkt_params *p;
    int keep_newlines;
    struct punkt_words w;   /* a context's tokens */
    struct sl_buf t1, t2;   /* the types of a pair of tokens */
    struct sl_buf key, tmp; /* a collocation's key; scratch */
    struct punkt_spans cut; /* the slices before realigning */
};

/* A candidate break (a match of the period-context regex): the match [start, end), its
 * lookahead "after_tok" [end, after), and where the token after it starts (next, when
 * has_next: "next_tok" took part). */
struct cand {
    size_t start, end, after, next;
    int has_next;
};

void punkt_spans_release(struct punkt_spans *s)
{
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static void span_push(struct punkt_spans *s, size_t start, size_t end)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = sl_xrealloc(s->v, s->cap * sizeof(*s->v));
    }
    s->v[s->n++] = (struct punkt_span){ start, end };
}

struct punkt *punkt_new(const struct punkt_params *p, int keep_newlines)
{
    struct punkt *k = sl_xcalloc(1, sizeof(*k));
    k->p = p;
    k->keep_newlines = keep_newlines;
    return k;
}

void punkt_free(struct punkt *k)
{
    if (!k)
        return;
    punkt_words_release(&k->w);
    sl_buf_release(&k->t1);
    sl_buf_release(&k->t2);
    sl_buf_release(&k->key);
    sl_buf_release(&k->tmp);
    punkt_spans_release(&k->cut);
    free(k);
}

static int is_nonword_at(const char *s, size_t i, size_t n, size_t *len)
{
    uint32_t c;
    *len = punkt_uni_next(s + i, n - i, &c);
    return punkt_is_nonword(c);
}

static int is_space_at(const char *s, size_t i, size_t n, size_t *len)
{
    return (punkt_uni_at(s + i, n - i, len) & PK_RS) != 0;
}

/* The end of the run of whitespace (want 1) or of non-whitespace (want 0) from i. */
static size_t run_end(const char *s, size_t i, size_t n, int want)
{
    size_t l;
    while (i < n && is_space_at(s, i, n, &l) == want)
        i += l;
    return i;
}

static int is_end_mark(char c)
{
    return c == '.' || c == '?' || c == '!';
}

/* The lookahead of --keep-newlines at q (whitespace skipped): a non-word character, or a
 * token ("next_tok"); 0 when there is nothing. */
static int lookahead(const char *s, size_t q, size_t n, struct cand *c)
{
    size_t l;
    if (q >= n)
        return 0;
    if (is_nonword_at(s, q, n, &l)) {
        c->after = q + l;
        c->has_next = 0;
        return 1;
    }
    if (is_space_at(s, q, n, &l))
        return 0;
    c->next = q;
    c->after = run_end(s, q, n, 0);
    c->has_next = 1;
    return 1;
}

/* NLTK's period context at or after `pos`: [.?!](?=NonWord|\s+(\S+)). */
static int next_cand(const char *s, size_t n, size_t pos, struct cand *c)
{
    for (size_t p = pos; p < n; p++) {
        if (!is_end_mark(s[p]))
            continue;
        c->start = p;
        c->end = p + 1;
        size_t l;
        if (p + 1 < n && is_nonword_at(s, p + 1, n, &l)) {
            c->after = p + 1 + l;
            c->has_next = 0;
            return 1;
        }
        if (p + 1 < n && is_space_at(s, p + 1, n, &l)) {
            size_t q = run_end(s, p + 1, n, 1);
            if (q < n) {
                c->next = q;
                c->after = run_end(s, q, n, 0);
                c->has_next = 1;
                return 1;
            }
        }
    }
    return 0;
}

/* Megatron's --keep-newlines context at or after `pos`: \S*[.?!]\s*(?=NonWord|(\S+)). The
 * \S* is greedy: the last mark of the non-whitespace run that still has a token after it. */
static int next_cand_keepnl(const char *s, size_t n, size_t pos, struct cand *c)
{
    size_t p = pos;
    while (p < n) {
        p = run_end(s, p, n, 1);
        size_t e = run_end(s, p, n, 0);
        for (size_t m = e; m > p; m--) {
            if (!is_end_mark(s[m - 1]))
                continue;
            size_t w = run_end(s, m, n, 1);
            if (w >= n)
                continue; /* nothing after it: an earlier mark may do */
            c->start = p;
            c->end = w;
            if (lookahead(s, w, n, c))
                return 1;
        }
        p = e;
    }
    return 0;
}

/* The type of token t (of the text at s) into b; the type without its period when
 * no_period, or without a sentence-breaking period when no_sentperiod. */
static void type_of(const char *s, const struct punkt_word *t, struct sl_buf *b, int drop_period)
{
    sl_buf_reset(b);
    punkt_tok_type(s + t->off, t->len, b);
    if (drop_period)
        b->len = punkt_type_no_period(b->data, b->len);
}

enum { ORTHO_FALSE, ORTHO_TRUE, ORTHO_UNKNOWN };

/* _ortho_heuristic: whether token t (whose type_no_sentperiod is typ) starts a sentence. */
static int ortho_heuristic(const struct punkt *k, const char *s, const struct punkt_word *t,
                           const struct sl_buf *typ)
{
    if (t->len == 1 && s[t->off] && strchr(";:,.!?", s[t->off]))
        return ORTHO_FALSE;
    int64_t oc = punkt_map_get(k->p->ortho, typ->data, typ->len);
    int cs = punkt_tok_first_case(s + t->off, t->len);
    if (cs == PUNKT_CASE_UPPER && (oc & PUNKT_ORTHO_LC) && !(oc & PUNKT_ORTHO_MID_UC))
        return ORTHO_TRUE;
    if (cs == PUNKT_CASE_LOWER && ((oc & PUNKT_ORTHO_UC) || !(oc & PUNKT_ORTHO_BEG_LC)))
        return ORTHO_FALSE;
    return ORTHO_UNKNOWN;
}

/* _second_pass_annotation of the pair (a, b): b has its first-pass annotations only. */
static void second_pass(struct punkt *k, const char *s, struct punkt_word *a,
                        const struct punkt_word *b)
{
    if (s[a->off + a->len - 1] != '.')
        return;
    type_of(s, a, &k->t1, 1);
    type_of(s, b, &k->t2, (b->flags & PW_SENTBREAK) != 0);
    int initial = punkt_tok_is_initial(s + a->off, a->len);
    sl_buf_reset(&k->key);
    sl_buf_append(&k->key, k->t1.data, k->t1.len);
    sl_buf_putc(&k->key, '\t');
    sl_buf_append(&k->key, k->t2.data, k->t2.len);
    if (punkt_map_find(k->p->colloc, k->key.data, k->key.len) != PUNKT_MAP_MISSING) {
        a->flags = (a->flags & ~PW_SENTBREAK) | PW_ABBR;
        return;
    }
    int upper = punkt_tok_first_case(s + b->off, b->len) == PUNKT_CASE_UPPER;
    if ((a->flags & (PW_ABBR | PW_ELLIPSIS)) && !initial) {
        if (ortho_heuristic(k, s, b, &k->t2) == ORTHO_TRUE ||
            (upper && punkt_map_find(k->p->starters, k->t2.data, k->t2.len) != PUNKT_MAP_MISSING)) {
            a->flags |= PW_SENTBREAK;
            return;
        }
    }
    int number = k->t1.len == strlen(PUNKT_NUMBER_TYPE) &&
                 memcmp(k->t1.data, PUNKT_NUMBER_TYPE, k->t1.len) == 0;
    if (initial || number) {
        int h = ortho_heuristic(k, s, b, &k->t2);
        if (h == ORTHO_FALSE ||
            (h == ORTHO_UNKNOWN && initial && upper &&
             !(punkt_map_get(k->p->ortho, k->t2.data, k->t2.len) & PUNKT_ORTHO_LC)))
            a->flags = (a->flags & ~PW_SENTBREAK) | PW_ABBR;
    }
}

/* text_contains_sentbreak: whether a token before the last of s[0..n) breaks. */
static int contains_sentbreak(struct punkt *k, const char *s, size_t n)
{
    int parastart = 0;
    k->w.n = 0;
    punkt_words_scan(s, n, &parastart, &k->w);
    struct punkt_word *v = k->w.v;
    for (size_t i = 0; i < k->w.n; i++)
        v[i].flags |= punkt_first_pass(k->p, s + v[i].off, v[i].len, &k->tmp);
    for (size_t i = 0; i + 1 < k->w.n; i++) {
        second_pass(k, s, &v[i], &v[i + 1]);
        if (v[i].flags & PW_SENTBREAK)
            return 1;
    }
    return 0;
}

/* _get_last_whitespace_index: the last of " \t\n\r\v\f" in s[a..b), relative to a; 0 when
 * there is none (or it is s[a] itself: NLTK does not tell them apart). */
static size_t last_ascii_space(const char *s, size_t a, size_t b)
{
    for (size_t i = b; i > a; i--)
        if (s[i - 1] && strchr(" \t\n\r\v\f", s[i - 1]))
            return i - 1 - a;
    return 0;
}

/* _slices_from_text: the slices in k->cut. */
static void slices(struct punkt *k, const char *s, size_t n)
{
    size_t last_break = 0, pos = 0, prev_start = 0, prev_stop = 0;
    struct cand prev = { 0 }, c = { 0 };
    int have_prev = 0, more = 1;
    k->cut.n = 0;
    while (more || have_prev) {
        /* _match_potential_end_contexts: a candidate is decided when the next one shows
         * that its word does not overlap it */
        more =
            more && (k->keep_newlines ? next_cand_keepnl(s, n, pos, &c) : next_cand(s, n, pos, &c));
        size_t ws = 0, start = 0;
        if (more) {
            pos = c.end;
            ws = last_ascii_space(s, prev_stop, c.start);
            start = ws ? prev_stop + ws + 1 : prev_start;
        }
        if (have_prev && (!more || prev_stop <= start)) {
            if (contains_sentbreak(k, s + prev_start, prev.after - prev_start)) {
                span_push(&k->cut, last_break, prev.end);
                last_break = prev.has_next ? prev.next : prev.end;
            }
        }
        have_prev = more;
        if (more) {
            prev = c;
            prev_start = start;
            prev_stop = c.start;
        }
    }
    /* the last sentence ends where text.rstrip() does */
    size_t end = n;
    while (end > 0) {
        size_t b = punkt_uni_prev(s, end), l;
        if (!(punkt_uni_at(s + b, end - b, &l) & PK_PS))
            break;
        end = b;
    }
    span_push(&k->cut, last_break, end);
}

/* re_boundary_realignment at s[0..n): ["')\]}‘’“”«»]+?(?:\s+|(?=--)|$) (MULTILINE). The
 * length of the quotes in *quotes and of the match in *len; 0 when it does not match. */
static int realignment(const char *s, size_t n, size_t *quotes, size_t *len)
{
    size_t i = 0;
    while (i < n) {
        uint32_t c;
        size_t l = punkt_uni_next(s + i, n - i, &c);
        if (!(c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == 0x2018 ||
              c == 0x2019 || c == 0x201C || c == 0x201D || c == 0xAB || c == 0xBB))
            return 0;
        i += l;
        *quotes = i;
        if (i < n && is_space_at(s, i, n, &l)) {
            *len = run_end(s, i, n, 1);
            return 1;
        }
        if (i == n || (i + 1 < n && s[i] == '-' && s[i + 1] == '-')) {
            *len = i;
            return 1;
        }
    }
    return 0;
}

void punkt_split(struct punkt *k, const char *text, size_t n, struct punkt_spans *out)
{
    slices(k, text, n);
    size_t realign = 0;
    for (size_t i = 0; i < k->cut.n; i++) {
        size_t a = k->cut.v[i].start + realign, b = k->cut.v[i].end;
        if (i + 1 == k->cut.n) {
            if (a < b)
                span_push(out, a, b);
            continue;
        }
        const struct punkt_span *next = &k->cut.v[i + 1];
        size_t quotes, len;
        if (next->end > next->start &&
            realignment(text + next->start, next->end - next->start, &quotes, &len)) {
            span_push(out, a, next->start + quotes);
            realign = len;
        } else {
            realign = 0;
            if (a < b)
                span_push(out, a, b);
        }
    }
}

void punkt_split_pieces(struct punkt *k, const char *text, size_t n, size_t max_chars,
                        struct punkt_spans *out)
{
    for (size_t a = 0; a < n;) {
        /* max_chars characters on, or the end: a piece of max_chars bytes has no more */
        size_t b = a, chars = 0;
        if (n - a <= max_chars) {
            b = n;
        } else {
            while (b < n && chars < max_chars) {
                uint32_t cp;
                b += punkt_uni_next(text + b, n - b, &cp);
                chars++;
            }
        }
        size_t first = out->n;
        punkt_split(k, text + a, b - a, out);
        for (size_t i = first; i < out->n; i++) {
            out->v[i].start += a;
            out->v[i].end += a;
        }
        a = b;
    }
}
