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

size_t sl_utf8_validate(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
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
