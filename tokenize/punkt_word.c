/* Punkt's word tokenizer and token properties (see tokenize/punkt_word.h), written from
 * the regular expressions of NLTK 3.10.4's PunktLanguageVars and PunktToken. */
#include "tokenize/punkt_word.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "tokenize/punkt_map.h"
#include "tokenize/punkt_params.h"
#include "tokenize/punkt_uni.h"

#include <stdlib.h>
#include <string.h>

void punkt_words_release(struct punkt_words *w)
{
    free(w->v);
    memset(w, 0, sizeof(*w));
}

int punkt_is_nonword(uint32_t c)
{
    switch (c) {
    case ')':
    case '"':
    case ';':
    case '}':
    case ']':
    case '*':
    case ':':
    case '@':
    case '\'':
    case '(':
    case '{':
    case '[':
    case '?':
    case '!':
    case 0x2018:
    case 0x2019:
    case 0x201C:
    case 0x201D:
    case 0xAB:
    case 0xBB:
        return 1;
    default:
        return 0;
    }
}

/* the complement of _re_word_start: characters a word cannot start with */
static int no_word_start(uint32_t c)
{
    return c < 0x80 && strchr("(\"`{[:;&#*@)}]-,", (int)c) != NULL && c != 0;
}

/* _re_multi_char_punct at s[i] (line end e): the match's length, or 0. */
static size_t multichar(const char *s, size_t i, size_t e)
{
    if (s[i] == '-') {
        size_t j = i + 1;
        while (j < e && s[j] == '-')
            j++;
        return j - i >= 2 ? j - i : 0;
    }
    if (s[i] != '.')
        return 0;
    if (i + 1 < e && s[i + 1] == '.') {
        size_t j = i + 2;
        while (j < e && s[j] == '.')
            j++;
        return j - i;
    }
    /* (?:\.\s){2,}\. : as many pairs as there are, then one period; or one pair fewer */
    size_t pos = i, k = 0, last = i;
    while (pos + 1 < e && s[pos] == '.') {
        size_t l;
        if (!(punkt_uni_at(s + pos + 1, e - pos - 1, &l) & PK_RS))
            break;
        last = pos;
        pos += 1 + l;
        k++;
    }
    if (k >= 2 && pos < e && s[pos] == '.')
        return pos + 1 - i;
    return k >= 3 ? last + 1 - i : 0;
}

/* Whether a word may end before s[j]: whitespace, the end, a non-word character,
 * multi-character punctuation, or a comma followed by one of those. */
static int word_end_at(const char *s, size_t j, size_t e)
{
    if (j >= e)
        return 1;
    uint32_t c;
    size_t l = punkt_uni_next(s + j, e - j, &c);
    if ((punkt_uni_class(c) & PK_RS) || punkt_is_nonword(c) || multichar(s, j, e))
        return 1;
    if (c != ',')
        return 0;
    j += l;
    if (j >= e)
        return 1;
    punkt_uni_next(s + j, e - j, &c);
    return (punkt_uni_class(c) & PK_RS) || punkt_is_nonword(c) || multichar(s, j, e);
}

static void push(struct punkt_words *out, size_t off, size_t len, unsigned flags)
{
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->v = sl_xrealloc(out->v, out->cap * sizeof(*out->v));
    }
    out->v[out->n++] = (struct punkt_word){ off, len, flags };
}

/* The tokens of the line s[ls..le) (no '\n' in it). */
static void scan_line(const char *s, size_t ls, size_t le, int *parastart, struct punkt_words *out)
{
    int first = 1;
    for (size_t i = ls; i < le;) {
        uint32_t c;
        size_t l = punkt_uni_next(s + i, le - i, &c);
        if (punkt_uni_class(c) & PK_RS) {
            i += l;
            continue;
        }
        size_t m = multichar(s, i, le);
        if (!m && !no_word_start(c)) {
            size_t j = i + l;
            while (!word_end_at(s, j, le))
                j += punkt_uni_next(s + j, le - j, &c);
            m = j - i;
        }
        if (!m)
            m = l;
        push(out, i, m, first ? PW_LINESTART | (*parastart ? PW_PARASTART : 0) : 0);
        if (first)
            *parastart = 0;
        first = 0;
        i += m;
    }
}

