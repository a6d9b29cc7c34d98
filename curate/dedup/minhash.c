/* MinHash signatures: a kernel per permutation family. Permutations are processed in
 * blocks of 16 whose parameters and running minima stay in registers while all shingles
 * stream past; the multiply family's kernel is compiled for AVX-512, AVX2 and plain
 * x86-64 and picked at run time (SLUICE_MINHASH_ISA=plain|avx2 forces one). */
#include "curate/dedup/minhash.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MERSENNE_P ((1ull << 61) - 1)
#define BLOCK 16

#if defined(__x86_64__) && defined(__GNUC__) && !defined(SL_NO_SIMD_DISPATCH)
#define HAVE_DISPATCH 1
#endif

int minhash_init(struct minhash *mh, unsigned k, uint64_t seed, enum dd_mh_family family)
{
    memset(mh, 0, sizeof(*mh));
    if (k == 0 || k > DD_MH_MAX_PERM)
        return sl_err_set(SL_ERR_USAGE, "%u permutations: must be 1..%d", k, DD_MH_MAX_PERM);
    mh->k = k;
    mh->kpad = (k + 2 * BLOCK - 1) / (2 * BLOCK) * (2 * BLOCK); /* a multiple of 32 */
    mh->family = family;
    mh->a = sl_xmalloc(mh->kpad * sizeof(uint64_t));
    mh->b = sl_xmalloc(mh->kpad * sizeof(uint64_t));
    struct sl_rng r;
    sl_rng_seed(&r, seed, 0x6d696e68617368ull /* "minhash" */);
    for (unsigned i = 0; i < mh->kpad; i++) {
        if (family == DD_MH_MERSENNE) {
            mh->a[i] = 1 + sl_rng_below(&r, MERSENNE_P - 1);
            mh->b[i] = sl_rng_below(&r, MERSENNE_P);
        } else if (family == DD_MH_MULTIPLY32) {
            mh->a[i] = (sl_rng_u64(&r) & 0xffffffffu) | 1;
            mh->b[i] = sl_rng_u64(&r) & 0xffffffffu;
        } else {
            mh->a[i] = sl_rng_u64(&r) | 1;
            mh->b[i] = sl_rng_u64(&r);
        }
    }
    return 0;
}

void minhash_release(struct minhash *mh)
{
    free(mh->a);
    free(mh->b);
    memset(mh, 0, sizeof(*mh));
}

const char *minhash_family_name(enum dd_mh_family f)
{
    return f == DD_MH_MERSENNE ? "mersenne" : f == DD_MH_MULTIPLY32 ? "multiply32" : "multiply";
}

int minhash_family_parse(const char *s, enum dd_mh_family *f)
{
    if (!strcmp(s, "multiply"))
        *f = DD_MH_MULTIPLY;
    else if (!strcmp(s, "mersenne"))
        *f = DD_MH_MERSENNE;
    else if (!strcmp(s, "multiply32"))
        *f = DD_MH_MULTIPLY32;
    else
        return sl_err_set(SL_ERR_USAGE,
                          "unknown hash family '%s'\nhint: use multiply, multiply32 or mersenne", s);
    return 0;
}

/* The multiply kernel, written once and compiled for several instruction sets: the
 * compiler vectorises the 16-lane inner loop (vpmullq + vpminuq with AVX-512). */
#define SIGN_MULTIPLY_BODY                                                                 \
    for (unsigned i0 = 0; i0 < kpad; i0 += BLOCK) {                                        \
        uint64_t ma[BLOCK], mb[BLOCK], m[BLOCK];                                           \
        for (int j = 0; j < BLOCK; j++) {                                                  \
            ma[j] = a[i0 + j];                                                             \
            mb[j] = b[i0 + j];                                                             \
            m[j] = UINT64_MAX;                                                             \
        }                                                                                  \
        for (size_t s = 0; s < n; s++) {                                                   \
            uint64_t x = h[s];                                                             \
            for (int j = 0; j < BLOCK; j++) {                                              \
                uint64_t v = ma[j] * x + mb[j];                                            \
                m[j] = v < m[j] ? v : m[j];                                                \
            }                                                                              \
        }                                                                                  \
        for (int j = 0; j < BLOCK; j++)                                                    \
            sig[i0 + j] = m[j];                                                            \
    }

/* The 32-bit multiply kernel: 32 lanes of u32 per block (two AVX-512 registers). */
#define BLOCK32 32
#define SIGN_MULTIPLY32_BODY                                                               \
    for (unsigned i0 = 0; i0 < kpad; i0 += BLOCK32) {                                      \
        uint32_t ma[BLOCK32], mb[BLOCK32], m[BLOCK32];                                     \
        for (int j = 0; j < BLOCK32; j++) {                                                \
            ma[j] = (uint32_t)a[i0 + j];                                                   \
            mb[j] = (uint32_t)b[i0 + j];                                                   \
            m[j] = UINT32_MAX;                                                             \
        }                                                                                  \
        for (size_t s = 0; s < n; s++) {                                                   \
            uint32_t x = (uint32_t)(h[s] ^ (h[s] >> 32));                                  \
            for (int j = 0; j < BLOCK32; j++) {                                            \
                uint32_t v = ma[j] * x + mb[j];                                            \
                m[j] = v < m[j] ? v : m[j];                                                \
            }                                                                              \
        }                                                                                  \
        for (int j = 0; j < BLOCK32; j++)                                                  \
            sig[i0 + j] = n ? m[j] : UINT64_MAX;                                           \
    }

typedef void (*sign_fn)(const uint64_t *restrict a, const uint64_t *restrict b, unsigned kpad,
                        const uint64_t *restrict h, size_t n, uint64_t *restrict sig);

