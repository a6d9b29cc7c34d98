/* Band index files: zstd streams of fixed records behind a magic and version. */
#include "curate/dedup/lsh_index.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/stream.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_BYTES 20

int dd_index_writer_open(struct dd_index_writer *iw, const char *path, const char *magic)
{
    iw->n = 0;
    struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = 3 };
    int rc = sl_writer_open(&iw->w, path, &wo);
    if (rc)
        return rc;
    uint32_t v = DD_INDEX_VERSION;
    rc = sl_writer_write(iw->w, magic, 8);
    if (!rc)
        rc = sl_writer_write(iw->w, &v, 4);
    return rc;
}

int dd_index_write_recs(struct dd_index_writer *iw, const struct lsh_rec *r, size_t n)
{
    unsigned char b[REC_BYTES * 256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(b + k, &r[i].band, 4);
        memcpy(b + k + 4, &r[i].key, 8);
        memcpy(b + k + 12, &r[i].gid, 8);
        k += REC_BYTES;
        if (k == sizeof(b) || i + 1 == n) {
            int rc = sl_writer_write(iw->w, b, k);
            if (rc)
                return rc;
            k = 0;
        }
    }
    iw->n += n;
    return 0;
}

int dd_index_write_id(struct dd_index_writer *iw, uint64_t gid, const char *id, size_t len)
{
    uint32_t l = (uint32_t)len;
    int rc = sl_writer_write(iw->w, &gid, 8);
    if (!rc)
        rc = sl_writer_write(iw->w, &l, 4);
    if (!rc)
        rc = sl_writer_write(iw->w, id, len);
    iw->n++;
    return rc;
}

int dd_index_writer_commit(struct dd_index_writer *iw)
{
    int rc = sl_writer_commit(iw->w);
    iw->w = NULL;
    return rc;
}

void dd_index_writer_abort(struct dd_index_writer *iw)
{
    sl_writer_abort(iw->w);
    iw->w = NULL;
}

/* Read exactly n bytes; 0, 1 at a clean end (nothing read), or an error. */
static int read_exact(struct sl_reader *r, void *buf, size_t n, const char *path, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = sl_reader_read(r, (char *)buf + got, n - got);
        if (k < 0)
            return (int)k;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    if (got == 0)
        return 1;
    if (got < n)
        return sl_err_set(SL_ERR_CORRUPT, "index file '%s' is truncated at byte %llu", path,
                          (unsigned long long)(off + got));
    return 0;
}

static int open_checked(struct sl_reader **r, const char *path, const char *magic)
{
    int rc = sl_reader_open(r, path, NULL);
    if (rc)
        return rc;
    char m[12];
    rc = read_exact(*r, m, 12, path, 0);
    if (rc == 1 || (!rc && memcmp(m, magic, 8)))
        rc = sl_err_set(SL_ERR_FORMAT, "'%s' is not a sluice dedup index file (bad magic)", path);
    uint32_t v;
    memcpy(&v, m + 8, 4);
    if (!rc && v != DD_INDEX_VERSION)
        rc = sl_err_set(SL_ERR_UNSUPPORTED, "index file '%s' has version %u; this sluice reads %u",
                        path, v, DD_INDEX_VERSION);
    if (rc) {
        sl_reader_close(*r);
        *r = NULL;
    }
    return rc;
}

int dd_index_read_recs(const char *path, int (*keep)(uint32_t band, uint64_t key, void *ctx),
                       void *ctx, struct lsh_rec **out, size_t *n, size_t *cap)
{
    struct sl_reader *r;
    int rc = open_checked(&r, path, DD_INDEX_MAGIC_BANDS);
    if (rc)
        return rc;
    unsigned char b[REC_BYTES];
    uint64_t off = 12;
    for (;;) {
        rc = read_exact(r, b, REC_BYTES, path, off);
        if (rc)
            break;
        off += REC_BYTES;
        struct lsh_rec x = { 0, 0, 0, 0 };
        memcpy(&x.band, b, 4);
        memcpy(&x.key, b + 4, 8);
        memcpy(&x.gid, b + 12, 8);
        if (keep && !keep(x.band, x.key, ctx))
            continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 4096;
            *out = sl_xrealloc(*out, sl_mul_size(*cap, sizeof(**out)));
        }
        (*out)[(*n)++] = x;
    }
    sl_reader_close(r);
    return rc == 1 ? 0 : rc;
}

