/* Megatron MMIDIDX .bin/.idx: streaming writer, mmap reader, verification. */
#include "dataset/idx.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const unsigned char magic[9] = { 'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0 };

enum idx_dtype idx_dtype_for_vocab(uint64_t vocab_size)
{
    return vocab_size < 65500 ? IDX_U16 : IDX_I32;
}

size_t idx_dtype_size(int code)
{
    switch (code) {
    case IDX_U8:
    case IDX_I8:
        return 1;
    case IDX_I16:
    case IDX_U16:
        return 2;
    case IDX_I32:
    case IDX_F32:
        return 4;
    case IDX_I64:
    case IDX_F64:
        return 8;
    }
    return 0;
}

const char *idx_dtype_name(int code)
{
    static const char *const names[] = { NULL,    "uint8",   "int8",    "int16", "int32",
                                         "int64", "float64", "float32", "uint16" };
    return code >= 1 && code <= 8 ? names[code] : NULL;
}

static uint64_t max_for(int code)
{
    switch (code) {
    case IDX_U8:
        return 255;
    case IDX_I8:
        return 127;
    case IDX_I16:
        return 32767;
    case IDX_U16:
        return 65535;
    default:
        return UINT32_MAX;
    }
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---- writer ----------------------------------------------------------------------- */

struct idx_writer {
    char *prefix;
    enum idx_dtype dtype;
    size_t itemsize;
    struct sl_writer *bin;
    int32_t *lens;
    int64_t *ptrs;
    size_t nseq, capseq;
    int64_t *docs;
    size_t ndocs, capdocs; /* entries, including the leading 0 */
    uint64_t bin_bytes;
    unsigned char *tmp;
    size_t tmpcap;
    int no_sync; /* idx_writer_open_part */
};

static int writer_open(struct idx_writer **out, const char *prefix, enum idx_dtype dtype,
                       int no_sync)
{
    *out = NULL;
    if (!idx_dtype_size(dtype) || dtype == IDX_F32 || dtype == IDX_F64)
        return sl_err_set(SL_ERR_USAGE, "token dtype %d is not an integer type", (int)dtype);
    struct idx_writer *w = sl_xcalloc(1, sizeof(*w));
    w->prefix = sl_xstrdup(prefix);
    w->dtype = dtype;
    w->itemsize = idx_dtype_size(dtype);
    char *path = sl_xasprintf("%s.bin", prefix);
    w->no_sync = no_sync;
    struct sl_writer_opts o = { .codec = SL_CODEC_NONE, .level = 0, .no_sync = no_sync };
    int rc = sl_writer_open(&w->bin, path, &o);
    free(path);
    if (rc) {
        free(w->prefix);
        free(w);
        return rc;
    }
    w->capdocs = 1024;
    w->docs = sl_xmalloc(w->capdocs * sizeof(*w->docs));
    w->docs[w->ndocs++] = 0;
    *out = w;
    return 0;
}

int idx_writer_open(struct idx_writer **out, const char *prefix, enum idx_dtype dtype)
{
    return writer_open(out, prefix, dtype, 0);
}

int idx_writer_open_part(struct idx_writer **out, const char *prefix, enum idx_dtype dtype)
{
    return writer_open(out, prefix, dtype, 1);
}

static void push_seq(struct idx_writer *w, int32_t len, int64_t ptr)
{
    if (w->nseq == w->capseq) {
        w->capseq = w->capseq ? w->capseq * 2 : 1024;
        w->lens = sl_xrealloc(w->lens, w->capseq * sizeof(*w->lens));
        w->ptrs = sl_xrealloc(w->ptrs, w->capseq * sizeof(*w->ptrs));
    }
    w->lens[w->nseq] = len;
    w->ptrs[w->nseq] = ptr;
    w->nseq++;
}

static void push_doc(struct idx_writer *w, int64_t v)
{
    if (w->ndocs == w->capdocs) {
        w->capdocs *= 2;
        w->docs = sl_xrealloc(w->docs, w->capdocs * sizeof(*w->docs));
    }
    w->docs[w->ndocs++] = v;
}

int idx_writer_add_sequence(struct idx_writer *w, const uint32_t *tokens, size_t n)
{
    if (n > INT32_MAX)
        return sl_err_set(SL_ERR_TOOBIG, "sequence of %zu tokens is longer than the format allows",
                          n);
    size_t bytes = n * w->itemsize;
    if (bytes > w->tmpcap) {
        w->tmpcap = bytes;
        w->tmp = sl_xrealloc(w->tmp, bytes);
    }
    uint64_t limit = max_for(w->dtype);
    unsigned char *p = w->tmp;
    const void *out = p;
    int done = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (w->itemsize == 2) { /* the common case: one pass */
        /* every limit is 2^k - 1, so an id fits when it has no bit outside the limit's */
        uint32_t mask = ~(uint32_t)limit, over = 0;
        uint16_t *q = (uint16_t *)(void *)p;
        size_t i = 0;
#if defined(__SSE2__)
        /* 8 ids a step: the low 16 bits of each, sign-extended so that the saturating
         * pack keeps them exactly (SSE2 has no unsigned 32 -> 16 pack) */
        __m128i vmask = _mm_set1_epi32((int)mask), vover = _mm_setzero_si128();
        for (; i + 8 <= n; i += 8) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(tokens + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(tokens + i + 4));
            vover = _mm_or_si128(vover, _mm_and_si128(_mm_or_si128(a, b), vmask));
            a = _mm_srai_epi32(_mm_slli_epi32(a, 16), 16);
            b = _mm_srai_epi32(_mm_slli_epi32(b, 16), 16);
            _mm_storeu_si128((__m128i *)(void *)(q + i), _mm_packs_epi32(a, b));
        }
        over = _mm_movemask_epi8(_mm_cmpeq_epi32(vover, _mm_setzero_si128())) != 0xffff;
#endif
        for (; i < n; i++) {
            over |= tokens[i] & mask;
            q[i] = (uint16_t)tokens[i];
        }
        done = !over;              /* else the loop below finds the id that does not fit */
    } else if (w->itemsize == 4) { /* the ids as they are, without a copy */
        uint32_t over = 0;
        for (size_t i = 0; i < n; i++)
            over |= tokens[i] > limit;
        if (!over)
            out = (const void *)tokens;
        done = !over;
    }
#endif
    for (size_t i = 0; i < n && !done; i++) {
        uint32_t t = tokens[i];
        if (t > limit)
            return sl_err_set(SL_ERR_FORMAT, "token id %u does not fit the shard dtype %s", t,
                              idx_dtype_name(w->dtype));
        /* little-endian, whatever the host */
        for (size_t b = 0; b < w->itemsize; b++)
            p[i * w->itemsize + b] = b < 4 ? (unsigned char)(t >> (8 * b)) : 0;
    }
    int rc = sl_writer_write(w->bin, out, bytes);
    if (rc)
        return rc;
    push_seq(w, (int32_t)n, (int64_t)w->bin_bytes);
    w->bin_bytes += bytes;
    return 0;
}

