/* Remote inputs as a stage opens them (sl_remote_input_source): streamed in ranges, or,
 * with a cache directory, read from a local copy named by the object's URL and ETag, made
 * while the object is first read. */
#include "core/alloc.h"
#include "core/atomic.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/remote.h"
#include "core/stream.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *cache_dir;

void sl_remote_set_cache_dir(const char *dir)
{
    free(cache_dir);
    cache_dir = dir && *dir ? sl_xstrdup(dir) : NULL;
}

/* A source that copies what it gives into a cache entry, committed once the whole object
 * (total bytes) went through; removed when the source closes before that. */
struct tee_source {
    struct sl_source base;
    struct sl_source *src;
    struct sl_atomic_file f;
    uint64_t pos, total;
    int open; /* f is open */
};

static ssize_t tee_read(struct sl_source *s, void *buf, size_t n)
{
    struct tee_source *t = (struct tee_source *)s;
    ssize_t k = t->src->read(t->src, buf, n);
    if (k > 0 && t->open) {
        if (sl_atomic_write(&t->f, buf, (size_t)k) != 0) {
            sl_atomic_abort(&t->f); /* a cache that cannot be written is not a failure */
            t->open = 0;
            sl_err_clear();
        }
        t->pos += (uint64_t)k;
        if (t->open && t->pos == t->total) {
            t->f.no_sync = 1; /* a copy: checked by its size when used, fetched again if bad */
            if (sl_atomic_commit(&t->f) != 0)
                sl_err_clear();
            t->open = 0;
        }
    }
    return k;
}

static void tee_close(struct sl_source *s)
{
    struct tee_source *t = (struct tee_source *)s;
    if (t->open)
        sl_atomic_abort(&t->f);
    t->src->close(t->src);
    free(s->name);
    free(t);
}

/* The cache entry of (url, etag): DIR/XXXXXXXXXXXXXXXX-YYYYYYYYYYYYYYYY, the XXH3 of each. */
static char *entry_path(const char *url, const char *etag)
{
    return sl_xasprintf("%s/%016llx-%016llx", cache_dir,
                        (unsigned long long)sl_hash64(url, strlen(url), 0),
                        (unsigned long long)sl_hash64(etag, strlen(etag), 0));
}

int sl_remote_input_source(struct sl_source **out, const char *url, uint64_t size)
{
    *out = NULL;
    struct sl_remote *r;
    int rc = sl_remote_open(&r, url, (int64_t)size);
    if (rc)
        return rc;
    char etag[128] = "";
    if (!cache_dir || sl_remote_etag(r, etag, sizeof(etag)) != 0 || !etag[0]) {
        sl_err_clear(); /* no cache, or nothing to name the version by: streamed */
        *out = sl_remote_source(r, size);
        return 0;
    }
    char *path = entry_path(url, etag);
    struct stat sb;
    if (stat(path, &sb) == 0 && (uint64_t)sb.st_size == sl_remote_size(r)) {
        struct sl_source *src;
        rc = sl_source_file(&src, path);
        if (!rc) {
            free(src->name); /* messages name the object, not the copy */
            src->name = sl_xstrdup(sl_remote_source_name(r));
            *out = src;
            sl_remote_close(r);
            free(path);
            return 0;
        }
        sl_err_clear();
    }
    struct tee_source *t = sl_xcalloc(1, sizeof(*t));
    t->total = sl_remote_size(r);
    t->src = sl_remote_source(r, size);
    t->base.read = tee_read;
    t->base.close = tee_close;
    t->base.name = sl_xstrdup(t->src->name);
    if (sl_mkdir_p(cache_dir) == 0 && sl_atomic_open(&t->f, path) == 0)
        t->open = 1;
    sl_err_clear();
    free(path);
    *out = &t->base;
    return 0;
}
