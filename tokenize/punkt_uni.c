/* The character classes and lower case of NLTK's Punkt (see tokenize/punkt_uni.h), from
 * the generated table. */
#include "tokenize/punkt_uni.h"

#include "core/buf.h"
#include "core/utf8.h"

#include <stdint.h>

#include "tokenize/punkt_uni_table.h"

#define SIGMA       0x3A3u /* GREEK CAPITAL LETTER SIGMA */
#define SIGMA_FINAL 0x3C2u
#define SIGMA_SMALL 0x3C3u

size_t punkt_uni_next_slow(const char *s, size_t n, uint32_t *cp)
{
    size_t k = sl_utf8_decode((const unsigned char *)s, n, cp);
    if (k == 0) {
        *cp = PUNKT_UNI_INVALID;
        return 1;
    }
    return k;
}

size_t punkt_uni_prev(const char *s, size_t n)
{
    /* a lead byte up to 3 bytes back whose sequence ends exactly at n */
    for (size_t k = 1; k <= 4 && k <= n; k++) {
        unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xC0) != 0x80) {
            uint32_t cp;
            return punkt_uni_next(s + n - k, k, &cp) == k ? n - k : n - 1;
        }
    }
    return n - 1;
}

size_t punkt_uni_count(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; c++) {
        uint32_t cp;
        i += punkt_uni_next(s + i, n - i, &cp);
    }
    return c;
}

/* The row of cp in the lower-case table, or NULL. */
static const uint32_t *lower_row(uint32_t cp)
{
    size_t lo = 0, hi = PUNKT_UNI_NLOWER;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (punkt_uni_lowers[mid][0] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < PUNKT_UNI_NLOWER && punkt_uni_lowers[lo][0] == cp ? punkt_uni_lowers[lo] : NULL;
}

/* Python's handle_capital_sigma: the sigma at s[i] (of s[0..n)) is final when a cased
 * character precedes it and none follows, case-ignorable characters skipped. */
static int final_sigma(const char *s, size_t n, size_t i)
{
    size_t j = i;
    unsigned f = 0;
    int found = 0;
    while (j > 0) {
        j = punkt_uni_prev(s, j);
        size_t len;
        f = punkt_uni_at(s + j, n - j, &len);
        if (!(f & PK_CI)) {
            found = 1;
            break;
        }
    }
    if (!found || !(f & PK_CASED))
        return 0;
    size_t len;
    punkt_uni_at(s + i, n - i, &len);
    for (j = i + len; j < n; j += len) {
        f = punkt_uni_at(s + j, n - j, &len);
        if (!(f & PK_CI))
            return !(f & PK_CASED);
    }
    return 1;
}

void punkt_uni_lower(const char *s, size_t n, struct sl_buf *out)
{
    sl_buf_reserve(out, n);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            sl_buf_putc(out, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c));
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = punkt_uni_next_slow(s + i, n - i, &cp);
        char enc[4];
        if (cp == SIGMA) {
            sl_buf_append(out, enc,
                          sl_utf8_encode(final_sigma(s, n, i) ? SIGMA_FINAL : SIGMA_SMALL, enc));
        } else {
            const uint32_t *row = cp == PUNKT_UNI_INVALID ? NULL : lower_row(cp);
            if (!row)
                sl_buf_append(out, s + i, len);
            for (int k = 1; row && k < 4 && row[k]; k++)
                sl_buf_append(out, enc, sl_utf8_encode(row[k], enc));
        }
        i += len;
    }
}

const char *punkt_uni_source(void)
{
    return PUNKT_UNI_SOURCE;
}
