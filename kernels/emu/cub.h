/* The CUB device algorithms kernels/embedding.cu calls, for the emulation (kernels/emu/):
 * DeviceRadixSort::SortPairs (stable, over the bits [begin_bit, end_bit) of integer keys,
 * signed keys with their sign bit inverted, as CUB orders them), DeviceRunLengthEncode::Encode
 * and DeviceScan::ExclusiveSum, run at once on the calling thread. As CUB does, a call with
 * no temporary storage only reports the bytes it needs, and a call given fewer bytes returns
 * cudaErrorInvalidValue; the temporary storage is filled with 0xff bytes after each call, so
 * that nothing can rely on what CUB leaves there. A pointer outside cudaMalloc memory (the
 * GPU would fault) and overlapping sort ranges (CUB's result is undefined) stop the process.
 * kernels/emu/include/cub/device/ has the three headers embedding.cu includes, each of
 * which includes this one. Not modelled: CUB's own temporary sizes (this one asks for what
 * it would need to keep its inputs, so sizes differ from the real library's), float keys,
 * iterators other than plain pointers, the DoubleBuffer forms, and the asynchrony of the
 * stream (every call has finished on return).
 */
#ifndef SL_KERNELS_EMU_CUB_H
#define SL_KERNELS_EMU_CUB_H

#include <string.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "kernels/cuda_common.h"
#include "kernels/emu/emu.h"

namespace cub
{

namespace sl_emu
{

#define SL_EMU_CUB_BASE 256 /* bytes every call asks for beyond its arrays: CUB's minimum */

/* false when the call is a size query (temp == nullptr; bytes set to need) or has too little
 * temporary storage (e set to cudaErrorInvalidValue, as CUB returns) */
inline bool run(void *temp, size_t &bytes, size_t need, cudaError_t *e)
{
    *e = cudaSuccess;
    if (!temp) {
        bytes = need;
        return false;
    }
    if (bytes < need || !sl_emu_is_device(temp, need)) {
        *e = cudaErrorInvalidValue;
        return false;
    }
    return true;
}

inline void device_range(const char *fn, const char *what, const void *p, size_t bytes)
{
    if (bytes && !sl_emu_is_device(p, bytes))
        sl_cuda_fatal("cuda-emu", "a pointer outside device memory (the GPU would fault)", what, fn,
                      0);
}

inline void no_overlap(const char *fn, const void *a, const void *b, size_t bytes)
{
    const char *x = static_cast<const char *>(a), *y = static_cast<const char *>(b);
    if (bytes && x < y + bytes && y < x + bytes)
        sl_cuda_fatal("cuda-emu", "overlapping ranges: CUB does not sort in place", "", fn, 0);
}

inline void scrub(void *temp, size_t bytes)
{
    memset(temp, 0xff, bytes);
}

} // namespace sl_emu

struct DeviceRadixSort {
    template <class KeyT, class ValueT, class NumItemsT>
    static cudaError_t SortPairs(void *temp, size_t &temp_bytes, const KeyT *keys_in,
                                 KeyT *keys_out, const ValueT *values_in, ValueT *values_out,
                                 NumItemsT num_items, int begin_bit = 0,
                                 int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0)
    {
        static_assert(std::is_integral<KeyT>::value, "the stand-in sorts integer keys only");
        using U = typename std::make_unsigned<KeyT>::type;
        const size_t n = num_items > 0 ? (size_t)num_items : 0;
        const size_t need = SL_EMU_CUB_BASE + n * (sizeof(KeyT) + sizeof(ValueT));
        cudaError_t e;
        if (!sl_emu::run(temp, temp_bytes, need, &e))
            return e;
        if (begin_bit < 0 || end_bit > (int)sizeof(KeyT) * 8 || begin_bit > end_bit)
            return cudaErrorInvalidValue;
        const char *fn = "cub::DeviceRadixSort::SortPairs";
        sl_emu::device_range(fn, "keys_in", keys_in, n * sizeof(KeyT));
        sl_emu::device_range(fn, "keys_out", keys_out, n * sizeof(KeyT));
        sl_emu::device_range(fn, "values_in", values_in, n * sizeof(ValueT));
        sl_emu::device_range(fn, "values_out", values_out, n * sizeof(ValueT));
        const void *r[4] = { keys_in, keys_out, values_in, values_out };
        const size_t rb[4] = { sizeof(KeyT), sizeof(KeyT), sizeof(ValueT), sizeof(ValueT) };
        for (int i = 0; i < 4; i++)
            for (int j = i + 1; j < 4; j++)
                sl_emu::no_overlap(fn, r[i], r[j], n * std::min(rb[i], rb[j]));
        /* the bits CUB sorts by: the key as unsigned, sign bit inverted for signed types */
        const U flip = std::is_signed<KeyT>::value ? (U)((U)1 << (sizeof(KeyT) * 8 - 1)) : 0;
        const int width = end_bit - begin_bit;
        const U mask = width >= (int)sizeof(U) * 8 ? (U) ~(U)0 : (U)(((U)1 << width) - 1);
        auto digit = [&](size_t i) { return (U)((((U)keys_in[i] ^ flip) >> begin_bit) & mask); };
        std::vector<size_t> order(n);
        for (size_t i = 0; i < n; i++)
            order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return digit(a) < digit(b); });
        for (size_t i = 0; i < n; i++) {
            keys_out[i] = keys_in[order[i]];
            values_out[i] = values_in[order[i]];
        }
        sl_emu::scrub(temp, need);
        (void)stream;
        return cudaSuccess;
    }
};

