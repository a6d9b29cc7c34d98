/* Operand expansion (files, directories, stage output directories, each file once), the
 * planned-size reading of inputs, and size balancing. */
#include "core/inputs.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/jsonl.h"
#include "core/remote.h"
#include "core/stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const sl_jsonl_exts[] = { ".jsonl", ".jsonl.zst", ".jsonl.gz", ".json.gz",
                                      ".jsonl.bz2", ".json.zst", ".ndjson", ".parquet", NULL };

/* The directories walked so far, by (device, inode): open addressing, grown at half full. */
struct dirset {
    uint64_t *k; /* 2 per slot: dev, ino + 1 (0: empty) */
    size_t n, cap;
};

/* The slot of (dev, ino), or the empty slot where it would go (cap > n). */
static size_t dirset_slot(const struct dirset *d, uint64_t dev, uint64_t ino)
{
    /* two odd 64-bit multipliers (2^64 / the golden ratio, and xxHash's PRIME64_2) mix
     * both fields into the high bits, which the shift brings down */
    uint64_t h = dev * 0x9E3779B97F4A7C15ull ^ ino * 0xC2B2AE3D27D4EB4Full;
    size_t i = (size_t)(h >> 32) & (d->cap - 1);
    while (d->k[2 * i + 1] && !(d->k[2 * i] == dev && d->k[2 * i + 1] == ino + 1))
        i = (i + 1) & (d->cap - 1);
    return i;
}

static int dirset_has(const struct dirset *d, const struct stat *st)
{
    return d->cap && d->k[2 * dirset_slot(d, (uint64_t)st->st_dev, (uint64_t)st->st_ino) + 1];
}

/* 1 if (dev, ino) was already in the set, else adds it and returns 0. */
static int dirset_add(struct dirset *d, uint64_t dev, uint64_t ino)
{
    if (2 * (d->n + 1) > d->cap) {
        struct dirset g = { NULL, 0, d->cap ? d->cap * 2 : 64 };
        g.k = sl_xcalloc(g.cap * 2, sizeof(uint64_t));
        for (size_t i = 0; i < d->cap; i++)
            if (d->k[2 * i + 1])
                dirset_add(&g, d->k[2 * i], d->k[2 * i + 1] - 1);
        free(d->k);
        *d = g;
    }
    size_t i = dirset_slot(d, dev, ino);
    if (d->k[2 * i + 1])
        return 1;
    d->k[2 * i] = dev;
    d->k[2 * i + 1] = ino + 1;
    d->n++;
    return 0;
}

struct list {
    struct sl_input *v;
    size_t n, cap;
    struct dirset dirs;
};

static void fill(struct sl_input *in, const char *path, const char *rel, const struct stat *st)
{
    in->path = sl_xstrdup(path);
    in->url = NULL;
    in->rel = sl_xstrdup(rel);
    in->size = (uint64_t)st->st_size;
    in->mtime = (int64_t)st->st_mtime;
    in->mode = (unsigned)st->st_mode;
    in->dev = (uint64_t)st->st_dev;
    in->ino = (uint64_t)st->st_ino;
    in->rg_first = in->rg_end = 0;
    in->file_size = in->size;
    if (!S_ISREG(st->st_mode))
        in->size = 0; /* a FIFO's or device's st_size says nothing about what it gives */
}

static void push(struct list *l, const char *path, const char *rel, const struct stat *st)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 32;
        l->v = sl_xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    fill(&l->v[l->n++], path, rel, st);
}

/* The objects of a remote operand (core/remote.h), as inputs: regular files of no device,
 * told apart by a hash of their URL (an operand given twice is read once). */
static int push_remote(struct list *l, const char *op, const char *const *exts)
{
    struct sl_remote_list rl = { NULL, 0, 0 };
    int rc = sl_remote_expand(&rl, op, exts);
    for (size_t i = 0; !rc && i < rl.n; i++) {
        struct stat st = { .st_mode = S_IFREG, .st_dev = (dev_t)-1 };
        st.st_size = (off_t)rl.v[i].size;
        st.st_ino = (ino_t)sl_hash64(rl.v[i].url, strlen(rl.v[i].url), 0);
        push(l, rl.v[i].shown, rl.v[i].rel, &st);
        l->v[l->n - 1].url = sl_xstrdup(rl.v[i].url);
    }
    sl_remote_list_release(&rl);
    return rc;
}

