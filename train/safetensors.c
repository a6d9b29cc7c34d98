/* safetensors: atomic writer, mapped and validated reader. */
#include "train/safetensors.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Headers above this are refused (the format's own reader caps them at 100 MB). */
#define ST_MAX_HEADER (100u << 20)

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    { "F64", 8 }, { "F32", 4 }, { "F16", 2 }, { "BF16", 2 }, { "I64", 8 },
    { "I32", 4 }, { "I16", 2 }, { "I8", 1 },  { "U8", 1 },   { "BOOL", 1 },
    { "U16", 2 }, { "U32", 4 }, { "U64", 8 },
};

size_t st_dtype_size(const char *dtype)
{
    for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
        if (!strcmp(dtypes[i].name, dtype))
            return dtypes[i].size;
    return 0;
}

static int write_file(const char *path, const struct st_tensor *t, size_t n,
                      const char *const *metadata, st_fill_fn fill, void *arg)
{
    struct sl_buf h = SL_BUF_INIT;
    sl_buf_putc(&h, '{');
    int first = 1;
    if (metadata && metadata[0]) {
        sl_buf_puts(&h, "\"__metadata__\":{");
        for (size_t i = 0; metadata[i]; i += 2) {
            if (i)
                sl_buf_putc(&h, ',');
            sl_buf_json_str(&h, metadata[i], strlen(metadata[i]));
            sl_buf_putc(&h, ':');
            sl_buf_json_str(&h, metadata[i + 1], strlen(metadata[i + 1]));
        }
        sl_buf_putc(&h, '}');
        first = 0;
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        if (!first)
            sl_buf_putc(&h, ',');
        first = 0;
        sl_buf_json_str(&h, t[i].name, strlen(t[i].name));
        sl_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", t[i].dtype);
        for (int d = 0; d < t[i].ndim; d++)
            sl_buf_printf(&h, "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
        sl_buf_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + t[i].nbytes);
        off += t[i].nbytes;
    }
    sl_buf_putc(&h, '}');
    while (h.len % 8)
        sl_buf_putc(&h, ' ');
    unsigned char len8[8];
    uint64_t hl = h.len;
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)(hl >> (8 * i));

    /* with a fill function: one buffer of the largest tensor's size, refilled per tensor */
    size_t most = 0;
    for (size_t i = 0; fill && i < n; i++)
        most = t[i].nbytes > most ? t[i].nbytes : most;
    void *buf = NULL;
    if (most && !(buf = malloc(most))) {
        sl_buf_release(&h);
        return sl_err_set(SL_ERR_NOMEM, "cannot write '%s': no memory for a tensor of %zu bytes",
                          path, most);
    }
    struct sl_atomic_file f;
    int rc = sl_atomic_open(&f, path);
    if (!rc)
        rc = sl_atomic_write(&f, len8, 8);
    if (!rc)
        rc = sl_atomic_write(&f, h.data, h.len);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!t[i].nbytes)
            continue;
        if (fill && !(rc = fill(arg, i, buf, t[i].nbytes)))
            rc = sl_atomic_write(&f, buf, t[i].nbytes);
        else if (!fill)
            rc = sl_atomic_write(&f, t[i].data, t[i].nbytes);
    }
    if (!rc)
        rc = sl_atomic_commit(&f);
    else
        sl_atomic_abort(&f);
    free(buf);
    sl_buf_release(&h);
    return rc;
}

int st_write(const char *path, const struct st_tensor *t, size_t n, const char *const *metadata)
{
    return write_file(path, t, n, metadata, NULL, NULL);
}

int st_write_fill(const char *path, const struct st_tensor *t, size_t n,
                  const char *const *metadata, st_fill_fn fill, void *arg)
{
    return write_file(path, t, n, metadata, fill, arg);
}

struct st_file {
    char *name;
    const unsigned char *map;
    size_t map_size;
    int mapped;
    struct st_tensor *t;
    char **names;
    size_t n;
    char **meta; /* key, value pairs */
    size_t nmeta;
};

void st_close(struct st_file *f)
{
    if (!f)
        return;
    if (f->mapped && f->map)
        munmap((void *)f->map, f->map_size);
    for (size_t i = 0; i < f->n; i++)
        free(f->names[i]);
    for (size_t i = 0; i < 2 * f->nmeta; i++)
        free(f->meta[i]);
    free(f->meta);
    free(f->names);
    free(f->t);
    free(f->name);
    free(f);
}

static int cmp_range(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
}