int dd_index_read_ids(const char *path,
                      int (*fn)(uint64_t gid, const char *id, size_t len, void *ctx), void *ctx)
{
    struct sl_reader *r;
    int rc = open_checked(&r, path, DD_INDEX_MAGIC_IDS);
    if (rc)
        return rc;
    struct sl_buf id = SL_BUF_INIT;
    uint64_t off = 12;
    for (;;) {
        unsigned char h[12];
        rc = read_exact(r, h, 12, path, off);
        if (rc)
            break;
        uint64_t gid;
        uint32_t len;
        memcpy(&gid, h, 8);
        memcpy(&len, h + 8, 4);
        if (len > (1u << 20)) {
            rc = sl_err_set(SL_ERR_CORRUPT, "index file '%s': bad id length at byte %llu", path,
                            (unsigned long long)off);
            break;
        }
        sl_buf_reset(&id);
        sl_buf_reserve(&id, len + 1);
        rc = len ? read_exact(r, id.data, len, path, off + 12) : 0;
        if (rc == 1)
            rc = sl_err_set(SL_ERR_CORRUPT, "index file '%s' is truncated", path);
        if (rc)
            break;
        off += 12 + len;
        rc = fn(gid, id.data ? id.data : "", len, ctx);
        if (rc)
            break;
    }
    sl_buf_release(&id);
    sl_reader_close(r);
    return rc == 1 ? 0 : rc;
}

int dd_index_write_meta(const char *dir, const char *settings, uint64_t generation, int parts,
                        const char *backend, const char *redis_prefix)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_printf(&b, "{\n  \"format\": \"sluice-dedup-index\",\n  \"version\": %d,\n"
                      "  \"backend\": \"%s\",\n  \"redis_prefix\": ",
                  DD_INDEX_VERSION, backend);
    if (redis_prefix)
        sl_buf_json_str(&b, redis_prefix, strlen(redis_prefix));
    else
        sl_buf_puts(&b, "null");
    sl_buf_printf(&b, ",\n  \"generation\": %llu,\n  \"parts\": %d,\n  \"settings\": %s\n}\n",
                  (unsigned long long)generation, parts, settings);
    char *path = sl_xasprintf("%s/meta.json", dir);
    struct sl_writer *w;
    struct sl_writer_opts wo = { .codec = SL_CODEC_NONE, .level = 0 };
    int rc = sl_writer_open(&w, path, &wo);
    if (!rc) {
        rc = sl_writer_write(w, b.data, b.len);
        if (!rc)
            rc = sl_writer_commit(w);
        else
            sl_writer_abort(w);
    }
    free(path);
    sl_buf_release(&b);
    return rc;
}

int dd_index_read_meta(const char *dir, char **settings, uint64_t *generation, int *parts,
                       char **backend, char **redis_prefix)
{
    char *path = sl_xasprintf("%s/meta.json", dir);
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_init(&b, 1 << 20);
    int rc = sl_read_file(path, &b);
    struct json_object *o = NULL, *f, *s, *g, *p, *be, *rp = NULL;
    if (!rc) {
        o = json_tokener_parse(b.data ? b.data : "");
        if (!o || !json_object_object_get_ex(o, "format", &f) ||
            strcmp(json_object_get_string(f), "sluice-dedup-index") ||
            !json_object_object_get_ex(o, "settings", &s) ||
            !json_object_object_get_ex(o, "generation", &g) ||
            !json_object_object_get_ex(o, "parts", &p) ||
            !json_object_object_get_ex(o, "backend", &be))
            rc = sl_err_set(SL_ERR_FORMAT, "'%s' is not a sluice dedup index", path);
    } else {
        rc = sl_err_set(rc, "cannot read the dedup index '%s'\nhint: --index-in takes a "
                            "directory written by --index-out",
                        path);
    }
    if (!rc) {
        *settings = sl_xstrdup(json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN));
        *generation = (uint64_t)json_object_get_int64(g);
        *parts = json_object_get_int(p);
        *backend = sl_xstrdup(json_object_get_string(be));
        *redis_prefix = NULL;
        if (json_object_object_get_ex(o, "redis_prefix", &rp) &&
            json_object_is_type(rp, json_type_string))
            *redis_prefix = sl_xstrdup(json_object_get_string(rp));
    }
    json_object_put(o);
    sl_buf_release(&b);
    free(path);
    return rc;
}
