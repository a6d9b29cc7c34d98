/* UTF-8 validation, repair and code point encoding (RFC 3629: no surrogates, no overlongs,
 * nothing above U+10FFFF). Hot paths: sl_utf8_validate runs 8 ASCII bytes per step. */
#ifndef SL_UTF8_H
#define SL_UTF8_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

/* Length of the first valid UTF-8 sequence at s (1..4), or 0 if it is invalid or cut. */
size_t sl_utf8_valid_prefix_char(const unsigned char *s, size_t n);

/* Offset of the first invalid byte, or n when all of s is valid UTF-8. */
size_t sl_utf8_validate(const char *s, size_t n);

/* The length of s (n bytes of UTF-8 cut at a byte cap) without a character left
 * incomplete at its end: n, or the start of that last character. */
size_t sl_utf8_whole(const char *s, size_t n);

/* Append s to out with each invalid sequence replaced by U+FFFD (maximal subparts, as
 * WHATWG and Python's errors="replace" do). Returns 0 or SL_ERR_TOOBIG. *replaced (if not
 * NULL) receives the number of replacements. */
int sl_utf8_repair(struct sl_buf *out, const char *s, size_t n, size_t *replaced);

/* Decode one code point from s (n bytes available). Returns its length (1..4) and stores
 * the code point, or returns 0 for an invalid sequence. */
size_t sl_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Encode cp (<= 0x10FFFF, not a surrogate) into out (4 bytes room). Returns its length,
 * or 0 for an invalid code point. */
size_t sl_utf8_encode(uint32_t cp, char *out);

/* The code point at p in text already known to be valid UTF-8 (no checks: the hot loops of
 * the tokenizers), its length in *len. */
static inline uint32_t sl_utf8_decode_valid(const unsigned char *p, size_t *len)
{
    if (p[0] < 0x80) {
        *len = 1;
        return p[0];
    }
    if (p[0] < 0xE0) {
        *len = 2;
        return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if (p[0] < 0xF0) {
        *len = 3;
        return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    *len = 4;
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
           (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
}

#endif
