/* Parquet files: positional reads, the footer, row groups read column chunk by column
 * chunk, and rows assembled from their levels into lines of JSON. */
#include "core/parquet.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/parquet_internal.h"
#include "core/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the largest footer read: FineWeb's are under 1 MiB; 64 MiB holds a schema of thousands
 * of columns over thousands of row groups */
#define PQ_MAX_FOOTER (64u << 20)

/* ---- positional reads of a local file ------------------------------------------------ */

struct file_ctx {
    int fd;
    char *path;
};

static int file_read_at(void *ctx, uint64_t off, void *buf, size_t n)
{
    struct file_ctx *f = ctx;
    uint8_t *p = buf;
    while (n) {
        ssize_t r = pread(f->fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return sl_err_set(SL_ERR_IO, "cannot read input '%s' at byte %llu: %s", f->path,
                              (unsigned long long)off, strerror(errno));
        if (r == 0)
            return sl_err_set(SL_ERR_IO,
                              "input '%s' is shorter than when the run began: nothing at byte %llu"
                              "\nhint: an input must not change while a stage reads it; run the "
                              "command again to read it as it is now",
                              f->path, (unsigned long long)off);
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static void file_close(void *ctx)
{
    struct file_ctx *f = ctx;
    close(f->fd);
    free(f->path);
    free(f);
}

int sl_pread_file(struct sl_pread *out, const char *path, uint64_t size)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return sl_err_set(SL_ERR_IO, "cannot read input '%s': %s", path, strerror(e));
    }
    struct file_ctx *f = sl_xcalloc(1, sizeof(*f));
    f->fd = fd;
    f->path = sl_xstrdup(path);
    out->size = size ? size : (uint64_t)st.st_size;
    out->read_at = file_read_at;
    out->close = file_close;
    out->ctx = f;
    return 0;
}

int sl_parquet_magic(const void *p, size_t n)
{
    return n >= SL_PQ_MAGIC_LEN && !memcmp(p, SL_PQ_MAGIC, SL_PQ_MAGIC_LEN);
}

/* ---- the file ------------------------------------------------------------------------ */

static void pread_close(struct sl_pread *pr)
{
    if (pr->close)
        pr->close(pr->ctx);
    memset(pr, 0, sizeof(*pr));
}

static int open_footer(struct sl_parquet *pq)
{
    uint64_t size = pq->pr.size;
    uint8_t tail[SL_PQ_FOOTER_LEN_BYTES + SL_PQ_MAGIC_LEN], head[SL_PQ_MAGIC_LEN];
    const uint64_t min = 2 * SL_PQ_MAGIC_LEN + SL_PQ_FOOTER_LEN_BYTES;
    if (size < min)
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot read Parquet file '%s': it has %llu bytes, fewer than a Parquet "
                          "file's %llu of magic and footer length\nhint: the file is cut short",
                          pq->name, (unsigned long long)size, (unsigned long long)min);
    int rc = pq->pr.read_at(pq->pr.ctx, 0, head, sizeof(head));
    if (!rc)
        rc = pq->pr.read_at(pq->pr.ctx, size - sizeof(tail), tail, sizeof(tail));
    if (rc)
        return rc;
    if (!sl_parquet_magic(head, sizeof(head)) || !sl_parquet_magic(tail + 4, 4))
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot read Parquet file '%s': it does not %s with \"PAR1\" (at byte "
                          "%llu)\nhint: %s",
                          pq->name, sl_parquet_magic(head, 4) ? "end" : "begin",
                          sl_parquet_magic(head, 4) ? (unsigned long long)(size - 4) : 0ull,
                          sl_parquet_magic(head, 4) ? "the file is cut short or still being written"
                                                    : "it is not a Parquet file");
    uint32_t flen = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                    (uint32_t)tail[3] << 24;
    if (flen == 0 || flen > size - min || flen > PQ_MAX_FOOTER)
        return sl_err_set(
            SL_ERR_CORRUPT,
            "cannot read Parquet file '%s': its footer length (%u, at byte %llu) does "
            "not fit the file's %llu bytes\nhint: the file is damaged or cut short",
            pq->name, flen, (unsigned long long)(size - 8), (unsigned long long)size);
    uint64_t off = size - sizeof(tail) - flen;
    uint8_t *buf = sl_xmalloc(flen);
    rc = pq->pr.read_at(pq->pr.ctx, off, buf, flen);
    if (!rc)
        rc = pq_meta_parse(&pq->m, buf, flen, off, size, pq->name);
    free(buf);
    return rc;
}

int sl_parquet_open(struct sl_parquet **out, struct sl_pread *pr, const char *name)
{
    *out = NULL;
    struct sl_parquet *pq = sl_xcalloc(1, sizeof(*pq));
    pq->pr = *pr;
    memset(pr, 0, sizeof(*pr));
    pq->name = sl_xstrdup(name);
    int rc = open_footer(pq);
    if (rc) {
        sl_parquet_close(pq);
        return rc;
    }
    *out = pq;
    return 0;
}

void sl_parquet_close(struct sl_parquet *pq)
{
    if (!pq)
        return;
    pread_close(&pq->pr);
    pq_meta_release(&pq->m);
    free(pq->name);
    free(pq);
}

size_t sl_parquet_row_groups(const struct sl_parquet *pq)
{
    return pq->m.nrg;
}

uint64_t sl_parquet_rg_rows(const struct sl_parquet *pq, size_t rg)
{
    return (uint64_t)pq->m.rg[rg].num_rows;
}

uint64_t sl_parquet_rg_bytes(const struct sl_parquet *pq, size_t rg)
{
    return pq->m.rg[rg].bytes;
}

size_t sl_parquet_split(const struct sl_parquet *pq, uint64_t target, size_t **bounds)
{
    size_t n = pq->m.nrg, k = 0;
    size_t *b = sl_xcalloc(n + 2, sizeof(size_t));
    uint64_t acc = 0;
    b[k++] = 0;
    for (size_t r = 0; r < n; r++) {
        uint64_t sz = pq->m.rg[r].bytes;
        if (r > b[k - 1] && acc + sz > target) {
            b[k++] = r;
            acc = 0;
        }
        acc += sz;
    }
    b[k] = n;
    *bounds = b;
    return k;
}
