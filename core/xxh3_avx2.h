/* XXH3-64 compiled for AVX2 (core/xxh3_avx2.c), for core/hash.c. Present when
 * SL_XXH3_AVX2 is 1 (x86-64 with GCC); callable only where the CPU has AVX2. */
#ifndef SL_CORE_XXH3_AVX2_H
#define SL_CORE_XXH3_AVX2_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SL_XXH3_AVX2 1
#else
#define SL_XXH3_AVX2 0
#endif

uint64_t sl_xxh3_avx2(const void *data, size_t n, uint64_t seed);
void *sl_xxh3_avx2_new(uint64_t seed); /* a streaming state */
void sl_xxh3_avx2_update(void *state, const void *data, size_t n);
uint64_t sl_xxh3_avx2_final(void *state); /* also frees the state */

#endif