/* The shape of tensor `key` into t; *count: its elements, held at just past 2^64 when the
 * product goes beyond (it cannot overflow). */
static int read_shape(struct st_tensor *t, struct json_object *sh, const char *nm,
                      const char *key, __uint128_t *count)
{
    size_t nd = json_object_array_length(sh);
    if (nd > ST_MAX_DIMS)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot read safetensors '%s': tensor '%s' has %zu "
                          "dimensions (at most %d)",
                          nm, key, nd, ST_MAX_DIMS);
    t->ndim = (int)nd;
    *count = 1;
    for (size_t d = 0; d < nd; d++) {
        struct json_object *e = json_object_array_get_idx(sh, d);
        int64_t v = json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : -1;
        if (v < 0 || v > (int64_t)1 << 48)
            return sl_err_set(SL_ERR_FORMAT,
                              "cannot read safetensors '%s': tensor '%s' has a bad "
                              "shape",
                              nm, key);
        t->shape[d] = v;
        if (*count <= (__uint128_t)UINT64_MAX)
            *count *= (uint64_t)v;
    }
    return 0;
}

static int parse(struct st_file *f)
{
    const char *nm = f->name;
    if (f->map_size < 8)
        return sl_err_set(SL_ERR_CORRUPT,
                          "cannot read safetensors '%s': truncated (%zu bytes, "
                          "no header)",
                          nm, f->map_size);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++)
        hl |= (uint64_t)f->map[i] << (8 * i);
    if (hl > ST_MAX_HEADER)
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot read safetensors '%s': header length %llu is not plausible", nm,
                          (unsigned long long)hl);
    if (hl > f->map_size - 8)
        return sl_err_set(SL_ERR_CORRUPT,
                          "cannot read safetensors '%s': truncated: header of %llu bytes, file "
                          "has %zu",
                          nm, (unsigned long long)hl, f->map_size);
    size_t data_size = f->map_size - 8 - (size_t)hl;
    const unsigned char *data = f->map + 8 + hl;
    struct json_tokener *tok = json_tokener_new();
    struct json_object *o = json_tokener_parse_ex(tok, (const char *)f->map + 8, (int)hl);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (!o || jerr != json_tokener_success || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot read safetensors '%s': header is not a JSON object", nm);
    }
    int rc = 0;
    size_t cap = (size_t)json_object_object_length(o);
    f->t = sl_xcalloc(cap ? cap : 1, sizeof(*f->t));
    f->names = sl_xcalloc(cap ? cap : 1, sizeof(char *));
    size_t *ranges = sl_xcalloc(2 * (cap ? cap : 1), sizeof(size_t));
    json_object_object_foreach(o, key, val)
    {
        if (!strcmp(key, "__metadata__")) {
            if (!json_object_is_type(val, json_type_object)) {
                rc = sl_err_set(SL_ERR_FORMAT,
                                "cannot read safetensors '%s': __metadata__ is not "
                                "an object",
                                nm);
                goto out;
            }
            size_t mn = (size_t)json_object_object_length(val);
            f->meta = sl_xcalloc(2 * (mn ? mn : 1), sizeof(char *));
            json_object_object_foreach(val, mk, mv)
            {
                if (!json_object_is_type(mv, json_type_string))
                    continue;
                f->meta[2 * f->nmeta] = sl_xstrdup(mk);
                f->meta[2 * f->nmeta + 1] = sl_xstrdup(json_object_get_string(mv));
                f->nmeta++;
            }
            continue;
        }
        struct json_object *dt, *sh, *of;
        if (!json_object_is_type(val, json_type_object) ||
            !json_object_object_get_ex(val, "dtype", &dt) ||
            !json_object_object_get_ex(val, "shape", &sh) ||
            !json_object_object_get_ex(val, "data_offsets", &of) ||
            !json_object_is_type(dt, json_type_string) ||
            !json_object_is_type(sh, json_type_array) ||
            !json_object_is_type(of, json_type_array) || json_object_array_length(of) != 2) {
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot read safetensors '%s': tensor '%s' needs dtype, shape and "
                            "data_offsets",
                            nm, key);
            goto out;
        }
        struct st_tensor *t = &f->t[f->n];
        f->names[f->n] = sl_xstrdup(key);
        t->name = f->names[f->n];
        f->n++;
        size_t es = st_dtype_size(json_object_get_string(dt));
        if (!es) {
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot read safetensors '%s': tensor '%s' has unknown "
                            "dtype '%s'",
                            nm, key, json_object_get_string(dt));
            goto out;
        }
        for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
            if (!strcmp(dtypes[i].name, json_object_get_string(dt)))
                t->dtype = dtypes[i].name;
        __uint128_t count = 0;
        if ((rc = read_shape(t, sh, nm, key, &count)))
            goto out;
        int64_t b = -1, e = -1;
        struct json_object *ob = json_object_array_get_idx(of, 0),
                           *oe = json_object_array_get_idx(of, 1);
        if (json_object_is_type(ob, json_type_int))
            b = json_object_get_int64(ob);
        if (json_object_is_type(oe, json_type_int))
            e = json_object_get_int64(oe);
        if (b < 0 || e < b || (uint64_t)e > data_size) {
            rc = sl_err_set(SL_ERR_CORRUPT,
                            "cannot read safetensors '%s': truncated or damaged: tensor '%s' "
                            "needs bytes [%lld, %lld) of %zu",
                            nm, key, (long long)b, (long long)e, data_size);
            goto out;
        }
        if (count * es != (__uint128_t)(e - b)) {
            /* a product past 2^64 was printed as its low 64 bits ("needs 0") */
            char need[48];
            if (count * es > UINT64_MAX)
                snprintf(need, sizeof(need), "more than 2^64");
            else
                snprintf(need, sizeof(need), "%llu", (unsigned long long)(count * es));
            rc = sl_err_set(SL_ERR_FORMAT,
                            "cannot read safetensors '%s': tensor '%s' has %lld "
                            "bytes but its shape needs %s",
                            nm, key, (long long)(e - b), need);
            goto out;
        }
        t->data = data + b;
        t->nbytes = (size_t)(e - b);
        ranges[2 * (f->n - 1)] = (size_t)b;
        ranges[2 * (f->n - 1) + 1] = (size_t)e;
    }
    qsort(ranges, f->n, 2 * sizeof(size_t), cmp_range);
    for (size_t i = 1; i < f->n; i++)
        if (ranges[2 * i] < ranges[2 * i - 1]) {
            rc = sl_err_set(SL_ERR_FORMAT, "cannot read safetensors '%s': tensors overlap", nm);
            goto out;
        }
