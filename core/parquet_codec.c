/* The codecs of Parquet pages: zlib, zstd, liblz4 and libbrotlidec linked, libsnappy loaded
 * when first needed. */
#include "core/parquet_internal.h"

#include "core/dl.h"
#include "core/err.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* libsnappy is C++ (it brings libstdc++): loaded when a snappy page is first read, so that
 * commands without one do not load the C++ runtime (core/dl.h) */
typedef snappy_status (*snappy_fn)(const char *in, size_t n, char *out, size_t *outn);
static snappy_fn snappy_uncompress_fn;

static int load_snappy(const char *name)
{
    static struct sl_dl_once once = SL_DL_ONCE_INIT;
    static void *lib;
    static const char *const names[] = { "libsnappy.so.1", "libsnappy.so" };
    const struct sl_dl_sym syms[] = { { "snappy_uncompress", (void **)&snappy_uncompress_fn } };
    char what[512];
    snprintf(what, sizeof(what),
             "reading the snappy-compressed Parquet file '%s' needs libsnappy (Debian package "
             "libsnappy1v5)",
             name);
    return sl_dl_load_once(&once, &lib, names, 2, syms, 1, what, SL_ERR_UNSUPPORTED);
}

/* The Hadoop framing of LZ4 (codec LZ4): blocks of [4-byte big-endian uncompressed
 * length][4-byte big-endian compressed length][LZ4 block]. */
static int hadoop_lz4(const uint8_t *src, size_t n, uint8_t *dst, size_t un)
{
    size_t o = 0;
    while (n >= 8) {
        uint32_t ul =
            (uint32_t)src[0] << 24 | (uint32_t)src[1] << 16 | (uint32_t)src[2] << 8 | src[3];
        uint32_t cl =
            (uint32_t)src[4] << 24 | (uint32_t)src[5] << 16 | (uint32_t)src[6] << 8 | src[7];
        src += 8;
        n -= 8;
        if (cl > n || ul > un - o || cl > (uint32_t)INT32_MAX || ul > (uint32_t)INT32_MAX)
            return -1;
        int got = LZ4_decompress_safe((const char *)src, (char *)dst + o, (int)cl, (int)ul);
        if (got != (int)ul)
            return -1;
        o += ul;
        src += cl;
        n -= cl;
    }
    return n == 0 && o == un ? 0 : -1;
}

static int inflate_all(const uint8_t *src, size_t n, uint8_t *dst, size_t un)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 32) != Z_OK) /* 15: the largest window; +32: gzip or zlib header */
        return -1;
    z.next_in = (Bytef *)src;
    z.avail_in = (uInt)n;
    z.next_out = dst;
    z.avail_out = (uInt)un;
    int zr = inflate(&z, Z_FINISH);
    size_t got = un - z.avail_out;
    inflateEnd(&z);
    return (zr == Z_STREAM_END || (zr == Z_BUF_ERROR && z.avail_out == 0)) && got == un ? 0 : -1;
}

int pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t un,
                  const char *name)
{
    int ok = -1;
    switch (codec) {
    case SL_PQ_UNCOMPRESSED:
        if (n != un)
            return 1;
        memcpy(dst, src, n);
        return 0;
    case SL_PQ_SNAPPY: {
        size_t len = un;
        int rc = load_snappy(name);
        if (rc)
            return rc;
        ok = snappy_uncompress_fn((const char *)src, n, (char *)dst, &len) == SNAPPY_OK && len == un
                 ? 0
                 : -1;
        break;
    }
    case SL_PQ_GZIP:
        ok = inflate_all(src, n, dst, un);
        break;
    case SL_PQ_ZSTD: {
        size_t r = ZSTD_decompress(dst, un, src, n);
        ok = !ZSTD_isError(r) && r == un ? 0 : -1;
        break;
    }
    case SL_PQ_LZ4_RAW:
        ok = n <= INT32_MAX &&
                     LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)un) == (int)un
                 ? 0
                 : -1;
        break;
    case SL_PQ_LZ4:
        ok = hadoop_lz4(src, n, dst, un);
        if (ok && n <= INT32_MAX) /* some writers put a plain block under this codec */
            ok = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)un) == (int)un
                     ? 0
                     : -1;
        break;
    case SL_PQ_BROTLI: {
        size_t len = un;
        ok =
            BrotliDecoderDecompress(n, src, &len, dst) == BROTLI_DECODER_RESULT_SUCCESS && len == un
                ? 0
                : -1;
        break;
    }
    default:
        return 2;
    }
    return ok ? 1 : 0;
}