static void sign_multiply_plain(const uint64_t *restrict a, const uint64_t *restrict b,
                                unsigned kpad, const uint64_t *restrict h, size_t n,
                                uint64_t *restrict sig)
{
    SIGN_MULTIPLY_BODY
}

#ifdef HAVE_DISPATCH
__attribute__((target("avx2"))) static void
sign_multiply_avx2(const uint64_t *restrict a, const uint64_t *restrict b, unsigned kpad,
                   const uint64_t *restrict h, size_t n, uint64_t *restrict sig)
{
    SIGN_MULTIPLY_BODY
}

__attribute__((target("avx512f,avx512dq,avx512vl"))) static void
sign_multiply_avx512(const uint64_t *restrict a, const uint64_t *restrict b, unsigned kpad,
                     const uint64_t *restrict h, size_t n, uint64_t *restrict sig)
{
    SIGN_MULTIPLY_BODY
}
#endif

static void sign_multiply32_plain(const uint64_t *restrict a, const uint64_t *restrict b,
                                  unsigned kpad, const uint64_t *restrict h, size_t n,
                                  uint64_t *restrict sig)
{
    SIGN_MULTIPLY32_BODY
}

#ifdef HAVE_DISPATCH
__attribute__((target("avx2"))) static void
sign_multiply32_avx2(const uint64_t *restrict a, const uint64_t *restrict b, unsigned kpad,
                     const uint64_t *restrict h, size_t n, uint64_t *restrict sig)
{
    SIGN_MULTIPLY32_BODY
}

__attribute__((target("avx512f,avx512dq,avx512vl"))) static void
sign_multiply32_avx512(const uint64_t *restrict a, const uint64_t *restrict b, unsigned kpad,
                       const uint64_t *restrict h, size_t n, uint64_t *restrict sig)
{
    SIGN_MULTIPLY32_BODY
}
#endif

static sign_fn pick_multiply32(void)
{
    static sign_fn fn;
    if (fn)
        return fn;
    sign_fn f = sign_multiply32_plain;
#ifdef HAVE_DISPATCH
    __builtin_cpu_init();
    const char *force = getenv("SLUICE_MINHASH_ISA");
    if (force && !strcmp(force, "plain"))
        f = sign_multiply32_plain;
    else if (!(force && !strcmp(force, "avx2")) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        f = sign_multiply32_avx512;
    else if (__builtin_cpu_supports("avx2"))
        f = sign_multiply32_avx2;
#endif
    fn = f;
    return fn;
}

static sign_fn pick_multiply(void)
{
    static sign_fn fn;
    if (fn)
        return fn;
    sign_fn f = sign_multiply_plain;
#ifdef HAVE_DISPATCH
    __builtin_cpu_init();
    const char *force = getenv("SLUICE_MINHASH_ISA"); /* plain | avx2 (benchmarks, tests) */
    if (force && !strcmp(force, "plain"))
        f = sign_multiply_plain;
    else if (!(force && !strcmp(force, "avx2")) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        f = sign_multiply_avx512;
    else if (__builtin_cpu_supports("avx2"))
        f = sign_multiply_avx2;
#endif
    fn = f;
    return fn;
}

static inline uint64_t mod_mersenne(unsigned __int128 x)
{
    uint64_t lo = (uint64_t)x & MERSENNE_P;
    uint64_t mid = (uint64_t)(x >> 61);
    uint64_t r = lo + (mid & MERSENNE_P) + (mid >> 61);
    r = (r & MERSENNE_P) + (r >> 61);
    return r >= MERSENNE_P ? r - MERSENNE_P : r;
}

static void sign_mersenne(const uint64_t *restrict a, const uint64_t *restrict b, unsigned kpad,
                          const uint64_t *restrict h, size_t n, uint64_t *restrict sig)
{
    for (unsigned i0 = 0; i0 < kpad; i0 += BLOCK) {
        uint64_t m[BLOCK];
        for (int j = 0; j < BLOCK; j++)
            m[j] = UINT64_MAX;
        for (size_t s = 0; s < n; s++) {
            uint64_t x = h[s];
            for (int j = 0; j < BLOCK; j++) {
                uint64_t v = mod_mersenne((unsigned __int128)a[i0 + j] * x + b[i0 + j]);
                m[j] = v < m[j] ? v : m[j];
            }
        }
        for (int j = 0; j < BLOCK; j++)
            sig[i0 + j] = m[j];
    }
}

void minhash_sign(const struct minhash *mh, const uint64_t *h, size_t n, uint64_t *sig)
{
    uint64_t tmp[DD_MH_MAX_PERM + 2 * BLOCK];
    if (mh->family == DD_MH_MERSENNE)
        sign_mersenne(mh->a, mh->b, mh->kpad, h, n, tmp);
    else if (mh->family == DD_MH_MULTIPLY32)
        pick_multiply32()(mh->a, mh->b, mh->kpad, h, n, tmp);
    else
        pick_multiply()(mh->a, mh->b, mh->kpad, h, n, tmp);
    memcpy(sig, tmp, mh->k * sizeof(uint64_t));
}

void minhash_band_keys(const uint64_t *sig, unsigned bands, unsigned rows, uint64_t seed,
                       uint64_t *key)
{
    for (unsigned i = 0; i < bands; i++)
        key[i] = sl_hash64(sig + (size_t)i * rows, rows * sizeof(uint64_t),
                           seed ^ (0x9E3779B97F4A7C15ull * (i + 1)));
}

double minhash_candidate_prob(double s, unsigned bands, unsigned rows)
{
    return 1.0 - pow(1.0 - pow(s, rows), bands);
}
