/* Helpers shared by the GPU test and benchmark programs: host bf16 conversion, a seeded
 * random generator, device allocations freed in one call, downloads, and comparison with a
 * double-precision reference. C only, through the kernels' C interfaces.
 */
#ifndef SL_TESTS_GPU_COMMON_H
#define SL_TESTS_GPU_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_common.h"
#include "kernels/kernels.h"

/* ---- bf16 on the host (round to nearest even, like __float2bfloat16_rn) --------------- */

static inline uint16_t f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return (uint16_t)((u >> 16) | ((u & 0xffffu) ? 0x40u : 0u));
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf2f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float rbf(float f)
{
    return bf2f(f2bf(f));
}

/* ---- random numbers (splitmix64) ------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static inline uint64_t rnd_u64(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double rnd_uniform(void) /* [0, 1) */
{
    return (double)(rnd_u64() >> 11) * (1.0 / 9007199254740992.0);
}

static inline float rnd_normal(void)
{
    double u1 = rnd_uniform(), u2 = rnd_uniform();
    if (u1 < 1e-300)
        u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* ---- allocations released together ----------------------------------------------------- */

#define MAX_TRACKED 4096
static void *g_dev[MAX_TRACKED], *g_host[MAX_TRACKED];
static int g_ndev, g_nhost;

static inline void *dalloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 16));
    if (g_ndev < MAX_TRACKED)
        g_dev[g_ndev++] = p;
    return p;
}

static inline void *halloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 16);
    if (!p) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    if (g_nhost < MAX_TRACKED)
        g_host[g_nhost++] = p;
    return p;
}

static inline void free_all(void)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < g_ndev; i++)
        CUDA_CHECK(cudaFree(g_dev[i]));
    for (int i = 0; i < g_nhost; i++)
        free(g_host[i]);
    g_ndev = g_nhost = 0;
}

/* Poison: every byte 0xff, a NaN in bf16 and fp32, so an unwritten output fails the check. */
static inline void poison(void *d, size_t bytes)
{
    CUDA_CHECK(cudaMemset(d, 0xff, bytes));
}

static inline void *to_dev(const void *h, size_t bytes)
{
    void *d = dalloc(bytes);
    CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

static inline void upload(void *d, const void *h, size_t bytes)
{
    CUDA_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
}

/* Random bf16 values (normal * scale), as bits. */
static inline uint16_t *rand_bf16(size_t n, float scale)
{
    uint16_t *h = (uint16_t *)halloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = f2bf(rnd_normal() * scale);
    return h;
}

static inline float *rand_f32(size_t n, float scale)
{
    float *h = (float *)halloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = rnd_normal() * scale;
    return h;
}

/* Device bf16 -> host float, device fp32 -> host float. */
static inline float *get_bf16(const void *d, size_t n)
{
    uint16_t *t = (uint16_t *)halloc(n * 2);
    float *f = (float *)halloc(n * 4);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(t, d, n * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        f[i] = bf2f(t[i]);
    return f;
}

static inline float *get_f32(const void *d, size_t n)
{
    float *f = (float *)halloc(n * 4);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(f, d, n * 4, cudaMemcpyDeviceToHost));
    return f;
}

static inline double *dvec(size_t n)
{
    return (double *)halloc(n * sizeof(double));
}

#endif
