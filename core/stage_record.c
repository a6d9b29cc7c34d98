/* A stage's records and manifest: one record per finished unit (its counts, and the size
 * and hash of its files) under OUT/.sluice, what a resumed run checks its outputs against,
 * and the manifest that rank 0 sums from them when the stage finishes. */
#include "core/stage.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/manifest.h"
#include "core/progress.h"
#include "core/stage_remote.h"
#include "core/world.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *record_path(const struct sl_stage *st, const char *name)
{
    return sl_xasprintf("%s/%s.json", st->meta_dir, name);
}

/* Size and XXH3-64 of a file's bytes. 0, or <0 when it cannot be read. */
static int file_fingerprint(const char *path, uint64_t *size, uint64_t *hash)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return sl_err_set(SL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    static __thread char buf[1 << 16];
    struct sl_hasher h;
    sl_hasher_init(&h, 0);
    uint64_t n = 0;
    int rc = 0;
    for (;;) {
        ssize_t k = read(fd, buf, sizeof(buf));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = sl_err_set(SL_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
            break;
        }
        if (k == 0)
            break;
        sl_hasher_update(&h, buf, (size_t)k);
        n += (uint64_t)k;
    }
    close(fd);
    *hash = sl_hasher_final(&h);
    *size = n;
    return rc;
}

/* Does the file at OUT/rel still have the size and hash the record gives (o: an object
 * with "bytes" and "xxh3"; without them, existing is enough)? */
static int file_matches(const struct sl_stage *st, const char *rel, struct json_object *o)
{
    char *path = sl_xasprintf("%s/%s", st->cfg.out_dir, rel);
    struct json_object *jb = NULL, *jh = NULL;
    struct stat sb;
    int ok = stat(path, &sb) == 0;
    if (ok && json_object_object_get_ex(o, "bytes", &jb))
        ok = (uint64_t)sb.st_size == (uint64_t)json_object_get_uint64(jb);
    if (ok && json_object_object_get_ex(o, "bytes", &jb) &&
        json_object_object_get_ex(o, "xxh3", &jh)) {
        uint64_t size = 0, hash = 0;
        char hex[17];
        ok = (uint64_t)sb.st_size == (uint64_t)json_object_get_uint64(jb) &&
             file_fingerprint(path, &size, &hash) == 0;
        snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)hash);
        ok = ok && size == (uint64_t)json_object_get_uint64(jb) &&
             !strcmp(hex, json_object_get_string(jh));
    }
    free(path);
    return ok;
}

int sl_stage_done(struct sl_stage *st, const char *name)
{
    if (!st->resumed)
        return 0;
    if (st->remote)
        return sl_stage_remote_done(st, name);
    char *rp = record_path(st, name);
    struct json_object *rec = json_object_from_file(rp), *files = NULL;
    int done = 0;
    if (rec && json_object_object_get_ex(rec, "files", &files) &&
        json_object_is_type(files, json_type_array)) {
        /* the unit's files as recorded: each must be there, whole */
        done = 1;
        for (size_t i = 0; done && i < json_object_array_length(files); i++) {
            struct json_object *f = json_object_array_get_idx(files, i), *p = NULL;
            done = json_object_object_get_ex(f, "path", &p) &&
                   file_matches(st, json_object_get_string(p), f);
        }
    } else if (rec) {
        done = file_matches(st, name, rec);
    }
    json_object_put(rec);
    free(rp);
    return done;
}

static void put_fingerprint(const struct sl_stage *st, struct sl_buf *b, const char *rel)
{
    char *path = sl_xasprintf("%s/%s", st->cfg.out_dir, rel);
    uint64_t size, hash;
    struct stat sb;
    if (st->cfg.size_only_records) {
        if (stat(path, &sb) == 0)
            sl_buf_printf(b, ",\"bytes\":%llu", (unsigned long long)sb.st_size);
    } else if (file_fingerprint(path, &size, &hash) == 0) {
        sl_buf_printf(b, ",\"bytes\":%llu,\"xxh3\":\"%016llx\"", (unsigned long long)size,
                      (unsigned long long)hash);
    }
    free(path);
}

int sl_stage_record(struct sl_stage *st, const char *name, const struct sl_counters *c)
{
    return sl_stage_record_files(st, name, c, NULL, (size_t)-1);
}

int sl_stage_record_files(struct sl_stage *st, const char *name, const struct sl_counters *c,
                          const struct sl_stage_file *files, size_t nfiles)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "{\"unit\":");
    sl_buf_json_str(&b, name, strlen(name));
    sl_buf_puts(&b, ",\"counts\":{");
    for (size_t i = 0; i < c->n; i++) {
        if (i)
            sl_buf_putc(&b, ',');
        sl_buf_json_str(&b, c->names[i], strlen(c->names[i]));
        sl_buf_printf(&b, ":%llu", (unsigned long long)c->values[i]);
    }
    char *rp = record_path(st, name);
    struct stat rs;
    if (st->resumed && stat(rp, &rs) == 0) /* recorded before, its output found damaged */
        sl_buf_printf(&b, "%s\"resume_redone_units\":1", c->n ? "," : "");
    sl_buf_putc(&b, '}');
    if (nfiles == (size_t)-1) {
        put_fingerprint(st, &b, name);
    } else {
        sl_buf_puts(&b, ",\"files\":[");
        for (size_t i = 0; i < nfiles; i++) {
            sl_buf_puts(&b, i ? ",{\"path\":" : "{\"path\":");
            sl_buf_json_str(&b, files[i].path, strlen(files[i].path));
            sl_buf_printf(&b, ",\"documents\":%llu", (unsigned long long)files[i].documents);
            put_fingerprint(st, &b, files[i].path);
            sl_buf_putc(&b, '}');
        }
        sl_buf_putc(&b, ']');
    }
    sl_buf_puts(&b, "}\n");
    int rc = sl_write_file_atomic(rp, b.data, b.len);
    if (!rc && st->remote) /* its files, then its record, to the store */
        rc = sl_stage_remote_record(st, name, b.data, b.len);
    free(rp);
    sl_buf_release(&b);
    return rc;
}

