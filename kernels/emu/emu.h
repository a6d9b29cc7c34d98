/* CUDA kernels on the CPU: what a file of kernels/ (.cu) needs from nvcc when g++ compiles it
 * instead. The build force-includes this header (-include) into each kernel source after
 * kernels/emu/rewrite.pl has made three mechanical edits:
 *   k<<<grid, block, smem, st>>>(args)   ->  sl_emu_launch(sl_emu_kernel_name<k>(), k, grid,
 * ...)(args) extern __shared__ T name[];          ->  T *name = (T *)sl_emu_dynamic_smem();
 *   __shared__ T a[N];                   ->  the same, then SL_EMU_SHARED_REGISTER(a);
 * The CUDA headers' own host code gives dim3, int4, float2 and __nv_bfloat16 arithmetic.
 *
 * A launch runs the grid as the hardware defines it (kernels/emu/runtime.cc): the blocks one
 * after another; within a block every thread is a fiber on this OS thread with its own stack,
 * switched only at __syncthreads (a barrier of the block's live threads) and at the warp
 * exchanges: __shfl_*_sync, and mma.sync.m16n8k16 / ldmatrix through the two functions the
 * kernels call instead of their inline PTX (sl_emu_mma_m16n8k16_bf16,
 * sl_emu_ldmatrix_x2_trans), which gather the operands of the warp's 32 lanes and hand each
 * lane its fragment as the PTX ISA lays it out. __shared__ variables are static storage,
 * overwritten with 0xff bytes (NaN) at the start of each block, like the dynamic part.
 * Errors that a GPU turns into a hang, garbage or a launch failure stop the process with the
 * kernel's name (fatal: cuda-emu ...): a barrier that some live thread never reaches, a
 * shuffle naming a lane that exited or is not in its mask, lanes of one warp at different
 * exchanges; launch checks as the driver makes them set cudaGetLastError.
 *
 * By default blocks run in order of their linear index and, between two synchronisation
 * points, threads in order of theirs. SL_CUDA_EMU_STRICT=reversed runs both in reversed
 * order, =shuffled in a random order (the threads' redrawn at every scheduling pass, seeded
 * by SL_CUDA_EMU_SEED, default 1), =1 alternates the two launch by launch; a result that
 * depends on an order the hardware leaves open then shows up as a difference.
 */
#ifndef SL_KERNELS_EMU_H
#define SL_KERNELS_EMU_H

#ifndef SL_CUDA_EMU
#define SL_CUDA_EMU 1
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <type_traits>

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <vector_functions.h>
#include <vector_types.h>

/* ---- the qualifiers: functions are plain C++; __shared__ is per-block static storage --- */
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __launch_bounds__(...)
/* blocks run one at a time, so static storage is the block's; rewrite.pl follows each
 * declaration with SL_EMU_SHARED_REGISTER, so that the runtime refills it with 0xff bytes at
 * every block start of the kernel that declares it */
#define __shared__ static
#define SL_EMU_SHARED_REGISTER(v)                                                                  \
    [[maybe_unused]] static const bool sl_emu_reg_##v = sl_emu_shared_register(&v, sizeof(v))

using std::max;
using std::min;

static constexpr int warpSize = 32;

/* ---- the runtime (kernels/emu/runtime.cc) ----------------------------------------------- */

/* The index of the running thread and its block; set by the scheduler at every switch. */
extern uint3 sl_emu_threadIdx, sl_emu_blockIdx;
extern dim3 sl_emu_blockDim, sl_emu_gridDim;
extern int sl_emu_lane; /* the running thread's lane: its linear index in the block mod 32 */
#define threadIdx sl_emu_threadIdx
#define blockIdx  sl_emu_blockIdx
#define blockDim  sl_emu_blockDim
#define gridDim   sl_emu_gridDim

/* The launch: checks the configuration as the driver does (an error is left for
 * cudaGetLastError and nothing runs), then runs body(ctx) as every thread of every block.
 * `key` identifies the kernel for cudaFuncSetAttribute; `name` is how messages call it. */
void sl_emu_run_grid(const char *name, const void *key, dim3 grid, dim3 block, size_t smem,
                     cudaStream_t st, void (*body)(void *), void *ctx);
void sl_emu_syncthreads(void);
/* A shuffle: this lane offers `v` and gets the value offered by lane `src` of its warp (its
 * own when src < 0). `what` names the intrinsic for messages. */
uint64_t sl_emu_shfl(const char *what, unsigned mask, uint64_t v, int src);
void sl_emu_mma_m16n8k16_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
void sl_emu_ldmatrix_x2_trans(uint32_t &r0, uint32_t &r1, const void *row);
/* Note `bytes` at p as static shared memory of the running kernel (and fill it with 0xff). */
bool sl_emu_shared_register(void *p, size_t bytes);
/* The dynamic shared memory of the running block (as many bytes as the launch asked for). */
void *sl_emu_dynamic_smem(void);
/* 1 when [p, p + n) lies in one cudaMalloc allocation (kernels/emu/cudart.cc): the library
 * stand-ins refuse host pointers, as the real libraries' kernels would fault on them. */
int sl_emu_is_device(const void *p, size_t n);

/* ---- the order of work between streams (kernels/emu/streams.cc) ------------------------ */

/* Memory a piece of work touches: `bytes` from p (0: only where p points). */
struct sl_emu_access {
    const void *p;
    size_t bytes;
    int write;
};
/* Work enqueued on st touching acc[0..n): stops the program when an earlier access from
 * another stream to the same memory, one of the two a write, is not ordered before it. */