int idx_writer_end_document(struct idx_writer *w)
{
    push_doc(w, (int64_t)w->nseq);
    return 0;
}

int idx_writer_add_document(struct idx_writer *w, const uint32_t *tokens, size_t n)
{
    int rc = idx_writer_add_sequence(w, tokens, n);
    return rc ? rc : idx_writer_end_document(w);
}

/* Open a shard to be merged into an output of `dtype`: it must have that dtype and verify. */
static int open_merge_input(struct idx_reader **r, const char *prefix, enum idx_dtype dtype)
{
    int rc = idx_reader_open(r, prefix);
    if (rc)
        return rc;
    if (idx_reader_dtype(*r) != (int)dtype)
        rc = sl_err_set(SL_ERR_FORMAT, "cannot merge '%s': its dtype is %s, the output's is %s",
                        prefix, idx_dtype_name(idx_reader_dtype(*r)), idx_dtype_name(dtype));
    else if ((rc = idx_reader_verify(*r, 0)))
        sl_err_wrap(rc, "cannot merge '%s': ", prefix);
    if (rc) {
        idx_reader_close(*r);
        *r = NULL;
    }
    return rc;
}

int idx_link_shard(const char *prefix, const char *out, enum idx_dtype dtype)
{
    struct idx_reader *r;
    int rc = open_merge_input(&r, prefix, dtype);
    if (rc)
        return rc;
    idx_reader_close(r);
    char *src[2], *dst[2];
    for (int i = 0; i < 2; i++) {
        src[i] = sl_xasprintf("%s.%s", prefix, i ? "idx" : "bin");
        dst[i] = sl_xasprintf("%s.%s", out, i ? "idx" : "bin");
    }
    rc = sl_atomic_link(src[0], dst[0]);
    if (!rc) {
        rc = sl_atomic_link(src[1], dst[1]);
        if (rc == SL_ERR_UNSUPPORTED)
            rc = sl_err_set(SL_ERR_IO, "cannot link '%s' to '%s'", src[1], dst[1]);
        if (rc)
            unlink(dst[0]); /* no .bin without its .idx */
    }
    for (int i = 0; i < 2; i++) {
        free(src[i]);
        free(dst[i]);
    }
    return rc;
}

