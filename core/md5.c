/* MD5 as RFC 1321 specifies it: 64-byte blocks, four rounds of sixteen steps. */
#include "core/md5.h"

#include <stdint.h>
#include <string.h>

/* the per-step left rotations of the four rounds (RFC 1321 section 3.4) */
static const unsigned char rot[4][4] = { { 7, 12, 17, 22 },
                                         { 5, 9, 14, 20 },
                                         { 4, 11, 16, 23 },
                                         { 6, 10, 15, 21 } };

/* K[i] = floor(2^32 * |sin(i + 1)|), the RFC's table T */
static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
    0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
    0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
    0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
    0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
    0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
    0xeb86d391,
};

static void block(uint32_t h[4], const unsigned char *p)
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 |
               (uint32_t)p[4 * i + 3] << 24;
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        int g, r = i / 16;
        if (r == 0) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (r == 1) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) % 16;
        } else if (r == 2) {
            f = b ^ c ^ d;
            g = (3 * i + 5) % 16;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) % 16;
        }
        uint32_t t = a + f + K[i] + x[g];
        int s = rot[r][i % 4];
        a = d;
        d = c;
        c = b;
        b = b + ((t << s) | (t >> (32 - s)));
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
}

void sl_md5(const void *data, size_t n, unsigned char out[16])
{
    uint32_t h[4] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476 };
    const unsigned char *p = data;
    size_t full = n / 64 * 64;
    for (size_t i = 0; i < full; i += 64)
        block(h, p + i);
    /* the tail, a 1 bit, zeros to 56 mod 64 bytes, then the bit length little-endian */
    unsigned char tail[128];
    size_t rest = n - full;
    memset(tail, 0, sizeof(tail));
    if (rest)
        memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    size_t tl = rest + 1 + 8 <= 64 ? 64 : 128;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[tl - 8 + i] = (unsigned char)(bits >> (8 * i));
    for (size_t i = 0; i < tl; i += 64)
        block(h, tail + i);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++)
            out[4 * i + k] = (unsigned char)(h[i] >> (8 * k));
}

void sl_md5_hex(const void *data, size_t n, char out[33])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char d[16];
    sl_md5(data, n, d);
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[32] = 0;
}