void sl_emu_stream_work(cudaStream_t st, const char *what, const sl_emu_access *acc, int n);
void sl_emu_stream_record(cudaEvent_t ev, cudaStream_t st); /* cudaEventRecord */
void sl_emu_stream_wait(cudaStream_t st, cudaEvent_t ev);   /* cudaStreamWaitEvent */
void sl_emu_host_sync_stream(cudaStream_t st);              /* cudaStreamSynchronize */
void sl_emu_host_sync_event(cudaEvent_t ev);                /* cudaEventSynchronize */
void sl_emu_host_sync_all(void); /* cudaDeviceSynchronize, synchronous copies, frees */
void sl_emu_stream_forget(cudaStream_t st, cudaEvent_t ev); /* destroyed (either may be 0) */

/* a kernel argument that is a pointer: read through a pointer to const, else written */
template <class A> static inline void sl_emu_note_arg(sl_emu_access *acc, int &n, const A &a)
{
    if constexpr (std::is_pointer_v<A>) {
        if (a)
            acc[n++] =
                sl_emu_access{ (const void *)a, 0, !std::is_const_v<std::remove_pointer_t<A>> };
    }
}

template <class... P> struct sl_emu_launcher {
    const char *name;
    void (*fn)(P...);
    dim3 grid, block;
    size_t smem;
    cudaStream_t st;

    template <class... A> void operator()(A &&...args) const
    {
        void (*f)(P...) = fn;
        sl_emu_access acc[sizeof...(P) + 1];
        int n = 0;
        (sl_emu_note_arg<P>(acc, n, args), ...);
        sl_emu_stream_work(st, name, acc, n);
        /* each thread calls the kernel with its own copies of the arguments */
        auto body = [&]() { f(args...); };
        sl_emu_run_grid(
            name, reinterpret_cast<const void *>(fn), grid, block, smem, st,
            [](void *c) { (*static_cast<decltype(body) *>(c))(); }, &body);
    }
};

/* The kernel's name with its template arguments ("attn_fwd_kernel<64>"), from how g++ spells
 * this function's own template argument. */
template <auto F> const char *sl_emu_kernel_name(void)
{
    static char name[160];
    if (!name[0]) {
        const char *p = strstr(__PRETTY_FUNCTION__, "F = ");
        p = p ? p + 4 : __PRETTY_FUNCTION__;
        size_t n = strlen(p);
        if (n && p[n - 1] == ']')
            n--;
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, p, n);
    }
    return name;
}

template <class... P>
sl_emu_launcher<P...> sl_emu_launch(const char *name, void (*fn)(P...), dim3 grid, dim3 block,
                                    size_t smem = 0, cudaStream_t st = 0)
{
    return sl_emu_launcher<P...>{ name, fn, grid, block, smem, st };
}

/* nvcc's cuda_runtime.h takes the kernel itself; the C API a `const void *` */
template <class... P>
cudaError_t cudaFuncSetAttribute(void (*fn)(P...), enum cudaFuncAttribute attr, int value)
{
    return cudaFuncSetAttribute(reinterpret_cast<const void *>(fn), attr, value);
}

/* ---- device intrinsics ------------------------------------------------------------------- */

static inline void __syncthreads(void)
{
    sl_emu_syncthreads();
}

template <class T> static inline uint64_t sl_emu_bits(T v)
{
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof(T));
    return u;
}

template <class T> static inline T sl_emu_from_bits(uint64_t u)
{
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

/* Shuffles within segments of `width` lanes (a power of two <= 32), as the CUDA guide
 * defines them: a source outside the caller's segment gives the caller its own value, but
 * for __shfl_xor_sync, which may read lanes of an earlier segment. */
template <class T> static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    const int lane = sl_emu_lane;
    const int base = lane & ~(width - 1);
    return sl_emu_from_bits<T>(
        sl_emu_shfl("__shfl_sync", mask, sl_emu_bits(v), base + (src & (width - 1))));
}

template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
    const int lane = sl_emu_lane;
    const int base = lane & ~(width - 1), src = lane ^ m;
    /* an earlier segment may be read, a later one gives the caller's own value */
    return sl_emu_from_bits<T>(
        sl_emu_shfl("__shfl_xor_sync", mask, sl_emu_bits(v), src < base + width ? src : -1));
}

template <class T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    const int lane = sl_emu_lane;
    const int base = lane & ~(width - 1), src = lane + (int)d;
    return sl_emu_from_bits<T>(
        sl_emu_shfl("__shfl_down_sync", mask, sl_emu_bits(v), src < base + width ? src : -1));
}

template <class T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32)
{
    const int lane = sl_emu_lane;
    const int base = lane & ~(width - 1), src = lane - (int)d;
    return sl_emu_from_bits<T>(
        sl_emu_shfl("__shfl_up_sync", mask, sl_emu_bits(v), src >= base ? src : -1));
}

/* cache hints: plain loads here */
template <class T> static inline T __ldcs(const T *p)
{
    return *p;
}

template <class T> static inline T __ldg(const T *p)
{
    return *p;
}

/* 1/sqrt(x), correctly rounded here (the GPU's approximation is within 2 ulp) */
static inline float rsqrtf(float x)
{
    return 1.0f / sqrtf(x);
}

static inline float __int_as_float(int i)
{
    return sl_emu_from_bits<float>((uint32_t)i);
}

static inline float __uint_as_float(unsigned int i)
{
    return sl_emu_from_bits<float>(i);
}

static inline unsigned int __float_as_uint(float f)
{
    return (unsigned int)sl_emu_bits(f);
}

static inline int __float_as_int(float f)
{
    return (int)(uint32_t)sl_emu_bits(f);
}

#endif
