/* UTF-8 validation, repair and code point encoding. */
#include "core/utf8.h"

#include "core/buf.h"

#include <string.h>

size_t sl_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2 || c > 0xF4)
        return 0;
    if (c < 0xE0) {
        if (n < 2 || (s[1] & 0xC0) != 0x80)
            return 0;
        *cp = ((c & 0x1Fu) << 6) | (s[1] & 0x3Fu);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if (c == 0xE0 && s[1] < 0xA0)
            return 0; /* overlong */
        if (c == 0xED && s[1] > 0x9F)
            return 0; /* surrogate */
        *cp = ((c & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return 3;
    }
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
        return 0;
    if (c == 0xF0 && s[1] < 0x90)
        return 0; /* overlong */
    if (c == 0xF4 && s[1] > 0x8F)
        return 0; /* above U+10FFFF */
    *cp = ((c & 0x07u) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
    return 4;
}

size_t sl_utf8_valid_prefix_char(const unsigned char *s, size_t n)
{
    uint32_t cp;
    return sl_utf8_decode(s, n, &cp);
}

size_t sl_utf8_whole(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = n;
    while (i > 0 && n - i < 3 && (u[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0 || u[i - 1] < 0xC0)
        return n; /* ends in ASCII, or in bytes that are not a cut character */
    i--;          /* the lead byte */
    return sl_utf8_valid_prefix_char(u + i, n - i) == n - i ? n : i;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define UTF8_SSSE3 1

/* Whole 16-byte blocks checked at once by the method of Keiser and Lemire ("Validating
 * UTF-8 in less than one instruction per byte", 2021): three table lookups on nibbles
 * classify each pair of adjacent bytes, and the bytes two and three after a 3- and 4-byte
 * lead must be continuations. Returns the start of the first block where a fault shows
 * (it may lie up to 3 bytes before it), or the end of the whole blocks: every character
 * that ends before that offset is valid. */
enum {
    TOO_SHORT = 1 << 0,      /* a lead, then no continuation */
    TOO_LONG = 1 << 1,       /* ASCII, then a continuation */
    OVERLONG_3 = 1 << 2,     /* E0 80..9F */
    TOO_LARGE = 1 << 3,      /* F4 90..BF, F5.. */
    SURROGATE = 1 << 4,      /* ED A0..BF */
    OVERLONG_2 = 1 << 5,     /* C0, C1 */
    TOO_LARGE_1000 = 1 << 6, /* F5.. 80..8F */
    OVERLONG_4 = 1 << 6,     /* F0 80..8F */
    TWO_CONTS = 1 << 7,      /* two continuations: right only after a 3- or 4-byte lead */
    CARRY = TOO_SHORT | TOO_LONG | TWO_CONTS,
};

__attribute__((target("ssse3"))) static size_t validate_blocks(const unsigned char *s, size_t n)
{
    const __m128i hi1 = _mm_setr_epi8(
        TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG,
        (char)TWO_CONTS, (char)TWO_CONTS, (char)TWO_CONTS, (char)TWO_CONTS,
        TOO_SHORT | OVERLONG_2, TOO_SHORT, TOO_SHORT | OVERLONG_3 | SURROGATE,
        TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4);
    const __m128i lo1 = _mm_setr_epi8(
        (char)(CARRY | OVERLONG_3 | OVERLONG_2 | OVERLONG_4), (char)(CARRY | OVERLONG_2),
        (char)CARRY, (char)CARRY, (char)(CARRY | TOO_LARGE),
        (char)(CARRY | TOO_LARGE | TOO_LARGE_1000), (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
        (char)(CARRY | TOO_LARGE | TOO_LARGE_1000), (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
        (char)(CARRY | TOO_LARGE | TOO_LARGE_1000), (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
        (char)(CARRY | TOO_LARGE | TOO_LARGE_1000), (char)(CARRY | TOO_LARGE | TOO_LARGE_1000),
        (char)(CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE),
        (char)(CARRY | TOO_LARGE | TOO_LARGE_1000), (char)(CARRY | TOO_LARGE | TOO_LARGE_1000));
    const __m128i hi2 = _mm_setr_epi8(
        TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT,
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4),
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE),
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE),
        (char)(TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE), TOO_SHORT, TOO_SHORT,
        TOO_SHORT, TOO_SHORT);
    const __m128i nib = _mm_set1_epi8(0x0F), zero = _mm_setzero_si128();
    const __m128i third = _mm_set1_epi8((char)(0xE0 - 0x80)), fourth = _mm_set1_epi8((char)(0xF0 - 0x80));
    const __m128i top = _mm_set1_epi8((char)0x80);
    __m128i prev = zero;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m128i in = _mm_loadu_si128((const __m128i *)(s + i));
        if (!_mm_movemask_epi8(_mm_or_si128(in, prev))) {
            prev = in; /* ASCII after ASCII */
            continue;
        }
        __m128i p1 = _mm_alignr_epi8(in, prev, 15), p2 = _mm_alignr_epi8(in, prev, 14),
                p3 = _mm_alignr_epi8(in, prev, 13);
        __m128i sc = _mm_and_si128(
            _mm_and_si128(_mm_shuffle_epi8(hi1, _mm_and_si128(_mm_srli_epi16(p1, 4), nib)),
                          _mm_shuffle_epi8(lo1, _mm_and_si128(p1, nib))),
            _mm_shuffle_epi8(hi2, _mm_and_si128(_mm_srli_epi16(in, 4), nib)));
        __m128i must23 = _mm_and_si128(_mm_or_si128(_mm_subs_epu8(p2, third), _mm_subs_epu8(p3, fourth)), top);
        __m128i err = _mm_xor_si128(must23, sc);
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(err, zero)) != 0xFFFF)
            return i;
        prev = in;
    }
    return i;
}
#endif

size_t sl_utf8_validate(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
#ifdef UTF8_SSSE3
    if (n >= 64 && __builtin_cpu_supports("ssse3")) {
        /* the blocks are whole characters up to 3 bytes before where they stopped: the
         * rest (a fault, or the tail) is found below from the character there */
        size_t ok = validate_blocks(s, n);
        i = ok >= 3 ? ok - 3 : 0;
        for (int k = 0; k < 3 && i > 0 && (s[i] & 0xC0) == 0x80; k++)
            i--;
    }
#endif
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = sl_utf8_valid_prefix_char(s + i, n - i);
        if (!len)
            return i;
        i += len;
    }
    return n;
}

/* Length of the maximal subpart of an ill-formed sequence starting at s (>= 1). */
static size_t maximal_subpart(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 1;
    size_t i = 1;
    if (i < n && s[i] >= lo && s[i] <= hi) {
        i++;
        while (i < need && i < n && (s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

int sl_utf8_repair(struct sl_buf *out, const char *str, size_t n, size_t *replaced)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t count = 0, i = 0;
    int rc = 0;
    while (i < n && !rc) {
        size_t bad = i + sl_utf8_validate(str + i, n - i);
        if (bad > i)
            rc = sl_buf_append(out, str + i, bad - i);
        if (rc || bad >= n)
            break;
        rc = sl_buf_append(out, "\xEF\xBF\xBD", 3);
        count++;
        i = bad + maximal_subpart(s + bad, n - bad);
    }
    if (replaced)
        *replaced = count;
    return rc;
}

size_t sl_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp > 0x10FFFF)
        return 0;
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}
