/* Arithmetic modulo the Mersenne prime 2^61 - 1, for polynomial hashes of word sequences and
 * byte strings: an n-gram's hash comes from two prefix hashes in O(1) (the filters' word
 * n-grams, decontamination's task n-grams). Operands are below 2^61 - 1. */
#ifndef SL_POLY61_H
#define SL_POLY61_H

#include <stdint.h>

#define SL_M61       ((UINT64_C(1) << 61) - 1)
#define SL_POLY_BASE UINT64_C(0x1A2B3C4D5E6F7081) /* below SL_M61 */

static inline uint64_t sl_add61(uint64_t a, uint64_t b)
{
    uint64_t r = a + b;
    return r >= SL_M61 ? r - SL_M61 : r;
}

static inline uint64_t sl_sub61(uint64_t a, uint64_t b)
{
    return a >= b ? a - b : a + SL_M61 - b;
}

static inline uint64_t sl_mul61(uint64_t a, uint64_t b)
{
    __uint128_t z = (__uint128_t)a * b;
    uint64_t r = ((uint64_t)z & SL_M61) + (uint64_t)(z >> 61);
    return r >= SL_M61 ? r - SL_M61 : r;
}

static inline uint64_t sl_pow61(uint64_t b, uint64_t e)
{
    uint64_t r = 1;
    for (; e; e >>= 1, b = sl_mul61(b, b))
        if (e & 1)
            r = sl_mul61(r, b);
    return r;
}

#endif
