/* XXH3 wrappers. */
#include "core/hash.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

uint64_t sl_hash64(const void *data, size_t n, uint64_t seed)
{
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
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset_withSeed(s, seed);
    h->state = s;
}

void sl_hasher_update(struct sl_hasher *h, const void *data, size_t n)
{
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
    uint64_t v = XXH3_64bits_digest(h->state);
    XXH3_freeState(h->state);
    h->state = NULL;
    return v;
}
