/* xoshiro256** with splitmix64 seeding. */
#include "core/rng.h"

#include <math.h>
#include <string.h>

uint64_t sl_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void sl_rng_seed(struct sl_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t st = seed ^ (stream * 0xD1B54A32D192ED03ull);
    /* mix the stream in twice so nearby (seed, stream) pairs diverge */
    st = sl_splitmix64(&st) ^ stream;
    for (int i = 0; i < 4; i++)
        r->s[i] = sl_splitmix64(&st);
    if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
        r->s[0] = 1;
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t sl_rng_u64(struct sl_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t sl_rng_below(struct sl_rng *r, uint64_t n)
{
    /* Lemire's multiply-shift with rejection */
    uint64_t x = sl_rng_u64(r);
    __uint128_t m = (__uint128_t)x * n;
    uint64_t l = (uint64_t)m;
    if (l < n) {
        uint64_t t = -n % n;
        while (l < t) {
            x = sl_rng_u64(r);
            m = (__uint128_t)x * n;
            l = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double sl_rng_double(struct sl_rng *r)
{
    return (double)(sl_rng_u64(r) >> 11) * 0x1.0p-53;
}

float sl_rng_float(struct sl_rng *r)
{
    return (float)(sl_rng_u64(r) >> 40) * 0x1.0p-24f;
}

double sl_rng_normal(struct sl_rng *r)
{
    double u1 = sl_rng_double(r);
    double u2 = sl_rng_double(r);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void sl_rng_shuffle(struct sl_rng *r, void *base, size_t n, size_t size)
{
    unsigned char *b = base, tmp[256];
    if (n < 2)
        return;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)sl_rng_below(r, i + 1);
        if (i == j)
            continue;
        for (size_t off = 0; off < size; off += sizeof(tmp)) {
            size_t c = size - off < sizeof(tmp) ? size - off : sizeof(tmp);
            memcpy(tmp, b + i * size + off, c);
            memcpy(b + i * size + off, b + j * size + off, c);
            memcpy(b + j * size + off, tmp, c);
        }
    }
}
