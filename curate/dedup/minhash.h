/* struct minhash: K MinHash permutations over 64-bit shingle hashes, and LSH band keys.
 *
 * Two families of permutations, chosen at init:
 *   DD_MH_MERSENNE  v = (a*h + b) mod (2^61 - 1), a in [1, p), b in [0, p) — the family of
 *                   datasketch and datatrove (values < 2^61);
 *   DD_MH_MULTIPLY  v = (a*h + b) mod 2^64 with a odd — a bijection of the 64-bit hash space
 *                   (multiply-add; Dietzfelbinger's multiply-shift keeps its top bits), which
 *                   vectorises (8 lanes with AVX-512, emulated with AVX2). The default.
 *   DD_MH_MULTIPLY32 v = (a*g + b) mod 2^32 with g = h ^ (h >> 32) and a odd: 32-bit values,
 *                   as datasketch and NeMo Curator keep; 16 lanes per AVX-512 instruction.
 * The parameters come from a seeded xoshiro256** (core/rng.h), so a seed fixes them all.
 * A signature is K uint64 minima; a text without shingles has every value UINT64_MAX.
 */
#ifndef SL_DEDUP_MINHASH_H
#define SL_DEDUP_MINHASH_H

#include <stddef.h>
#include <stdint.h>

enum dd_mh_family { DD_MH_MULTIPLY = 0, DD_MH_MERSENNE = 1, DD_MH_MULTIPLY32 = 2 };

#define DD_MH_MAX_PERM 1024

struct minhash {
    unsigned k;    /* permutations used */
    unsigned kpad; /* k rounded up to a multiple of 32 */
    enum dd_mh_family family;
    uint64_t *a, *b; /* kpad parameters each */
};

/* 0, or SL_ERR_USAGE when k is 0 or above DD_MH_MAX_PERM. minhash_release frees. */
int minhash_init(struct minhash *mh, unsigned k, uint64_t seed, enum dd_mh_family family);
void minhash_release(struct minhash *mh);
/* "multiply" / "mersenne" / "multiply32" and back (0 or SL_ERR_USAGE). */
const char *minhash_family_name(enum dd_mh_family f);
int minhash_family_parse(const char *s, enum dd_mh_family *f);

/* The signature of n shingle hashes into sig[k]. */
void minhash_sign(const struct minhash *mh, const uint64_t *h, size_t n, uint64_t *sig);

/* Band keys: key[i] = XXH3-64 of rows values sig[i*rows .. (i+1)*rows) (little endian), seeded
 * by band index and `seed`. */
void minhash_band_keys(const uint64_t *sig, unsigned bands, unsigned rows, uint64_t seed,
                       uint64_t *key);

/* Probability that LSH with `bands` x `rows` makes a pair of Jaccard similarity s a
 * candidate: 1 - (1 - s^rows)^bands. */
double minhash_candidate_prob(double s, unsigned bands, unsigned rows);

#endif