out:
    free(ranges);
    json_object_put(o);
    return rc;
}

int st_open_mem(struct st_file **out, const void *data, size_t n, const char *name)
{
    struct st_file *f = sl_xcalloc(1, sizeof(*f));
    f->name = sl_xstrdup(name);
    f->map = data;
    f->map_size = n;
    int rc = parse(f);
    if (rc) {
        st_close(f);
        f = NULL;
    }
    *out = f;
    return rc;
}

int st_open(struct st_file **out, const char *path)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_err_set(errno == ENOENT ? SL_ERR_NOTFOUND : SL_ERR_IO, "cannot open '%s': %s",
                          path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return sl_err_set(SL_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    }
    struct st_file *f = sl_xcalloc(1, sizeof(*f));
    f->name = sl_xstrdup(path);
    f->map_size = (size_t)sb.st_size;
    if (sb.st_size > 0) {
        void *p = mmap(NULL, f->map_size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            st_close(f);
            return sl_err_set(SL_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
        }
        f->map = p;
        f->mapped = 1;
    }
    close(fd);
    int rc = parse(f);
    if (rc) {
        st_close(f);
        return rc;
    }
    *out = f;
    return 0;
}

size_t st_count(const struct st_file *f)
{
    return f->n;
}

const struct st_tensor *st_at(const struct st_file *f, size_t i)
{
    return i < f->n ? &f->t[i] : NULL;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name))
            return &f->t[i];
    return NULL;
}

const char *st_metadata(const struct st_file *f, const char *key)
{
    for (size_t i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta[2 * i], key))
            return f->meta[2 * i + 1];
    return NULL;
}

int st_read_f32(const struct st_file *f, const char *name, float *out, size_t count)
{
    const struct st_tensor *t = st_find(f, name);
    if (!t)
        return sl_err_set(SL_ERR_NOTFOUND, "safetensors '%s' has no tensor '%s'", f->name, name);
    if (strcmp(t->dtype, "F32") || t->nbytes != count * sizeof(float))
        return sl_err_set(SL_ERR_FORMAT,
                          "safetensors '%s': tensor '%s' is %s with %zu bytes, expected F32 with "
                          "%zu elements",
                          f->name, name, t->dtype, t->nbytes, count);
    memcpy(out, t->data, t->nbytes);
    return 0;
}
