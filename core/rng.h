/* A seeded, splittable pseudo-random generator (xoshiro256** seeded by splitmix64).
 * The state is plain data so it can be saved in checkpoints and restored exactly. */
#ifndef SL_RNG_H
#define SL_RNG_H

#include <stddef.h>
#include <stdint.h>

struct sl_rng {
    uint64_t s[4];
};

/* Seed from a 64-bit seed and a stream number (e.g. the rank): independent streams. */
void sl_rng_seed(struct sl_rng *r, uint64_t seed, uint64_t stream);
uint64_t sl_rng_u64(struct sl_rng *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint64_t sl_rng_below(struct sl_rng *r, uint64_t n);
/* Uniform in [0, 1) with 53 (double) or 24 (float) random bits. */
double sl_rng_double(struct sl_rng *r);
float sl_rng_float(struct sl_rng *r);
/* Standard normal (Box-Muller, no cached second value so the state alone defines it). */
double sl_rng_normal(struct sl_rng *r);
/* Fisher-Yates shuffle of n elements of `size` bytes. */
void sl_rng_shuffle(struct sl_rng *r, void *base, size_t n, size_t size);
/* One step of splitmix64 (also a good 64-bit mixer). */
uint64_t sl_splitmix64(uint64_t *state);

#endif
