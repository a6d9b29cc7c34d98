/* Parquet inputs: recognised by name or magic, read as JSONL rows, and split into parts of
 * row groups (core/inputs.h). */
#include "core/inputs.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/parquet.h"
#include "core/remote.h"
#include "core/stream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* A regular file named *.parquet or beginning with the magic; a remote object by its name
 * only (its first bytes would cost a request, and a stage reads it next anyway). */
static int is_parquet(const struct sl_input *in)
{
    if (!S_ISREG((mode_t)in->mode))
        return 0;
    if (ends_with(in->path, ".parquet") || in->rg_end)
        return 1;
    if (in->url)
        return 0;
    int fd = open(in->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* the ordinary open says why */
    char head[4];
    ssize_t n = pread(fd, head, sizeof(head), 0);
    close(fd);
    return n == (ssize_t)sizeof(head) && sl_parquet_magic(head, sizeof(head));
}

static int remote_read_at(void *ctx, uint64_t off, void *buf, size_t n)
{
    return sl_remote_read_at(ctx, off, buf, n);
}

static void remote_close(void *ctx)
{
    sl_remote_close(ctx);
}

/* The whole file (a part's file_size, else its listed size), local through pread(2) or
 * remote by range requests: the footer, then the column chunks of the row groups read. */
static int open_file(struct sl_parquet **pq, const struct sl_input *in)
{
    struct sl_pread pr;
    uint64_t size = in->file_size ? in->file_size : in->size;
    int rc;
    if (in->url) {
        struct sl_remote *r;
        if ((rc = sl_remote_open(&r, in->url, (int64_t)size)))
            return rc;
        pr = (struct sl_pread){ sl_remote_size(r), remote_read_at, remote_close, r };
    } else if ((rc = sl_pread_file(&pr, in->path, size))) {
        return rc;
    }
    return sl_parquet_open(pq, &pr, in->path);
}

int sl_input_parquet(struct sl_source **out, const struct sl_input *in, const char *text_key,
                     const char *id_key)
{
    *out = NULL;
    if (!is_parquet(in))
        return 0;
    struct sl_parquet *pq;
    int rc = open_file(&pq, in);
    if (rc)
        return rc;
    struct sl_parquet_opts po = { text_key, id_key };
    *out = sl_parquet_source(pq, in->rg_first, in->rg_end, &po, in->path);
    return 1;
}

static uint64_t unit_bytes(void)
{
    const char *e = getenv("SLUICE_PARQUET_UNIT_BYTES"); /* tests: small files split too */
    char *end;
    unsigned long long v = e ? strtoull(e, &end, 10) : 0;
    return v && e && *end == '\0' ? (uint64_t)v : SL_PARQUET_UNIT_BYTES;
}

/* "d/x.parquet", first row group 3 -> "d/x@rg3.parquet". */
static char *part_name(const char *rel, size_t first)
{
    size_t n = strlen(rel);
    if (ends_with(rel, ".parquet"))
        n -= strlen(".parquet");
    return sl_xasprintf("%.*s@rg%zu.parquet", (int)n, rel, first);
}

int sl_inputs_split_parquet(struct sl_inputs *in)
{
    uint64_t target = unit_bytes();
    for (size_t i = 0; i < in->n; i++) {
        struct sl_input *f = &in->v[i];
        if (f->size <= target || f->rg_end || !is_parquet(f))
            continue;
        struct sl_parquet *pq;
        if (open_file(&pq, f))
            continue; /* stays whole: reading it reports the damage */
        size_t *b, k = sl_parquet_split(pq, target, &b);
        if (k > 1) {
            in->v = sl_xrealloc(in->v, (in->n + k - 1) * sizeof(*in->v));
            f = &in->v[i];
            memmove(f + k, f + 1, (in->n - i - 1) * sizeof(*f));
            struct sl_input whole = *f;
            for (size_t p = 0; p < k; p++) {
                struct sl_input *part = &in->v[i + p];
                *part = whole;
                part->path = sl_xstrdup(whole.path);
                part->url = whole.url ? sl_xstrdup(whole.url) : NULL;
                part->rel = part_name(whole.rel, b[p]);
                part->rg_first = b[p];
                part->rg_end = b[p + 1];
                part->file_size = whole.size;
                part->size = 0;
                for (size_t r = b[p]; r < b[p + 1]; r++)
                    part->size += sl_parquet_rg_bytes(pq, r);
            }
            free(whole.path);
            free(whole.rel);
            free(whole.url);
            in->n += k - 1;
            i += k - 1;
        }
        free(b);
        sl_parquet_close(pq);
    }
    return 0;
}