int idx_writer_append_shard(struct idx_writer *w, const char *prefix)
{
    struct idx_reader *r;
    int rc = open_merge_input(&r, prefix, w->dtype);
    if (rc)
        return rc;
    uint64_t base_seq = w->nseq, base_bytes = w->bin_bytes;
    uint64_t S = idx_reader_sequences(r);
    for (uint64_t i = 0; i < S; i++)
        push_seq(w, (int32_t)idx_reader_seq_len(r, i),
                 (int64_t)(base_bytes + idx_reader_seq_ptr(r, i)));
    uint64_t D = idx_reader_documents(r);
    for (uint64_t d = 1; d <= D; d++)
        push_doc(w, (int64_t)(base_seq + idx_reader_doc_index(r, d)));
    uint64_t bytes = idx_reader_tokens(r) * w->itemsize;
    idx_reader_close(r);
    /* copy the tokens from the file, not through the mapping, so that memory stays flat
     * however large the shard is (inside the kernel where it can) */
    char *bpath = sl_xasprintf("%s.bin", prefix);
    int fd = open(bpath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = sl_err_set(SL_ERR_IO, "cannot open '%s': %s", bpath, strerror(errno));
        free(bpath);
        return rc;
    }
    rc = sl_writer_copy_fd(w->bin, fd, 0, bytes, bpath);
    if (!rc)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    free(bpath);
    w->bin_bytes += bytes;
    return rc;
}

uint64_t idx_writer_sequences(const struct idx_writer *w)
{
    return w->nseq;
}

uint64_t idx_writer_documents(const struct idx_writer *w)
{
    return w->ndocs - 1;
}

uint64_t idx_writer_tokens(const struct idx_writer *w)
{
    return w->bin_bytes / w->itemsize;
}

static void writer_free(struct idx_writer *w)
{
    free(w->prefix);
    free(w->lens);
    free(w->ptrs);
    free(w->docs);
    free(w->tmp);
    free(w);
}

/* Append n little-endian integers of `size` bytes from values of type int64_t/int32_t. */
static int write_le(struct sl_writer *out, const void *vals, size_t n, size_t size)
{
    unsigned char buf[8192];
    size_t per = sizeof(buf) / size, done = 0;
    while (done < n) {
        size_t k = n - done < per ? n - done : per;
        for (size_t i = 0; i < k; i++) {
            uint64_t v = size == 4 ? (uint64_t)(uint32_t)((const int32_t *)vals)[done + i]
                                   : (uint64_t)((const int64_t *)vals)[done + i];
            for (size_t b = 0; b < size; b++)
                buf[i * size + b] = (unsigned char)(v >> (8 * b));
        }
        int rc = sl_writer_write(out, buf, k * size);
        if (rc)
            return rc;
        done += k;
    }
    return 0;
}