static int accepted(const char *name, const char *const *exts)
{
    if (!exts)
        return 1;
    size_t n = strlen(name);
    for (size_t i = 0; exts[i]; i++) {
        size_t e = strlen(exts[i]);
        if (n > e && strcmp(name + n - e, exts[i]) == 0)
            return 1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files under dir (whose stat is dst), unless dir was walked already. */
static int walk(struct list *l, const char *dir, const struct stat *dst, const char *rel,
                const char *const *exts, int depth)
{
    if (dirset_add(&l->dirs, (uint64_t)dst->st_dev, (uint64_t)dst->st_ino))
        return 0; /* reached again through a link: its files are listed once */
    if (depth > 64)
        return sl_err_set(SL_ERR_IO, "directory '%s' is nested too deeply", dir);
    DIR *d = opendir(dir);
    if (!d)
        return sl_err_set(SL_ERR_IO, "cannot read directory '%s': %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue; /* hidden files, temporaries, . and .. */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = sl_xrealloc(names, cap * sizeof(*names));
        }
        names[n++] = sl_xstrdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_str);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char *path = sl_xasprintf("%s/%s", dir, names[i]);
        char *r = rel[0] ? sl_xasprintf("%s/%s", rel, names[i]) : sl_xstrdup(names[i]);
        struct stat st;
        if (!rc && stat(path, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                rc = walk(l, path, &st, r, exts, depth + 1);
            else if (S_ISREG(st.st_mode) && accepted(names[i], exts))
                push(l, path, r, &st);
        }
        free(path);
        free(r);
        free(names[i]);
    }
    free(names);
    return rc;
}

/* A sluice output directory: take the outputs its manifest lists. 1 if used, 0 if not a
 * stage directory, <0 on error. */
static int from_manifest(struct list *l, const char *dir)
{
    char *mpath = sl_xasprintf("%s/manifest.json", dir);
    struct stat st;
    if (stat(mpath, &st) != 0) {
        free(mpath);
        return 0;
    }
    struct json_object *m = json_object_from_file(mpath);
    struct json_object *outs = NULL, *ver = NULL;
    int used = 0, rc = 0;
    if (m && json_object_object_get_ex(m, "sluice_version", &ver) &&
        json_object_object_get_ex(m, "outputs", &outs) && json_object_is_type(outs, json_type_array)) {
        used = 1;
        size_t n = json_object_array_length(outs);
        for (size_t i = 0; i < n && !rc; i++) {
            struct json_object *o = json_object_array_get_idx(outs, i), *p = NULL;
            if (!json_object_object_get_ex(o, "path", &p) || !json_object_is_type(p, json_type_string))
                continue;
            const char *rel = json_object_get_string(p);
            char *path = sl_xasprintf("%s/%s", dir, rel);
            struct stat fst;
            if (stat(path, &fst) != 0)
                rc = sl_err_set(SL_ERR_NOTFOUND, "'%s' is listed in '%s' but missing", path, mpath);
            else
                push(l, path, rel, &fst);
            free(path);
        }
    }
    json_object_put(m);
    free(mpath);
    return rc ? rc : used;
}

struct dupkey {
    uint64_t dev, ino;
    size_t idx;
};

static int cmp_dupkey(const void *a, const void *b)
{
    const struct dupkey *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int sl_inputs_expand(struct sl_inputs *in, const char *const *operands, size_t n,
                     const char *const *exts)
{
    struct list l = { NULL, 0, 0, { NULL, 0, 0 } };
    int rc = 0;
    in->v = NULL;
    in->n = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *op = operands[i];
        struct stat st;
        if (sl_remote_is_url(op)) {
            rc = push_remote(&l, op, exts);
            continue;
        }
        if (stat(op, &st) != 0) {
            rc = sl_err_set(SL_ERR_NOTFOUND, "cannot read input '%s': %s", op, strerror(errno));
            break;
        }
        if (S_ISDIR(st.st_mode) && dirset_has(&l.dirs, &st))
            continue; /* walked already, under an earlier operand */
        if (S_ISDIR(st.st_mode)) {
            size_t before = l.n;
            char *dir = sl_xstrdup(op);
            size_t dl = strlen(dir);
            while (dl > 1 && dir[dl - 1] == '/')
                dir[--dl] = '\0';
            rc = from_manifest(&l, dir);
            if (rc == 0)
                rc = walk(&l, dir, &st, "", exts, 0);
            else if (rc > 0) {
                /* a stage directory stands for its outputs: not walked below another */
                dirset_add(&l.dirs, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
                rc = 0;
            }
            if (!rc && l.n == before) {
                struct sl_buf b = SL_BUF_INIT;
                for (size_t k = 0; exts && exts[k]; k++)
                    sl_buf_printf(&b, "%s%s", k ? " " : "", exts[k]);
                rc = sl_err_set(SL_ERR_NOTFOUND, "directory '%s' has no input files%s%s%s", op,
                                b.len ? " (looked for " : "", b.len ? b.data : "", b.len ? ")" : "");
                sl_buf_release(&b);
            }
            free(dir);
        } else {
            const char *slash = strrchr(op, '/');
            push(&l, op, slash ? slash + 1 : op, &st);
        }
    }
    free(l.dirs.k);
    if (rc) {
        in->v = l.v;
        in->n = l.n;
        sl_inputs_release(in);
        return rc;
    }
    /* one entry per file (by device and inode), the first name found */
    struct dupkey *keys = sl_xcalloc(l.n ? l.n : 1, sizeof(*keys));
    char *drop = sl_xcalloc(l.n ? l.n : 1, 1);
    for (size_t i = 0; i < l.n; i++) {
        keys[i].dev = l.v[i].dev;
        keys[i].ino = l.v[i].ino;
        keys[i].idx = i;
    }
    qsort(keys, l.n, sizeof(*keys), cmp_dupkey);
    for (size_t i = 1; i < l.n; i++)
        if (keys[i].dev == keys[i - 1].dev && keys[i].ino == keys[i - 1].ino)
            drop[keys[i].idx] = 1;
    size_t w = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (drop[i]) {
            sl_input_release(&l.v[i]);
        } else {
            l.v[w++] = l.v[i];
        }
    }
    free(keys);
    free(drop);
    in->v = l.v;
    in->n = w;
    return sl_inputs_split_parquet(in);
}

void sl_inputs_release(struct sl_inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        sl_input_release(&in->v[i]);
    free(in->v);
    in->v = NULL;
    in->n = 0;
}

int sl_input_from_path(struct sl_input *in, const char *path)
{
    struct stat st;
    memset(in, 0, sizeof(*in));
    if (stat(path, &st) != 0)
        return sl_err_set(SL_ERR_NOTFOUND, "cannot read input '%s': %s", path, strerror(errno));
    const char *slash = strrchr(path, '/');
    fill(in, path, slash ? slash + 1 : path, &st);
    return 0;
}

void sl_input_release(struct sl_input *in)
{
    free(in->path);
    free(in->url);
    free(in->rel);
    in->path = in->url = in->rel = NULL;
}

const char *sl_input_kind(const struct sl_input *in)
{
    mode_t m = (mode_t)in->mode;
    return S_ISREG(m)    ? "a regular file"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISDIR(m)  ? "a directory"
                         : "not a regular file";
}

/* An input as planned: a regular file up to its listed size, anything else to its end. */
struct input_source {
    struct sl_source base;
    int fd;
    int capped;       /* a regular file: stop at `planned` */
    uint64_t planned; /* in->size */
    uint64_t pos;     /* bytes given so far */
};

static ssize_t input_read(struct sl_source *src, void *buf, size_t n)
{
    struct input_source *s = (struct input_source *)src;
    if (s->capped && n > s->planned - s->pos)
        n = (size_t)(s->planned - s->pos);
    if (n == 0)
        return 0;
    ssize_t r;
    do
        r = read(s->fd, buf, n);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return sl_err_set(SL_ERR_IO, "cannot read input '%s' at byte %llu: %s", src->name,
                          (unsigned long long)s->pos, strerror(errno));
    if (r == 0 && s->capped)
        return sl_err_set(SL_ERR_IO,
                          "input '%s' is shorter than when the run began: it ends at byte %llu "
                          "of %llu\nhint: an input must not change while a stage reads it; run "
                          "the command again to read it as it is now",
                          src->name, (unsigned long long)s->pos, (unsigned long long)s->planned);
    s->pos += (uint64_t)r;
    return r;
}

static void input_close(struct sl_source *src)
{
    struct input_source *s = (struct input_source *)src;
    close(s->fd);
    free(src->name);
    free(s);
}

int sl_input_source(struct sl_source **out, const struct sl_input *in)
{
    *out = NULL;
    if (in->url) /* a remote object: read in ranges up to its listed size */
        return sl_remote_input_source(out, in->url, in->size);
    int fd = open(in->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_err_set(SL_ERR_IO, "cannot read input '%s': %s", in->path, strerror(errno));
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    struct input_source *s = sl_xcalloc(1, sizeof(*s));
    s->base.read = input_read;
    s->base.close = input_close;
    s->base.name = sl_xstrdup(in->path);
    s->fd = fd;
    s->capped = S_ISREG((mode_t)in->mode);
    s->planned = in->size;
    *out = &s->base;
    return 0;
}

/* A Parquet input gives its rows as JSONL (sl_input_parquet), any other its bytes. */
static int open_source(struct sl_source **src, const struct sl_input *in,
                       const struct sl_jsonl_opts *jo)
{
    int rc = sl_input_parquet(src, in, jo ? jo->text_key : NULL, jo ? jo->id_key : NULL);
    return rc ? (rc < 0 ? rc : 0) : sl_input_source(src, in);
}

int sl_input_reader(struct sl_reader **out, const struct sl_input *in,
                    const struct sl_reader_opts *opts)
{
    struct sl_source *src;
    *out = NULL;
    int rc = open_source(&src, in, NULL);
    return rc ? rc : sl_reader_open_source(out, src, opts);
}

int sl_input_jsonl(struct sl_jsonl_reader **out, const struct sl_input *in,
                   const struct sl_jsonl_opts *opts)
{
    struct sl_source *src;
    *out = NULL;
    int rc = open_source(&src, in, opts);
    return rc ? rc : sl_jsonl_open_source(out, src, opts);
}

int sl_input_docs(const struct sl_input *in, const struct sl_jsonl_opts *opts,
                  int (*fn)(void *ctx, struct sl_jsonl_reader *r, struct sl_doc *d), void *ctx)
{
    struct sl_jsonl_reader *r;
    int rc = sl_input_jsonl(&r, in, opts);
    if (!rc)
        rc = sl_jsonl_each(r, fn, ctx);
    sl_jsonl_close(r);
    return rc;
}

uint64_t sl_inputs_total_size(const struct sl_inputs *in)
{
    uint64_t t = 0;
    for (size_t i = 0; i < in->n; i++)
        t += in->v[i].size;
    return t;
}

struct item {
    uint64_t size;
    size_t idx;
};

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

void sl_assign_by_size(const uint64_t *sizes, size_t n, int nranks, int *owner)
{
    struct item *it = sl_xcalloc(n ? n : 1, sizeof(*it));
    uint64_t *load = sl_xcalloc((size_t)nranks, sizeof(*load));
    for (size_t i = 0; i < n; i++) {
        it[i].size = sizes[i];
        it[i].idx = i;
    }
    qsort(it, n, sizeof(*it), cmp_item);
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        for (int r = 1; r < nranks; r++)
            if (load[r] < load[best])
                best = r;
        owner[it[i].idx] = best;
        /* count empty files as one byte so they still spread */
        load[best] += it[i].size ? it[i].size : 1;
    }
    free(it);
    free(load);
}
