/* XXH3 wrappers and CRC-32C. XXH3-64 is the system library's, or on a CPU with AVX2 the
 * same function compiled for it (core/xxh3_avx2.c), which gives the same hashes. */
#include "core/hash.h"

#include "core/xxh3_avx2.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#if SL_XXH3_AVX2
/* 1 when the AVX2 build of XXH3-64 is used: decided at the first call (threads that race
 * there decide the same), so that a hasher's state is always of the build that made it. */
static int use_avx2(void)
{
    static int v = -1;
    int u = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (u < 0) {
        __builtin_cpu_init();
        u = __builtin_cpu_supports("avx2") != 0;
        __atomic_store_n(&v, u, __ATOMIC_RELAXED);
    }
    return u;
}
#endif

uint64_t sl_hash64(const void *data, size_t n, uint64_t seed)
{
#if SL_XXH3_AVX2
    if (use_avx2())
        return sl_xxh3_avx2(data, n, seed);
#endif
    return XXH3_64bits_withSeed(data, n, seed);
}

struct sl_hash128 sl_hash128(const void *data, size_t n, uint64_t seed)
{
    XXH128_hash_t h = XXH3_128bits_withSeed(data, n, seed);
    struct sl_hash128 r = { h.low64, h.high64 };
    return r;
}

void sl_hash128_hex(struct sl_hash128 h, char out[33])
{
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.hi, (unsigned long long)h.lo);
}

void sl_hasher_init(struct sl_hasher *h, uint64_t seed)
{
#if SL_XXH3_AVX2
    if (use_avx2()) {
        h->state = sl_xxh3_avx2_new(seed);
        return;
    }
#endif
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset_withSeed(s, seed);
    h->state = s;
}

void sl_hasher_update(struct sl_hasher *h, const void *data, size_t n)
{
#if SL_XXH3_AVX2
    if (use_avx2()) {
        sl_xxh3_avx2_update(h->state, data, n);
        return;
    }
#endif
    XXH3_64bits_update(h->state, data, n);
}

void sl_hasher_str(struct sl_hasher *h, const char *s)
{
    sl_hasher_update(h, s, strlen(s) + 1);
}

void sl_hasher_u64(struct sl_hasher *h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    sl_hasher_update(h, b, 8);
}

uint64_t sl_hasher_final(struct sl_hasher *h)
{
#if SL_XXH3_AVX2
    if (use_avx2()) {
        uint64_t v = sl_xxh3_avx2_final(h->state);
        h->state = NULL;
        return v;
    }
#endif
    uint64_t v = XXH3_64bits_digest(h->state);
    XXH3_freeState(h->state);
    h->state = NULL;
    return v;
}

/* ---- CRC-32C ---------------------------------------------------------------------------- */

static uint32_t crc32c_table[256];

static void crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc32c_table[i] = c;
    }
}

uint32_t sl_crc32c(uint32_t crc, const void *data, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, crc32c_init);
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc32c_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}
