/* Hand-written pre-tokenizers equivalent to the GPT-2, cl100k_base and o200k_base regular
 * expressions (see pretok.h for the patterns and the semantics). */
#include "tokenize/pretok.h"

#include "tokenize/unicat.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef unsigned char u8;

#define OTHER(c) (!((c) & (UC_L | UC_N | UC_WS)))

/* Class and length of the character at p (p < e); an invalid byte is class 0, length 1. */
static inline unsigned cls_at(const u8 *p, const u8 *e, unsigned *len)
{
    u8 c0 = p[0];
    if (c0 < 0x80) {
        *len = 1;
        return unicat_stage2[0][c0];
    }
    size_t n = (size_t)(e - p);
    uint32_t cp;
    if (c0 >= 0xC2 && c0 <= 0xDF) {
        if (n >= 2 && (p[1] & 0xC0) == 0x80) {
            *len = 2;
            cp = ((uint32_t)(c0 & 0x1F) << 6) | (p[1] & 0x3F);
            return unicat_class(cp);
        }
    } else if (c0 >= 0xE0 && c0 <= 0xEF) {
        if (n >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
            cp = ((uint32_t)(c0 & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
            if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) {
                *len = 3;
                return unicat_class(cp);
            }
        }
    } else if (c0 >= 0xF0 && c0 <= 0xF4) {
        if (n >= 4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
            cp = ((uint32_t)(c0 & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                 ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
            if (cp >= 0x10000 && cp <= 0x10FFFF) {
                *len = 4;
                return unicat_class(cp);
            }
        }
    }
    *len = 1;
    return 0;
}

/* Advance over characters whose class has any bit of `want`. */
static inline const u8 *run_any(const u8 *p, const u8 *e, unsigned want)
{
    unsigned len;
    while (p < e) {
        if (*p < 0x80) {
            if (!(unicat_stage2[0][*p] & want))
                break;
            p++;
            continue;
        }
        if (!(cls_at(p, e, &len) & want))
            break;
        p += len;
    }
    return p;
}

/* Advance over ASCII letters ([A-Za-z], the only ASCII \p{L}); 16 bytes at a time with
 * SSE2 (part of every x86-64), byte by byte elsewhere. */
static inline const u8 *run_ascii_letters(const u8 *p, const u8 *e)
{
#if defined(__SSE2__)
    const __m128i lo = _mm_set1_epi8('a' - 1), hi = _mm_set1_epi8('z' + 1), bit = _mm_set1_epi8(0x20);
    while (e - p >= 16) {
        /* c | 0x20 is in a..z exactly for the letters; bytes >= 0x80 are negative */
        __m128i v = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)p), bit);
        __m128i in = _mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi));
        unsigned m = (unsigned)_mm_movemask_epi8(in) ^ 0xFFFFu;
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    while (p < e && (unsigned)((*p | 0x20) - 'a') < 26u)
        p++;
    return p;
}

/* Advance over [a-z], as run_ascii_letters. */
static inline const u8 *run_ascii_lower(const u8 *p, const u8 *e)
{
#if defined(__SSE2__)
    const __m128i lo = _mm_set1_epi8('a' - 1), hi = _mm_set1_epi8('z' + 1);
    while (e - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i in = _mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi));
        unsigned m = (unsigned)_mm_movemask_epi8(in) ^ 0xFFFFu;
        if (m)
            return p + __builtin_ctz(m);
        p += 16;
    }
#endif
    while (p < e && (unsigned)(*p - 'a') < 26u)
        p++;
    return p;
}

/* Advance over letters: runs of ASCII letters in bulk, other characters one by one. */
static inline const u8 *run_letters(const u8 *p, const u8 *e)
{
    unsigned len;
    for (;;) {
        p = run_ascii_letters(p, e);
        if (p >= e || *p < 0x80 || !(cls_at(p, e, &len) & UC_L))
            return p;
        p += len;
    }
}

/* Advance over characters that are neither letter, number nor space. */
static inline const u8 *run_other(const u8 *p, const u8 *e)
{
    unsigned len;
    while (p < e) {
        if (*p < 0x80) {
            if (!OTHER(unicat_stage2[0][*p]))
                break;
            p++;
            continue;
        }
        if (!OTHER(cls_at(p, e, &len)))
            break;
        p += len;
    }
    return p;
}

/* \p{N}{1,3} at p (p is a number). */
static inline const u8 *run_num3(const u8 *p, const u8 *e)
{
    unsigned len;
    for (int i = 0; i < 3 && p < e; i++) {
        if (!(cls_at(p, e, &len) & UC_N))
            break;
        p += len;
    }
    return p;
}