int idx_writer_commit(struct idx_writer *w)
{
    char *path = sl_xasprintf("%s.idx", w->prefix);
    struct sl_writer *idx = NULL;
    struct sl_writer_opts o = { .codec = SL_CODEC_NONE, .level = 0, .no_sync = w->no_sync };
    int rc = sl_writer_open(&idx, path, &o);
    if (!rc) {
        unsigned char h[IDX_HEADER_SIZE];
        memcpy(h, magic, 9);
        put_u64(h + 9, 1);
        h[17] = (unsigned char)w->dtype;
        put_u64(h + 18, w->nseq);
        put_u64(h + 26, w->ndocs);
        rc = sl_writer_write(idx, h, sizeof(h));
    }
    if (!rc)
        rc = write_le(idx, w->lens, w->nseq, 4);
    if (!rc)
        rc = write_le(idx, w->ptrs, w->nseq, 8);
    if (!rc)
        rc = write_le(idx, w->docs, w->ndocs, 8);
    /* .bin first: an .idx under its final name always has its .bin */
    if (!rc) {
        rc = sl_writer_commit(w->bin);
        w->bin = NULL;
    }
    if (!rc) {
        rc = sl_writer_commit(idx);
        idx = NULL;
    }
    if (rc) {
        sl_writer_abort(idx);
        sl_writer_abort(w->bin);
        if (!w->bin) {
            /* the .bin was committed but the .idx failed: do not leave a lone .bin */
            char *bin = sl_xasprintf("%s.bin", w->prefix);
            unlink(bin);
            free(bin);
        }
    }
    free(path);
    writer_free(w);
    return rc;
}

void idx_writer_abort(struct idx_writer *w)
{
    if (!w)
        return;
    sl_writer_abort(w->bin);
    writer_free(w);
}

/* ---- reader ----------------------------------------------------------------------- */

struct idx_reader {
    char *prefix;
    const unsigned char *idx;
    size_t idx_size;
    const unsigned char *bin;
    size_t bin_size;
    int dtype;
    size_t itemsize;
    uint64_t nseq, ndoc_entries, ntokens;
    const unsigned char *lens, *ptrs, *docs;
};

static int map_file(const char *path, const unsigned char **data, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_err_set(errno == ENOENT ? SL_ERR_NOTFOUND : SL_ERR_IO, "cannot open '%s': %s",
                          path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return sl_err_set(SL_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    }
    *size = (size_t)st.st_size;
    *data = NULL;
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return sl_err_set(SL_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
        }
        *data = p;
    }
    close(fd);
    return 0;
}

void idx_reader_close(struct idx_reader *r)
{
    if (!r)
        return;
    if (r->idx)
        munmap((void *)r->idx, r->idx_size);
    if (r->bin)
        munmap((void *)r->bin, r->bin_size);
    free(r->prefix);
    free(r);
}

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One pass over the index: every sequence inside the .bin, every document entry a valid
 * sequence number, so that readers may index without further checks. */
/* The layout every reader relies on, checked when a shard is opened (so that train, eval,
 * dataset cat and the merger refuse what dataset verify refuses): sequences laid end to end
 * from byte 0 with non-negative lengths, a .bin of exactly the bytes they cover, document
 * entries from 0, never decreasing, ending at the sequence count. */