void punkt_words_scan(const char *text, size_t n, int *parastart, struct punkt_words *out)
{
    size_t ls = 0;
    for (;;) {
        const char *nl = memchr(text + ls, '\n', n - ls);
        size_t le = nl ? (size_t)(nl - text) : n;
        /* line.strip(): a line of str.isspace characters only is blank */
        int blank = 1;
        for (size_t i = ls; i < le && blank;) {
            size_t l;
            blank = (punkt_uni_at(text + i, le - i, &l) & PK_PS) != 0;
            i += l;
        }
        if (blank)
            *parastart = 1;
        else
            scan_line(text, ls, le, parastart, out);
        if (!nl)
            break;
        ls = le + 1;
    }
}

/* a letter: \w less \d */
static int is_letter(unsigned f)
{
    return (f & (PK_RW | PK_RD)) == PK_RW;
}

int punkt_tok_is_ellipsis(const char *s, size_t n)
{
    if (n < 2)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '.')
            return 0;
    return 1;
}

int punkt_tok_is_initial(const char *s, size_t n)
{
    size_t l;
    unsigned f = punkt_uni_at(s, n, &l);
    return l + 1 == n && s[l] == '.' && is_letter(f);
}

int punkt_tok_is_alpha(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t l;
        if (!is_letter(punkt_uni_at(s + i, n - i, &l)))
            return 0;
        i += l;
    }
    return n > 0;
}

int punkt_tok_is_numeric(const char *s, size_t n)
{
    size_t i = 0, l;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && (s[i] == '.' || s[i] == ','))
        i++;
    if (i >= n || !(punkt_uni_at(s + i, n - i, &l) & PK_RD))
        return 0;
    for (i += l; i < n; i += l) {
        unsigned f = punkt_uni_at(s + i, n - i, &l);
        if (!(f & PK_RD) && s[i] != ',' && s[i] != '.' && s[i] != '-')
            return 0;
    }
    return 1;
}

int punkt_tok_is_sent_end(const char *s, size_t n)
{
    return n == 1 && (s[0] == '.' || s[0] == '?' || s[0] == '!');
}

int punkt_tok_first_case(const char *s, size_t n)
{
    size_t l;
    unsigned f = punkt_uni_at(s, n, &l);
    return (f & PK_LO) ? PUNKT_CASE_LOWER : (f & PK_UP) ? PUNKT_CASE_UPPER : PUNKT_CASE_NONE;
}

void punkt_tok_type(const char *s, size_t n, struct sl_buf *out)
{
    if (punkt_tok_is_numeric(s, n))
        sl_buf_puts(out, PUNKT_NUMBER_TYPE);
    else
        punkt_uni_lower(s, n, out);
}

int punkt_type_is_non_punct(const char *t, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t l;
        if (is_letter(punkt_uni_at(t + i, n - i, &l)))
            return 1;
        i += l;
    }
    return 0;
}

unsigned punkt_first_pass(const struct punkt_params *p, const char *s, size_t n, struct sl_buf *tmp)
{
    if (punkt_tok_is_sent_end(s, n))
        return PW_SENTBREAK;
    if (punkt_tok_is_ellipsis(s, n))
        return PW_ELLIPSIS;
    if (s[n - 1] != '.' || (n >= 2 && s[n - 2] == '.'))
        return 0;
    sl_buf_reset(tmp);
    punkt_uni_lower(s, n - 1, tmp);
    const char *t = tmp->data ? tmp->data : "";
    if (punkt_map_find(p->abbrev, t, tmp->len) != PUNKT_MAP_MISSING)
        return PW_ABBR;
    const char *dash = tmp->len ? memrchr(t, '-', tmp->len) : NULL;
    if (dash &&
        punkt_map_find(p->abbrev, dash + 1, tmp->len - (size_t)(dash + 1 - t)) != PUNKT_MAP_MISSING)
        return PW_ABBR;
    return PW_SENTBREAK;
}
