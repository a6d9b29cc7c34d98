/* Character classes the filters need, on code points, with the meanings Python gives them
 * (str.isspace, str.isalpha, str.isdigit, str.splitlines) because the recipes we reproduce
 * are defined by Python code. Decoding never fails: an invalid byte is one U+FFFD. */
#ifndef SL_FILTER_UCHAR_H
#define SL_FILTER_UCHAR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <utf8proc.h>

#include "core/utf8.h"

/* Decode the code point at s (n > 0 bytes left); returns its length (>= 1). */
static inline size_t uc_next(const char *s, size_t n, uint32_t *cp)
{
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t l = sl_utf8_decode((const unsigned char *)s, n, cp);
    if (!l) {
        *cp = 0xFFFD;
        return 1;
    }
    return l;
}

/* Start of the code point that ends at s + n (n > 0). */
static inline size_t uc_prev_len(const char *s, size_t n)
{
    size_t k = 1;
    while (k < n && k < 4 && ((unsigned char)s[n - k] & 0xC0) == 0x80)
        k++;
    uint32_t cp;
    if (sl_utf8_decode((const unsigned char *)s + n - k, k, &cp) == k)
        return k;
    return 1;
}

/* Number of code points (Python len): the bytes that are not continuation bytes
 * (10xxxxxx), counted 8 at a time. */
static inline size_t uc_count(const char *s, size_t n)
{
    size_t cont = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        /* bit 7 of a byte set and bit 6 clear (the shift moves bit 6 into bit 7's place) */
        uint64_t m = (x & ~(x << 1) & UINT64_C(0x8080808080808080)) >> 7;
        cont += (size_t)((m * UINT64_C(0x0101010101010101)) >> 56); /* sum of the 8 bytes */
    }
    for (; i < n; i++)
        cont += ((unsigned char)s[i] & 0xC0) == 0x80;
    return n - cont;
}

/* Python str.isspace. */
static inline int uc_isspace(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Python str.strip(): narrow [*a, *b) of s past leading and trailing whitespace. */
static inline void uc_strip_space(const char *s, size_t *a, size_t *b)
{
    while (*a < *b) {
        uint32_t cp;
        size_t l = uc_next(s + *a, *b - *a, &cp);
        if (!uc_isspace(cp))
            break;
        *a += l;
    }
    while (*b > *a) {
        size_t l = uc_prev_len(s + *a, *b - *a);
        uint32_t cp;
        uc_next(s + *b - l, l, &cp);
        if (!uc_isspace(cp))
            break;
        *b -= l;
    }
}

/* Python str.splitlines boundaries (\r\n counts as one). */
static inline int uc_islinebreak(uint32_t c)
{
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
           c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* Python str.isalpha (categories Lu Ll Lt Lm Lo). */
static inline int uc_isalpha(uint32_t c)
{
    if (c < 0x80)
        return (c | 32) >= 'a' && (c | 32) <= 'z';
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

/* Python str.isdigit-like: decimal digits (category Nd), as regex [[:digit:]]. */
static inline int uc_isdigit(uint32_t c)
{
    if (c < 0x80)
        return c >= '0' && c <= '9';
    return utf8proc_category((utf8proc_int32_t)c) == UTF8PROC_CATEGORY_ND;
}

/* Python str.isalnum-ish used by \w: letters, digits, underscore, marks. */
static inline int uc_isword(uint32_t c)
{
    if (c < 0x80)
        return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z') || (c >= '0' && c <= '9');
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_NO) ||
           k == UTF8PROC_CATEGORY_PC;
}

/* Unicode general category P* (spaCy's is_punct on one character). */
static inline int uc_ispunct_cat(uint32_t c)
{
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

/* Scripts written without spaces between words: Han, kana, Thai, Lao, Khmer, Myanmar,
 * Tibetan. The word splitter falls back to one word per character for these. */
static inline int uc_unspaced(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x3040 && c <= 0x30FF) || (c >= 0x31F0 && c <= 0x31FF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x3134F) ||
           (c >= 0x0E00 && c <= 0x0EFF) || (c >= 0x1780 && c <= 0x17FF) ||
           (c >= 0x1000 && c <= 0x109F) || (c >= 0x0F00 && c <= 0x0FFF) ||
           (c >= 0xFF66 && c <= 0xFF9F);
}

#endif