static int check_layout(const struct idx_reader *r, const char *ipath, const char *bpath)
{
    uint64_t expect = 0;
    for (uint64_t i = 0; i < r->nseq; i++) {
        uint32_t len = idx_reader_seq_len(r, i);
        uint64_t ptr = idx_reader_seq_ptr(r, i);
        if (len & 0x80000000u)
            return sl_err_set(SL_ERR_CORRUPT,
                              "cannot open shard '%s': sequence %llu has a negative length (%d)",
                              ipath, (unsigned long long)i, (int)(int32_t)len);
        if (ptr != expect)
            return sl_err_set(SL_ERR_CORRUPT,
                              "cannot open shard '%s': sequence %llu starts at byte %llu, where "
                              "the one before it ends at %llu",
                              ipath, (unsigned long long)i, (unsigned long long)ptr,
                              (unsigned long long)expect);
        if ((uint64_t)len * r->itemsize > r->bin_size - ptr || ptr > r->bin_size)
            return sl_err_set(SL_ERR_CORRUPT,
                              "cannot open shard '%s': sequence %llu (byte %llu, %u tokens of %zu "
                              "bytes) ends past the end of '%s' (%zu bytes)",
                              ipath, (unsigned long long)i, (unsigned long long)ptr, len,
                              r->itemsize, bpath, r->bin_size);
        expect += (uint64_t)len * r->itemsize;
    }
    if (expect != r->bin_size) {
        /* int32 tokens under a uint16 index (or the reverse) come out as a multiple */
        int ratio = expect && r->bin_size % expect == 0 && r->bin_size / expect <= 8;
        return sl_err_set(SL_ERR_CORRUPT,
                          "cannot open shard '%s': %zu bytes, but the index '%s' describes %llu%s",
                          bpath, r->bin_size, ipath, (unsigned long long)expect,
                          ratio ? "\nhint: the .bin holds tokens of another size than the index's "
                                  "dtype says: do the two files belong together?"
                                : "\nhint: do the two files belong together? (sluice dataset "
                                  "verify names the first inconsistency)");
    }
    for (uint64_t d = 0; d < r->ndoc_entries; d++) {
        uint64_t v = idx_reader_doc_index(r, d), prev = d ? idx_reader_doc_index(r, d - 1) : 0;
        if (d == 0 && v != 0)
            return sl_err_set(SL_ERR_CORRUPT,
                              "cannot open shard '%s': the document entries start at sequence "
                              "%llu, not 0",
                              ipath, (unsigned long long)v);
        if (v > r->nseq)
            return sl_err_set(SL_ERR_CORRUPT,
                              "cannot open shard '%s': document entry %llu is sequence %llu, past "
                              "the shard's %llu sequences",
                              ipath, (unsigned long long)d, (unsigned long long)v,
                              (unsigned long long)r->nseq);
        if (v < prev)
            return sl_err_set(
                SL_ERR_CORRUPT,
                "cannot open shard '%s': document entry %llu (sequence %llu) is below "
                "the previous one (%llu)",
                ipath, (unsigned long long)d, (unsigned long long)v, (unsigned long long)prev);
    }
    if (idx_reader_doc_index(r, r->ndoc_entries - 1) != r->nseq)
        return sl_err_set(SL_ERR_CORRUPT,
                          "cannot open shard '%s': the document entries end at sequence %llu, not "
                          "at the shard's %llu sequences",
                          ipath, (unsigned long long)idx_reader_doc_index(r, r->ndoc_entries - 1),
                          (unsigned long long)r->nseq);
    return 0;
}

