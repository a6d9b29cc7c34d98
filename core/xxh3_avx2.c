/* XXH3-64 compiled for AVX2, for core/hash.c to use on machines that have it (checked at
 * run time): the same hashes as the system library's, about 1.5x as fast over data read
 * from memory (the compiled-vocabulary cache's checksum over o200k_base's 16 MB: 2.3 ->
 * 1.6 ms on the AMD EPYC VM of docs/benchmarks.md). The library is built for the baseline
 * x86-64 (SSE2); this file inlines xxhash.h's code with the AVX2 kernels selected. */
#include "core/xxh3_avx2.h"

#if SL_XXH3_AVX2
#pragma GCC push_options
#pragma GCC target("avx2")
#define XXH_INLINE_ALL
#define XXH_VECTOR 2 /* XXH_AVX2 */
#include <xxhash.h>

uint64_t sl_xxh3_avx2(const void *data, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(data, n, seed);
}

void *sl_xxh3_avx2_new(uint64_t seed)
{
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset_withSeed(s, seed);
    return s;
}

void sl_xxh3_avx2_update(void *state, const void *data, size_t n)
{
    XXH3_64bits_update(state, data, n);
}

uint64_t sl_xxh3_avx2_final(void *state)
{
    uint64_t v = XXH3_64bits_digest(state);
    XXH3_freeState(state);
    return v;
}
#pragma GCC pop_options
#endif
