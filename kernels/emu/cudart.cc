/* The CUDA runtime calls that sluice's kernels and tests make, for the emulation (kernels/emu/):
 * one device whose memory is host memory, streams and events that are already complete when
 * a call returns, the last-error slot, and an H100's properties.
 * Not modelled: asynchrony (every stream is the calling thread; kernels/emu/streams.cc
 * checks that work on two streams touching the same memory is ordered by events or
 * synchronisation), page-locked memory, unified addressing beyond plain pointers (a kernel
 * given a host pointer works here), several devices in one process (each device number is
 * the same host memory), sticky errors, and the real device's memory size (cudaMemGetInfo
 * reports the host's).
 * Host threads: the last error and the current device are per thread, as in the runtime;
 * the table of allocations is shared under a lock (the trainer's data thread calls the
 * runtime while the main thread allocates). Kernels launch from one thread at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <mutex>

#include "kernels/emu/emu.h"

/* ---- errors -------------------------------------------------------------------------------- */

static thread_local cudaError_t last_error = cudaSuccess;

/* Keep e for cudaGetLastError (the first error since the last call, as the runtime does). */
cudaError_t sl_emu_record_error(cudaError_t e)
{
    if (e != cudaSuccess && last_error == cudaSuccess)
        last_error = e;
    return e;
}

extern "C" cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

extern "C" cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

extern "C" const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidDevicePointer:
        return "cudaErrorInvalidDevicePointer";
    default:
        return "cudaErrorUnknown";
    }
}

/* The runtime's own texts for the errors the emulation returns. */
extern "C" const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidDevicePointer:
        return "invalid device pointer";
    default:
        return "unknown error";
    }
}

static cudaError_t err(cudaError_t e)
{
    return sl_emu_record_error(e);
}

/* ---- device memory: host allocations, tracked so that copies and frees are checked ---------- */

#define ALLOC_ALIGN 256 /* cudaMalloc's alignment */

static std::mutex allocs_mu;               /* guards allocs and allocated */
static std::map<uintptr_t, size_t> allocs; /* start -> bytes */
static size_t allocated;

/* 1 when [p, p + n) lies in one cudaMalloc allocation (emu.h) */
int sl_emu_is_device(const void *p, size_t n)
{
    std::lock_guard<std::mutex> lock(allocs_mu);
    auto it = allocs.upper_bound((uintptr_t)p);
    if (it == allocs.begin())
        return 0;
    --it;
    return (uintptr_t)p + n <= it->first + it->second;
}

extern "C" cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (!p)
        return err(cudaErrorInvalidValue);
    void *m = NULL;
    if (posix_memalign(&m, ALLOC_ALIGN, bytes ? bytes : 1))
        return err(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lock(allocs_mu);
    allocs[(uintptr_t)m] = bytes ? bytes : 1;
    allocated += bytes;
    *p = m;
    return cudaSuccess;
}

extern "C" cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    sl_emu_host_sync_all(); /* cudaFree waits for the device */
    {
        std::lock_guard<std::mutex> lock(allocs_mu);
        auto it = allocs.find((uintptr_t)p);
        if (it == allocs.end())
            return err(cudaErrorInvalidValue);
        allocated -= it->second;
        allocs.erase(it);
    }
    free(p);
    return cudaSuccess;
}

extern "C" cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    if (!p)
        return err(cudaErrorInvalidValue);
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : err(cudaErrorMemoryAllocation);
}

extern "C" cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags)
{
    (void)flags;
    return cudaMallocHost(p, bytes);
}

extern "C" cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    const size_t t = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    std::lock_guard<std::mutex> lock(allocs_mu);
    *total = t;
    *free_bytes = t > allocated ? t - allocated : 0;
    return cudaSuccess;
}

/* the device memory a copy or fill touches, for the stream-order check (streams.cc) */
static void note_copy(cudaStream_t st, const char *what, void *dst, const void *src, size_t n)
{
    sl_emu_access acc[2];
    int k = 0;
    if (sl_emu_is_device(dst, n))
        acc[k++] = sl_emu_access{ dst, n, 1 };
    if (src && sl_emu_is_device(src, n))
        acc[k++] = sl_emu_access{ src, n, 0 };
    sl_emu_stream_work(st, what, acc, k);
}

static cudaError_t copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    if (!n)
        return cudaSuccess;
    const int d_dev = sl_emu_is_device(dst, n), s_dev = sl_emu_is_device(src, n);
    int ok = 1;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        ok = d_dev && !s_dev;
        break;
    case cudaMemcpyDeviceToHost:
        ok = s_dev && !d_dev;
        break;
    case cudaMemcpyDeviceToDevice:
        ok = s_dev && d_dev;
        break;
    case cudaMemcpyHostToHost:
        ok = !s_dev && !d_dev;
        break;
    default: /* cudaMemcpyDefault: the pointers say */
        break;
    }
    if (!ok)
        return err(cudaErrorInvalidValue);
    memmove(dst, src, n);
    return cudaSuccess;
}

/* synchronous: ordered on the NULL stream, and the host waits for it */
extern "C" cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    cudaError_t e = copy(dst, src, n, kind);
    if (e == cudaSuccess && n)
        note_copy(0, "cudaMemcpy", dst, src, n);
    return e;
}

extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                                       enum cudaMemcpyKind kind, cudaStream_t st)
{
    cudaError_t e = copy(dst, src, n, kind);
    if (e == cudaSuccess && n)
        note_copy(st, "cudaMemcpyAsync", dst, src, n);
    return e;
}

static cudaError_t fill(void *p, int value, size_t n)
{
    if (n && !sl_emu_is_device(p, n))
        return err(cudaErrorInvalidValue);
    memset(p, value, n);
    return cudaSuccess;
}

extern "C" cudaError_t cudaMemset(void *p, int value, size_t n)
{
    cudaError_t e = fill(p, value, n);
    if (e == cudaSuccess && n)
        note_copy(0, "cudaMemset", p, NULL, n);
    return e;
}

extern "C" cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t st)
{
    cudaError_t e = fill(p, value, n);
    if (e == cudaSuccess && n)
        note_copy(st, "cudaMemsetAsync", p, NULL, n);
    return e;
}

/* ---- the device ------------------------------------------------------------------------------ */

static thread_local int current_device;

/* As many devices as the launcher started ranks on this node, so that each rank of
 * `mpirun -np N` finds one of its own (kernels/emu/nccl.cc: one emulated GPU per process);
 * SL_CUDA_EMU_DEVICES overrides. They share the host's memory: a rank using another's
 * device is not told apart. */
static int device_count(void)
{
    static const char *const vars[] = { "SL_CUDA_EMU_DEVICES", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "MPI_LOCALNRANKS" };
    for (const char *v : vars) {
        const char *s = getenv(v);
        int n = s ? atoi(s) : 0;
        if (n > 0)
            return n;
    }
    return 1;
}

extern "C" cudaError_t cudaGetDeviceCount(int *n)
{
    *n = device_count();
    return cudaSuccess;
}

extern "C" cudaError_t cudaGetDevice(int *d)
{
    *d = current_device;
    return cudaSuccess;
}

extern "C" cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= device_count())
        return err(cudaErrorInvalidDevice);
    current_device = d;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceSynchronize(void)
{
    sl_emu_host_sync_all();
    return cudaSuccess;
}

/* The limits the launch checks use (kernels/emu/runtime.cc), and an H100 SXM's counts. */
extern "C" cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (d < 0 || d >= device_count())
        return err(cudaErrorInvalidDevice);
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "CUDA emulation on the CPU (sluice)");
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    size_t fr, total;
    cudaMemGetInfo(&fr, &total);
    p->totalGlobalMem = total;
    p->sharedMemPerBlock = 49152;
    p->sharedMemPerBlockOptin = 232448;
    p->sharedMemPerMultiprocessor = 233472;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024;
    p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = 65535;
    p->maxGridSize[2] = 65535;
    p->maxThreadsPerMultiProcessor = 2048;
    p->l2CacheSize = 50 << 20;
    p->unifiedAddressing = 1;
    return cudaSuccess;
}

extern "C" cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int d)
{
    if (d < 0 || d >= device_count())
        return err(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        *v = 232448;
        return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlock:
        *v = 49152;
        return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
        *v = 132;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
        *v = 9;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
        *v = 0;
        return cudaSuccess;
    case cudaDevAttrMaxThreadsPerBlock:
        *v = 1024;
        return cudaSuccess;
    case cudaDevAttrWarpSize:
        *v = 32;
        return cudaSuccess;
    default:
        return err(cudaErrorInvalidValue);
    }
}

extern "C" cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

extern "C" cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

/* ---- streams and events: complete on return ------------------------------------------------- */

struct CUstream_st {
    int flags;
};

struct CUevent_st {
    double ms; /* host clock at the last record, in milliseconds */
    int recorded;
};

extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t *st, unsigned int flags)
{
    *st = new CUstream_st{ (int)flags };
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamCreate(cudaStream_t *st)
{
    return cudaStreamCreateWithFlags(st, 0);
}

extern "C" cudaError_t cudaStreamDestroy(cudaStream_t st)
{
    sl_emu_stream_forget(st, NULL);
    delete st;
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t st)
{
    sl_emu_host_sync_stream(st);
    return cudaSuccess;
}

/* done: the host has seen it */
extern "C" cudaError_t cudaStreamQuery(cudaStream_t st)
{
    sl_emu_host_sync_stream(st);
    return cudaSuccess;
}

extern "C" cudaError_t cudaStreamWaitEvent(cudaStream_t st, cudaEvent_t ev, unsigned int flags)
{
    (void)flags;
    if (!ev)
        return err(cudaErrorInvalidResourceHandle);
    sl_emu_stream_wait(st, ev);
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t *ev, unsigned int flags)
{
    (void)flags;
    *ev = new CUevent_st{ 0.0, 0 };
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventCreate(cudaEvent_t *ev)
{
    return cudaEventCreateWithFlags(ev, 0);
}

extern "C" cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
    sl_emu_stream_forget(NULL, ev);
    delete ev;
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t st)
{
    sl_emu_stream_record(ev, st);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ev->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    ev->recorded = 1;
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    sl_emu_host_sync_event(ev);
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    sl_emu_host_sync_event(ev);
    return cudaSuccess;
}

extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    if (!a->recorded || !b->recorded)
        return err(cudaErrorInvalidResourceHandle);
    *ms = (float)(b->ms - a->ms);
    return cudaSuccess;
}