int idx_reader_open(struct idx_reader **out, const char *prefix)
{
    *out = NULL;
    struct idx_reader *r = sl_xcalloc(1, sizeof(*r));
    r->prefix = sl_xstrdup(prefix);
    char *ipath = sl_xasprintf("%s.idx", prefix), *bpath = sl_xasprintf("%s.bin", prefix);
    int rc = map_file(ipath, &r->idx, &r->idx_size);
    if (rc) {
        if (rc == SL_ERR_NOTFOUND)
            sl_err_wrap(rc, "%s", "");
        goto out;
    }
    if (r->idx_size < 9 || memcmp(r->idx, magic, 9) != 0) {
        const char *hint = "";
        if (r->idx_size >= 8 && memcmp(r->idx, "TNTIDX\0\0", 8) == 0)
            hint = "\nhint: this is the old TNTIDX (lazy/cached) format; sluice reads Megatron "
                   "MMIDIDX";
        rc = sl_err_set(SL_ERR_FORMAT, "cannot open shard '%s': bad magic%s", ipath, hint);
        goto out;
    }
    if (r->idx_size < IDX_HEADER_SIZE) {
        rc = sl_err_set(SL_ERR_CORRUPT, "cannot open shard '%s': truncated header (%zu bytes)",
                        ipath, r->idx_size);
        goto out;
    }
    uint64_t version = get_u64(r->idx + 9);
    if (version != 1) {
        rc = sl_err_set(SL_ERR_FORMAT, "cannot open shard '%s': version %llu (expected 1)", ipath,
                        (unsigned long long)version);
        goto out;
    }
    r->dtype = r->idx[17];
    r->itemsize = idx_dtype_size(r->dtype);
    if (!r->itemsize) {
        rc = sl_err_set(SL_ERR_FORMAT, "cannot open shard '%s': unknown dtype code %d", ipath,
                        r->dtype);
        goto out;
    }
    r->nseq = get_u64(r->idx + 18);
    r->ndoc_entries = get_u64(r->idx + 26);
    /* fairseq's MMIDIDX has the same magic but no document count and no doc_idx */
    if (r->nseq < (1ull << 40) && r->idx_size == 26 + 12 * r->nseq) {
        rc = sl_err_set(SL_ERR_FORMAT,
                        "cannot open shard '%s': the header has no document index\n"
                        "hint: is this a fairseq index? sluice reads Megatron MMIDIDX",
                        ipath);
        goto out;
    }
    __uint128_t want =
        (__uint128_t)IDX_HEADER_SIZE + (__uint128_t)12 * r->nseq + (__uint128_t)8 * r->ndoc_entries;
    if (r->ndoc_entries == 0 || (want != r->idx_size && want + r->nseq != r->idx_size)) {
        rc = sl_err_set(SL_ERR_CORRUPT,
                        "cannot open shard '%s': %zu bytes, but the header (%llu sequences, %llu "
                        "document entries) needs %llu; the file is truncated or not an index",
                        ipath, r->idx_size, (unsigned long long)r->nseq,
                        (unsigned long long)r->ndoc_entries,
                        (unsigned long long)(want > UINT64_MAX ? UINT64_MAX : (uint64_t)want));
        goto out;
    }
    r->lens = r->idx + IDX_HEADER_SIZE;
    r->ptrs = r->lens + 4 * r->nseq;
    r->docs = r->ptrs + 8 * r->nseq;

    rc = map_file(bpath, &r->bin, &r->bin_size);
    if (rc)
        goto out;
    uint64_t need = 0;
    if (r->nseq) {
        uint64_t last = r->nseq - 1;
        uint64_t lp = idx_reader_seq_ptr(r, last), ll = idx_reader_seq_len(r, last);
        need = lp < UINT64_MAX / 2 && !(ll & 0x80000000u) ? lp + ll * r->itemsize : UINT64_MAX;
    }
    if (r->bin_size < need) {
        rc = sl_err_set(SL_ERR_CORRUPT,
                        "cannot open shard '%s': %zu bytes, but the index needs %llu (truncated?)",
                        bpath, r->bin_size, (unsigned long long)need);
        goto out;
    }
    rc = check_layout(r, ipath, bpath);
    if (rc)
        goto out;
    r->ntokens = r->bin_size / r->itemsize;
out:
    free(ipath);
    free(bpath);
    if (rc) {
        idx_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int idx_reader_dtype(const struct idx_reader *r)
{
    return r->dtype;
}

uint64_t idx_reader_sequences(const struct idx_reader *r)
{
    return r->nseq;
}

uint64_t idx_reader_documents(const struct idx_reader *r)
{
    return r->ndoc_entries - 1;
}

uint64_t idx_reader_tokens(const struct idx_reader *r)
{
    return r->ntokens;
}

const char *idx_reader_prefix(const struct idx_reader *r)
{
    return r->prefix;
}

uint32_t idx_reader_seq_len(const struct idx_reader *r, uint64_t i)
{
    return rd_u32(r->lens + 4 * i);
}

uint64_t idx_reader_seq_ptr(const struct idx_reader *r, uint64_t i)
{
    return get_u64(r->ptrs + 8 * i);
}

uint64_t idx_reader_doc_index(const struct idx_reader *r, uint64_t d)
{
    return get_u64(r->docs + 8 * d);
}

const void *idx_reader_bin(const struct idx_reader *r)
{
    return r->bin;
}

int idx_reader_read(const struct idx_reader *r, uint64_t i, uint64_t offset, size_t n,
                    uint32_t *out)
{
    if (i >= r->nseq)
        return sl_err_set(SL_ERR_TOOBIG, "'%s': no sequence %llu (the shard has %llu: 0..%lld)",
                          r->prefix, (unsigned long long)i, (unsigned long long)r->nseq,
                          (long long)r->nseq - 1);
    uint64_t len = idx_reader_seq_len(r, i);
    if (offset > len || n > len - offset)
        return sl_err_set(SL_ERR_TOOBIG, "'%s': tokens %llu..%llu of a %llu-token sequence",
                          r->prefix, (unsigned long long)offset, (unsigned long long)(offset + n),
                          (unsigned long long)len);
    const unsigned char *p = r->bin + idx_reader_seq_ptr(r, i) + offset * r->itemsize;
    switch (r->dtype) {
    case IDX_U16:
        for (size_t k = 0; k < n; k++)
            out[k] = (uint32_t)p[2 * k] | (uint32_t)p[2 * k + 1] << 8;
        return 0;
    case IDX_I32:
        for (size_t k = 0; k < n; k++) {
            uint32_t v = rd_u32(p + 4 * k);
            if (v & 0x80000000u)
                return sl_err_set(SL_ERR_FORMAT, "'%s': negative token id", r->prefix);
            out[k] = v;
        }
        return 0;
    case IDX_U8:
        for (size_t k = 0; k < n; k++)
            out[k] = p[k];
        return 0;
    case IDX_I8:
    case IDX_I16:
    case IDX_I64:
        for (size_t k = 0; k < n; k++) {
            int64_t v = r->dtype == IDX_I8    ? (int8_t)p[k]
                        : r->dtype == IDX_I16 ? (int16_t)(p[2 * k] | p[2 * k + 1] << 8)
                                              : (int64_t)get_u64(p + 8 * k);
            if (v < 0 || v > UINT32_MAX)
                return sl_err_set(SL_ERR_FORMAT, "'%s': token id %lld out of range", r->prefix,
                                  (long long)v);
            out[k] = (uint32_t)v;
        }
        return 0;
    default:
        return sl_err_set(SL_ERR_FORMAT, "'%s': dtype %s does not hold token ids", r->prefix,
                          idx_dtype_name(r->dtype));
    }
}

int idx_reader_verify(const struct idx_reader *r, uint64_t max_token)
{
    /* the layout was checked when the shard was opened (check_layout) */
    if (max_token) {
        uint32_t buf[4096];
        for (uint64_t i = 0; i < r->nseq; i++) {
            uint64_t len = idx_reader_seq_len(r, i);
            for (uint64_t off = 0; off < len;) {
                size_t k = len - off < 4096 ? (size_t)(len - off) : 4096;
                int rc = idx_reader_read(r, i, off, k, buf);
                if (rc)
                    return rc;
                for (size_t j = 0; j < k; j++)
                    if (buf[j] >= max_token)
                        return sl_err_set(SL_ERR_FORMAT,
                                          "'%s': token id %u in sequence %llu is not below %llu",
                                          r->prefix, buf[j], (unsigned long long)i,
                                          (unsigned long long)max_token);
                off += k;
            }
        }
    }
    return 0;
}