/* The whitespace alternatives at s (a space character):
 *   with_nl: \s*[\r\n]+ first (cl100k, o200k); then \s+(?!\S) and \s+. */
static size_t ws_tail(const u8 *s, const u8 *e, int with_nl)
{
    const u8 *p = s, *nl_end = NULL, *last = s;
    unsigned len;
    while (p < e) {
        unsigned c = cls_at(p, e, &len);
        if (!(c & UC_WS))
            break;
        if (c & UC_CRLF)
            nl_end = p + len;
        last = p;
        p += len;
    }
    if (with_nl && nl_end)
        return (size_t)(nl_end - s);
    if (p == e || last == s)
        return (size_t)(p - s); /* to the end, or a single space before a non-space */
    return (size_t)(last - s);  /* leave the last space to the piece that follows */
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at s (s[0] == '\''): its length or 0. Simple case folding
 * maps U+017F LATIN SMALL LETTER LONG S to 's'. */
static size_t contraction_ci(const u8 *s, const u8 *e)
{
    size_t n = (size_t)(e - s);
    if (n < 2)
        return 0;
    u8 a = s[1] | 0x20;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return s[1] >= 'A' ? 2 : 0; /* 'S'|0x20 == 's'; exclude non-letters that fold the same */
    if (s[1] == 0xC5 && n >= 3 && s[2] == 0xBF)
        return 3;
    if (n < 3)
        return 0;
    u8 b = s[2] | 0x20;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return s[1] >= 'A' && s[2] >= 'A' ? 3 : 0;
    return 0;
}

static size_t next_gpt2(const u8 *s, const u8 *e)
{
    u8 c0 = s[0];
    if (c0 == '\'' && e - s >= 2) {
        u8 c1 = s[1];
        if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd')
            return 2;
        if (e - s >= 3 && ((c1 == 'r' && s[2] == 'e') || (c1 == 'v' && s[2] == 'e') ||
                           (c1 == 'l' && s[2] == 'l')))
            return 3;
    }
    const u8 *q = s;
    if (c0 == ' ' && e - s >= 2)
        q = s + 1;
    unsigned len, c = cls_at(q, e, &len);
    if (c & UC_L)
        return (size_t)(run_letters(q + len, e) - s);
    if (c & UC_N)
        return (size_t)(run_any(q + len, e, UC_N) - s);
    if (OTHER(c))
        return (size_t)(run_other(q + len, e) - s);
    /* q is a space: the optional ' ' cannot have been taken */
    return ws_tail(s, e, 0);
}

static inline const u8 *run_crlf(const u8 *p, const u8 *e, int slash)
{
    while (p < e && (*p == '\r' || *p == '\n' || (slash && *p == '/')))
        p++;
    return p;
}

static size_t next_cl100k(const u8 *s, const u8 *e)
{
    u8 c0 = s[0];
    if (c0 == '\'') {
        size_t n = contraction_ci(s, e);
        if (n)
            return n;
    }
    unsigned len, c = cls_at(s, e, &len);
    if (!(c & (UC_CRLF | UC_L | UC_N)) && s + len < e) {
        unsigned len1, c1 = cls_at(s + len, e, &len1);
        if (c1 & UC_L)
            return (size_t)(run_letters(s + len + len1, e) - s);
    }
    if (c & UC_L)
        return (size_t)(run_letters(s + len, e) - s);
    if (c & UC_N)
        return (size_t)(run_num3(s, e) - s);
    if (c0 == ' ' && s + 1 < e) {
        unsigned len1, c1 = cls_at(s + 1, e, &len1);
        if (OTHER(c1))
            return (size_t)(run_crlf(run_other(s + 1 + len1, e), e, 0) - s);
    }
    if (OTHER(c))
        return (size_t)(run_crlf(run_other(s + len, e), e, 0) - s);
    return ws_tail(s, e, 1);
}

/* o200k: U* W+ at q (greedy with backtracking); end or NULL. */
static const u8 *o200k_alt1(const u8 *q, const u8 *e)
{
    const u8 *p = q, *w_end = NULL;
    /* ASCII first: [A-Z] are U only, [a-z] W only */
    while (p < e && (unsigned)(*p - 'A') < 26u)
        p++;
    if (p == e)
        return NULL; /* U+ to the end: no W */
    if (*p < 0x80) {
        if ((unsigned)(*p - 'a') >= 26u)
            return NULL;
        p = run_ascii_lower(p + 1, e);
        return p < e && *p >= 0x80 ? run_any(p, e, UC_LO) : p;
    }
    p = q; /* a non-ASCII character in the U run: the general walk */
    unsigned len, c = 0;
    while (p < e) {
        c = cls_at(p, e, &len);
        if (!(c & UC_UP))
            break;
        if (c & UC_LO)
            w_end = p + len;
        p += len;
    }
    if (p < e && (c & UC_LO))
        return run_any(p + len, e, UC_LO);
    return w_end;
}

/* o200k: U+ W* at q; end or NULL. */
static const u8 *o200k_alt2(const u8 *q, const u8 *e)
{
    unsigned len;
    if (q >= e || !(cls_at(q, e, &len) & UC_UP))
        return NULL;
    const u8 *p = run_any(q + len, e, UC_UP);
    return run_any(p, e, UC_LO);
}

static size_t with_contraction(const u8 *s, const u8 *r, const u8 *e)
{
    if (r < e && *r == '\'')
        r += contraction_ci(r, e);
    return (size_t)(r - s);
}

static size_t next_o200k(const u8 *s, const u8 *e)
{
    u8 c0 = s[0];
    unsigned len, c = cls_at(s, e, &len);
    int pable = !(c & (UC_CRLF | UC_L | UC_N)) && s + len < e;
    const u8 *r;
    if (pable && (r = o200k_alt1(s + len, e)))
        return with_contraction(s, r, e);
    if ((c & (UC_UP | UC_LO)) && (r = o200k_alt1(s, e)))
        return with_contraction(s, r, e);
    if (pable && (r = o200k_alt2(s + len, e)))
        return with_contraction(s, r, e);
    if ((r = o200k_alt2(s, e)))
        return with_contraction(s, r, e);
    if (c & UC_N)
        return (size_t)(run_num3(s, e) - s);
    if (c0 == ' ' && s + 1 < e) {
        unsigned len1, c1 = cls_at(s + 1, e, &len1);
        if (OTHER(c1))
            return (size_t)(run_crlf(run_other(s + 1 + len1, e), e, 1) - s);
    }
    if (OTHER(c))
        return (size_t)(run_crlf(run_other(s + len, e), e, 1) - s);
    return ws_tail(s, e, 1);
}

size_t pretok_split(enum pretok_kind k, const unsigned char *s, const unsigned char *end,
                    uint32_t *lens, size_t max)
{
    size_t n = 0;
    switch (k) {
    case PRETOK_CL100K:
        for (; s < end && n < max; n++)
            s += lens[n] = (uint32_t)next_cl100k(s, end);
        break;
    case PRETOK_O200K:
        for (; s < end && n < max; n++)
            s += lens[n] = (uint32_t)next_o200k(s, end);
        break;
    default:
        for (; s < end && n < max; n++)
            s += lens[n] = (uint32_t)next_gpt2(s, end);
        break;
    }
    return n;
}

size_t pretok_next(enum pretok_kind k, const unsigned char *s, const unsigned char *end)
{
    switch (k) {
    case PRETOK_CL100K: return next_cl100k(s, end);
    case PRETOK_O200K: return next_o200k(s, end);
    default: return next_gpt2(s, end);
    }
}

const char *pretok_name(enum pretok_kind k)
{
    switch (k) {
    case PRETOK_CL100K: return "cl100k";
    case PRETOK_O200K: return "o200k";
    default: return "gpt2";
    }
}

int pretok_from_name(const char *s, size_t n)
{
    for (int k = 0; k < PRETOK_KINDS; k++) {
        const char *nm = pretok_name((enum pretok_kind)k);
        if (strlen(nm) == n && !memcmp(s, nm, n))
            return k;
    }
    return -1;
}

#define WS "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define CONTR "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
#define UP "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
#define LO "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"

const char *pretok_regex(enum pretok_kind k)
{
    switch (k) {
    case PRETOK_CL100K:
        return CONTR "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*"
                     "|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+";
    case PRETOK_O200K:
        return "[^\\r\\n\\p{L}\\p{N}]?" UP "*" LO "+" CONTR "?|[^\\r\\n\\p{L}\\p{N}]?" UP "+" LO
               "*" CONTR "?|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n/]*|[" WS "]*[\\r\\n]+|[" WS
               "]+(?![^" WS "])|[" WS "]+";
    default:
        return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|[" WS
               "]+(?![^" WS "])|[" WS "]+";
    }
}