/* Sum a unit's record into c; *files (may be NULL) gets its "files" array (a new
 * reference, or NULL when the record has none: the unit's file is its output). */
static int load_record(const struct sl_stage *st, const char *name, struct sl_counters *c,
                       struct json_object **files)
{
    char *rp = record_path(st, name);
    struct json_object *o = json_object_from_file(rp);
    struct json_object *counts = NULL, *fa = NULL;
    int rc = 0;
    if (files)
        *files = NULL;
    if (files && o && json_object_object_get_ex(o, "files", &fa) &&
        json_object_is_type(fa, json_type_array))
        *files = json_object_get(fa);
    if (!o || !json_object_object_get_ex(o, "counts", &counts)) {
        rc = sl_err_set(SL_ERR_NOTFOUND, "no record '%s' for output '%s' (did a rank fail?)", rp,
                        name);
    } else {
        json_object_object_foreach(counts, k, v)
        {
            uint64_t x = (uint64_t)json_object_get_uint64(v);
            size_t kl = strlen(k);
            if (kl >= 4 && strcmp(k + kl - 4, "_max") == 0)
                sl_counters_max(c, k, x);
            else
                sl_counters_add(c, k, x);
        }
    }
    json_object_put(o);
    free(rp);
    return rc;
}

/* The manifest's main counts, always present, in this order. */
static const char *const manifest_main[] = { "documents_in", "documents_out",          "bytes_in",
                                             "bytes_out",    "uncompressed_bytes_out", NULL };

/* The outputs of unit `name` into the manifest: its own file, or the files its record lists
 * (lang=xx/part-...). */
static void unit_outputs(const struct sl_stage *st, struct sl_manifest *m, const char *name,
                         const struct sl_counters *c, struct json_object *files)
{
    size_t nf = files ? json_object_array_length(files) : 1;
    for (size_t k = 0; k < nf; k++) {
        const char *rel = name;
        uint64_t docs = sl_counters_get(c, "documents_out");
        struct json_object *f = files ? json_object_array_get_idx(files, k) : NULL, *v;
        if (f && json_object_object_get_ex(f, "path", &v))
            rel = json_object_get_string(v);
        if (f)
            docs = json_object_object_get_ex(f, "documents", &v)
                       ? (uint64_t)json_object_get_uint64(v)
                       : 0;
        char *path = sl_xasprintf("%s/%s", st->cfg.out_dir, rel);
        struct stat sb;
        uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        free(path);
        struct sl_manifest_figure fig[] = { { "documents", docs }, { "bytes", size } };
        sl_manifest_output(m, rel, fig, 2);
    }
}

static int write_manifest(struct sl_stage *st, char *const *names, size_t n,
                          struct sl_counters *total)
{
    struct sl_manifest_head h = { .stage = st->cfg.stage,
                                  .argc = st->cfg.argc,
                                  .argv = st->cfg.argv,
                                  .started = st->started,
                                  .wall_seconds = sl_now() - st->t0,
                                  .ranks = st->world->size,
                                  .resumed = st->resumed,
                                  .settings_json = st->cfg.settings_json };
    struct sl_manifest m;
    sl_manifest_begin(&m, &h);
    sl_manifest_inputs(&m, st->cfg.inputs);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        struct sl_counters c;
        sl_counters_init(&c);
        struct json_object *files = NULL;
        rc = load_record(st, names[i], &c, &files);
        if (!rc) {
            unit_outputs(st, &m, names[i], &c, files);
            sl_counters_merge(total, &c);
        }
        json_object_put(files);
        sl_counters_release(&c);
    }
    if (rc) {
        sl_manifest_release(&m);
        return rc;
    }
    sl_manifest_counts(&m, manifest_main, total);
    char *mp = sl_xasprintf("%s/manifest.json", st->cfg.out_dir);
    rc = sl_manifest_write(&m, mp);
    free(mp);
    return rc;
}

int sl_stage_finish(struct sl_stage *st, char *const *names, size_t n,
                    const struct sl_counters *extra, struct sl_counters *totals)
{
    struct sl_world *w = st->world;
    int rc = sl_world_barrier(w);
    if (rc)
        return rc;
    int64_t status = 0;
    char msg[SL_ERR_MSG_MAX] = "";
    if (w->rank == 0) {
        struct sl_counters total;
        sl_counters_init(&total);
        if (extra)
            sl_counters_merge(&total, extra);
        status = st->remote ? sl_stage_remote_gather(st, names, n) : 0;
        if (!status)
            status = write_manifest(st, names, n, &total);
        if (!status && st->remote) /* the manifest last */
            status = sl_stage_remote_finish(st);
        if (status)
            snprintf(msg, sizeof(msg), "%s", sl_err_msg());
        if (totals && !status) {
            sl_counters_release(totals);
            *totals = total;
        } else {
            sl_counters_release(&total);
        }
    }
    rc = sl_world_bcast(w, &status, sizeof(status), 0);
    if (!rc)
        rc = sl_world_bcast(w, msg, sizeof(msg), 0);
    if (rc)
        return rc;
    if (status)
        return sl_err_set((int)status, "%s", msg);
    return 0;
}