struct DeviceRunLengthEncode {
    template <class T, class CountT, class RunsT, class NumItemsT>
    static cudaError_t Encode(void *temp, size_t &temp_bytes, const T *in, T *unique_out,
                              CountT *counts_out, RunsT *num_runs_out, NumItemsT num_items,
                              cudaStream_t stream = 0)
    {
        const size_t n = num_items > 0 ? (size_t)num_items : 0;
        cudaError_t e;
        if (!sl_emu::run(temp, temp_bytes, SL_EMU_CUB_BASE, &e))
            return e;
        const char *fn = "cub::DeviceRunLengthEncode::Encode";
        sl_emu::device_range(fn, "in", in, n * sizeof(T));
        sl_emu::device_range(fn, "num_runs_out", num_runs_out, sizeof(RunsT));
        size_t runs = 0;
        for (size_t i = 0; i < n; i++)
            if (i == 0 || !(in[i] == in[i - 1]))
                runs++;
        /* only the first `runs` entries are written, as CUB does */
        sl_emu::device_range(fn, "unique_out", unique_out, runs * sizeof(T));
        sl_emu::device_range(fn, "counts_out", counts_out, runs * sizeof(CountT));
        size_t r = 0;
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || !(in[i] == in[i - 1])) {
                unique_out[r] = in[i];
                counts_out[r] = 0;
                r++;
            }
            counts_out[r - 1] += 1;
        }
        *num_runs_out = (RunsT)runs;
        sl_emu::scrub(temp, SL_EMU_CUB_BASE);
        (void)stream;
        return cudaSuccess;
    }
};

struct DeviceScan {
    /* out[i] = in[0] + ... + in[i - 1], out[0] = 0; in and out may be the same array */
    template <class InT, class OutT, class NumItemsT>
    static cudaError_t ExclusiveSum(void *temp, size_t &temp_bytes, const InT *in, OutT *out,
                                    NumItemsT num_items, cudaStream_t stream = 0)
    {
        const size_t n = num_items > 0 ? (size_t)num_items : 0;
        cudaError_t e;
        if (!sl_emu::run(temp, temp_bytes, SL_EMU_CUB_BASE, &e))
            return e;
        const char *fn = "cub::DeviceScan::ExclusiveSum";
        sl_emu::device_range(fn, "in", in, n * sizeof(InT));
        sl_emu::device_range(fn, "out", out, n * sizeof(OutT));
        InT sum = InT();
        for (size_t i = 0; i < n; i++) {
            const InT x = in[i];
            out[i] = (OutT)sum;
            sum = sum + x;
        }
        sl_emu::scrub(temp, SL_EMU_CUB_BASE);
        (void)stream;
        return cudaSuccess;
    }
};

} // namespace cub

#endif
