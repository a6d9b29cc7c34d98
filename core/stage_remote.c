/* The S3 side of a stage (core/stage_remote.h): the lock object, the spool, uploads of
 * finished units (one PUT or a multipart upload), their records, resume checks by HEAD,
 * and the manifest last. */
#include "core/stage_remote.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/remote_internal.h"
#include "core/stream.h"
#include "core/stage.h"
#include "core/world.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sl_stage_remote {
    char *url;    /* s3://BUCKET[/PREFIX], without a trailing '/' */
    char *spool;  /* the local mirror */
    int locked;   /* this process created the lock object */
    int finished; /* the manifest is uploaded */
};

/* "s3://BUCKET/PREFIX/rel" (rel "" : the prefix itself). Caller frees. */
static char *object_url(const struct sl_stage_remote *r, const char *rel)
{
    return sl_xasprintf("%s/%s", r->url, rel);
}

static int rm_tree_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

/* Remove what is under dir (not dir itself). */
static void clear_dir(const char *dir)
{
    /* 16 descriptors: the depth walked with one open directory each before reusing */
    nftw(dir, rm_tree_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* GET an object (whole, up to cap) into b. 0, SL_ERR_NOTFOUND, or another error. */
static int get_object(const struct sl_stage_remote *r, const char *rel, struct sl_buf *b,
                      size_t cap)
{
    char *u = object_url(r, rel);
    struct rm_target t;
    int rc = rm_target_init(&t, u);
    free(u);
    if (rc)
        return rc;
    struct rm_resp resp;
    rc = rm_request(&t, t.http, "GET", 0, 0, NULL, cap, &resp);
    if (!rc)
        sl_buf_append(b, resp.body.data ? resp.body.data : "", resp.body.len);
    sl_buf_release(&resp.body);
    rm_target_release(&t);
    return rc;
}

static int send_object(const struct sl_stage_remote *r, const char *rel, const char *query,
                       const char *method, const void *data, size_t n, const char *const *hdrs,
                       struct rm_resp *resp)
{
    char *u = object_url(r, rel);
    struct rm_target t;
    int rc = rm_target_init(&t, u);
    free(u);
    if (rc) {
        memset(resp, 0, sizeof(*resp));
        return rc;
    }
    char *url = query ? sl_xasprintf("%s?%s", t.http, query) : sl_xstrdup(t.http);
    rc = rm_send(&t, url, method, data, n, hdrs, resp);
    free(url);
    rm_target_release(&t);
    return rc;
}

static int put_small(const struct sl_stage_remote *r, const char *rel, const void *data, size_t n,
                     const char *const *hdrs)
{
    struct rm_resp resp;
    int rc = send_object(r, rel, NULL, "PUT", data, n, hdrs, &resp);
    sl_buf_release(&resp.body);
    return rc;
}

/* ---- the lock ------------------------------------------------------------------------ */

static void host_name(char *h, size_t cap)
{
    if (gethostname(h, cap - 1) != 0)
        snprintf(h, cap, "unknown");
    h[cap - 1] = '\0';
}

/* A lock left by a process of this host that is gone. */
static int lock_is_stale(const char *body)
{
    struct json_object *o = json_tokener_parse(body), *jh, *jp;
    char host[256];
    host_name(host, sizeof(host));
    int stale = o && json_object_object_get_ex(o, "host", &jh) &&
                json_object_object_get_ex(o, "pid", &jp) &&
                !strcmp(json_object_get_string(jh), host) &&
                kill((pid_t)json_object_get_int64(jp), 0) != 0 && errno == ESRCH;
    json_object_put(o);
    return stale;
}

static int take_lock(struct sl_stage *st, struct sl_stage_remote *r)
{
    char host[256];
    host_name(host, sizeof(host));
    struct sl_buf cmd = SL_BUF_INIT, body = SL_BUF_INIT;
    sl_buf_puts(&cmd, "sluice");
    for (int i = 0; i < st->cfg.argc; i++) {
        char *shown = strstr(st->cfg.argv[i], "://") ? sl_url_display(st->cfg.argv[i]) : NULL;
        sl_buf_printf(&cmd, " %s", shown ? shown : st->cfg.argv[i]);
        free(shown);
    }
    sl_buf_puts(&body, "{\"host\":");
    sl_buf_json_str(&body, host, strlen(host));
    sl_buf_printf(&body, ",\"pid\":%ld,\"started\":\"%s\",\"command\":", (long)getpid(),
                  st->started);
    sl_buf_json_str(&body, cmd.data, cmd.len);
    sl_buf_puts(&body, "}\n");
    static const char *const cond[] = { "If-None-Match: *", NULL };
    int rc = 0;
    for (int tries = 0; tries < 2; tries++) {
        struct rm_resp resp;
        rc = send_object(r, ".sluice/lock", NULL, "PUT", body.data, body.len, cond, &resp);
        long status = resp.status;
        sl_buf_release(&resp.body);
        if (!rc) {
            r->locked = 1;
            break;
        }
        /* 412: it exists; 409: another conditional write to it is under way */
        if (status != 412 && status != 409)
            break;
        struct sl_buf holder = SL_BUF_INIT;
        int grc = get_object(r, ".sluice/lock", &holder, 1u << 16);
        if (!grc && tries == 0 && lock_is_stale(holder.data ? holder.data : "")) {
            struct rm_resp d;
            send_object(r, ".sluice/lock", NULL, "DELETE", NULL, 0, NULL, &d);
            sl_buf_release(&d.body);
            sl_buf_release(&holder);
            continue;
        }
        if (holder.len && holder.data[holder.len - 1] == '\n')
            holder.data[--holder.len] = '\0';
        rc = sl_err_set(SL_ERR_BUSY,
                        "output '%s' is in use by another run: %s\nhint: wait for it to end; "
                        "if no such run is alive, delete the object '%s/.sluice/lock'",
                        r->url, holder.len ? holder.data : "(its lock could not be read)", r->url);
        sl_buf_release(&holder);
        break;
    }
    sl_buf_release(&cmd);
    sl_buf_release(&body);
    return rc;
}

/* ---- begin ----------------------------------------------------------------------------- */

/* Rank 0: the lock, the spool cleared, the store's plan in it; a prefix that holds a
 * manifest but no plan is another tool's or an unknown run's (refused without --force). */
static int rank0_begin(struct sl_stage *st, struct sl_stage_remote *r)
{
    int rc = take_lock(st, r);
    if (rc)
        return rc;
    clear_dir(r->spool);
    rc = sl_mkdir_p(st->meta_dir);
    if (rc)
        return rc;
    struct sl_buf plan = SL_BUF_INIT;
    rc = get_object(r, ".sluice/plan.json", &plan, 256u << 20);
    if (!rc) {
        char *p = sl_xasprintf("%s/plan.json", st->meta_dir);
        rc = sl_write_file_atomic(p, plan.data, plan.len);
        free(p);
    } else if (rc == SL_ERR_NOTFOUND) {
        sl_err_clear();
        struct sl_buf m = SL_BUF_INIT;
        rc = get_object(r, "manifest.json", &m, 256u << 20);
        if (!rc && !st->cfg.force)
            rc = sl_err_set(SL_ERR_EXISTS,
                            "output '%s' already has 'manifest.json' from an unknown run\n"
                            "hint: use --force to replace it, or choose another --out",
                            r->url);
        else if (!rc || rc == SL_ERR_NOTFOUND)
            rc = 0, sl_err_clear();
        sl_buf_release(&m);
    }
    sl_buf_release(&plan);
    return rc;
}

int sl_stage_remote_begin(struct sl_stage *st)
{
    struct sl_stage_remote *r = sl_xcalloc(1, sizeof(*r));
    r->url = sl_xstrdup(st->cfg.out_dir);
    size_t n = strlen(r->url);
    while (n > 5 && r->url[n - 1] == '/')
        r->url[--n] = '\0';
    st->remote = r;
    if (strncmp(r->url, "s3://", 5) != 0 || !r->url[5])
        return sl_err_set(SL_ERR_USAGE,
                          "cannot write to '%s': --out may be a directory or "
                          "s3://BUCKET/PREFIX",
                          st->cfg.out_dir);
    const char *tmp = getenv("TMPDIR");
    r->spool = sl_xasprintf("%s/sluice-out-%016llx", tmp && *tmp ? tmp : "/tmp",
                            (unsigned long long)sl_hash64(r->url, strlen(r->url), 0));
    st->cfg.out_dir = r->spool;
    free(st->meta_dir);
    st->meta_dir = sl_xasprintf("%s/.sluice", r->spool);
    int64_t status = 0;
    char msg[SL_ERR_MSG_MAX] = "";
    if (st->world->rank == 0) {
        status = rank0_begin(st, r);
        if (status)
            snprintf(msg, sizeof(msg), "%s", sl_err_msg());
    }
    int rc = sl_world_bcast(st->world, &status, sizeof(status), 0);
    if (!rc)
        rc = sl_world_bcast(st->world, msg, sizeof(msg), 0);
    if (!rc && status)
        rc = sl_err_set((int)status, "%s", msg);
    if (!rc)
        rc = sl_mkdir_p(st->meta_dir);
    return rc;
}

int sl_stage_remote_prepared(struct sl_stage *st)
{
    if (st->resumed)
        return 0;
    struct sl_buf plan = SL_BUF_INIT;
    char *p = sl_xasprintf("%s/plan.json", st->meta_dir);
    int rc = sl_read_file(p, &plan);
    free(p);
    if (!rc)
        rc = put_small(st->remote, ".sluice/plan.json", plan.data, plan.len, NULL);
    sl_buf_release(&plan);
    return rc;
}

/* ---- units ------------------------------------------------------------------------------ */

/* Replace the spool's copy of a file by a sparse file of its size: what the manifest reads
 * (its size), without its blocks. */
static int sparse_stand_in(const char *path, uint64_t size)
{
    char *dir = sl_xstrdup(path), *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        sl_mkdir_p(dir);
    }
    free(dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = fd < 0 || ftruncate(fd, (off_t)size) != 0
                 ? sl_err_set(SL_ERR_IO, "cannot write '%s': %s", path, strerror(errno))
                 : 0;
    if (fd >= 0)
        close(fd);
    return rc;
}

static int read_full(int fd, char *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* The multipart upload of fd's size bytes to rel: parts of `part` bytes; aborted on failure. */
static int put_multipart(const struct sl_stage_remote *r, const char *rel, int fd, uint64_t size,
                         size_t part, const char *const *hdrs, const char *path)
{
    struct rm_resp resp;
    int rc = send_object(r, rel, "uploads=", "POST", NULL, 0, hdrs, &resp);
    struct sl_buf id = SL_BUF_INIT, q = SL_BUF_INIT, done = SL_BUF_INIT;
    if (!rc && !rm_s3_xml_text(resp.body.data, resp.body.len, "UploadId", &id))
        rc = sl_err_set(SL_ERR_NET, "cannot write '%s/%s': the store gave no upload id", r->url,
                        rel);
    sl_buf_release(&resp.body);
    char *buf = rc ? NULL : sl_xmalloc(part);
    sl_buf_puts(&done, "<CompleteMultipartUpload>");
    for (uint64_t off = 0, k = 1; !rc && off < size; off += part, k++) {
        size_t n = size - off < part ? (size_t)(size - off) : part;
        if (read_full(fd, buf, n, off) != 0) {
            rc = sl_err_set(SL_ERR_IO, "cannot read '%s' at byte %llu: %s", path,
                            (unsigned long long)off, strerror(errno));
            break;
        }
        sl_buf_reset(&q);
        sl_buf_printf(&q, "partNumber=%llu&uploadId=", (unsigned long long)k);
        rm_s3_escape(&q, id.data, 0);
        rc = send_object(r, rel, q.data, "PUT", buf, n, NULL, &resp);
        if (!rc && !resp.etag[0])
            rc = sl_err_set(SL_ERR_NET,
                            "cannot write '%s/%s': the store gave no ETag for part "
                            "%llu",
                            r->url, rel, (unsigned long long)k);
        if (!rc) {
            sl_buf_printf(&done, "<Part><PartNumber>%llu</PartNumber><ETag>",
                          (unsigned long long)k);
            sl_buf_xml_text(&done, resp.etag);
            sl_buf_puts(&done, "</ETag></Part>");
        }
        sl_buf_release(&resp.body);
    }
    free(buf);
    sl_buf_puts(&done, "</CompleteMultipartUpload>");
    if (id.len) {
        sl_buf_reset(&q);
        sl_buf_puts(&q, "uploadId=");
        rm_s3_escape(&q, id.data, 0);
        if (!rc) {
            /* said, or libcurl calls it a form and servers may parse it as one */
            static const char *const xml[] = { "Content-Type: application/xml", NULL };
            rc = send_object(r, rel, q.data, "POST", done.data, done.len, xml, &resp);
            /* CompleteMultipartUpload may fail after its 200: the error is in the body */
            if (!rc && resp.body.data && memmem(resp.body.data, resp.body.len, "<Error>", 7))
                rc = sl_err_set(SL_ERR_NET,
                                "cannot write '%s/%s': the store did not complete "
                                "the upload",
                                r->url, rel);
            sl_buf_release(&resp.body);
        }
        if (rc) { /* nothing half-made stays behind, billed */
            char msg[SL_ERR_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s", sl_err_msg());
            send_object(r, rel, q.data, "DELETE", NULL, 0, NULL, &resp);
            sl_buf_release(&resp.body);
            sl_err_set(rc, "%s", msg);
        }
    }
    sl_buf_release(&id);
    sl_buf_release(&q);
    sl_buf_release(&done);
    return rc;
}

/* Upload the spool's file rel (with its XXH3 in the metadata, when known), then leave a
 * sparse stand-in of its size. */
static int upload_file(struct sl_stage *st, const char *rel, const char *xxh3)
{
    struct sl_stage_remote *r = st->remote;
    char *path = sl_xasprintf("%s/%s", r->spool, rel);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    int rc = fd < 0 || fstat(fd, &sb) != 0
                 ? sl_err_set(SL_ERR_IO, "cannot read '%s': %s", path, strerror(errno))
                 : 0;
    char meta[64];
    snprintf(meta, sizeof(meta), "x-amz-meta-xxh3: %s", xxh3 ? xxh3 : "");
    const char *const hdrs[] = { xxh3 ? meta : NULL, NULL };
    uint64_t size = rc ? 0 : (uint64_t)sb.st_size;
    /* at most 10,000 parts: the part grows, in MiB, for files over 10,000 parts */
    size_t part = SL_STAGE_PART;
    const char *knob = getenv("SLUICE_S3_PART"); /* tests: smaller parts (S3's least: 5 MiB) */
    if (knob && strtoull(knob, NULL, 10) >= (5u << 20) && strtoull(knob, NULL, 10) < part)
        part = (size_t)strtoull(knob, NULL, 10);
    if (size / part >= 10000)
        part = (size_t)((size / 9999 + (1u << 20)) & ~(uint64_t)((1u << 20) - 1));
    if (!rc && size <= part) {
        char *buf = sl_xmalloc(size ? (size_t)size : 1);
        rc = read_full(fd, buf, (size_t)size, 0) != 0
                 ? sl_err_set(SL_ERR_IO, "cannot read '%s': %s", path, strerror(errno))
                 : put_small(r, rel, buf, (size_t)size, hdrs);
        free(buf);
    } else if (!rc) {
        rc = put_multipart(r, rel, fd, size, part, hdrs, path);
    }
    if (fd >= 0)
        close(fd);
    if (!rc)
        rc = sparse_stand_in(path, size);
    free(path);
    return rc;
}

/* The files of a record: its "files" array, or the unit's own name with the record's
 * bytes and xxh3. fn(ctx, rel, object with bytes and xxh3) for each; stops at nonzero. */
static int each_file(struct json_object *rec, const char *name,
                     int (*fn)(void *ctx, const char *rel, struct json_object *o), void *ctx)
{
    struct json_object *files = NULL, *p;
    if (!json_object_object_get_ex(rec, "files", &files) ||
        !json_object_is_type(files, json_type_array))
        return fn(ctx, name, rec);
    for (size_t i = 0; i < json_object_array_length(files); i++) {
        struct json_object *f = json_object_array_get_idx(files, i);
        if (!json_object_object_get_ex(f, "path", &p))
            continue;
        int rc = fn(ctx, json_object_get_string(p), f);
        if (rc)
            return rc;
    }
    return 0;
}

static const char *get_str(struct json_object *o, const char *k)
{
    struct json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : NULL;
}

static int upload_one(void *ctx, const char *rel, struct json_object *o)
{
    return upload_file(ctx, rel, get_str(o, "xxh3"));
}

int sl_stage_remote_record(struct sl_stage *st, const char *name, const char *rec, size_t n)
{
    struct json_object *o = json_tokener_parse(rec);
    if (!o)
        return sl_err_set(SL_ERR_STATE, "the record of '%s' is not JSON", name);
    int rc = each_file(o, name, upload_one, st);
    json_object_put(o);
    if (!rc) {
        char *rel = sl_xasprintf(".sluice/%s.json", name);
        rc = put_small(st->remote, rel, rec, n, NULL);
        free(rel);
    }
    return rc;
}

/* Is the object of rel there with the size and xxh3 of o? Then leave its sparse stand-in. */
static int object_whole(void *ctx, const char *rel, struct json_object *o)
{
    struct sl_stage *st = ctx;
    struct json_object *jb;
    const char *x = get_str(o, "xxh3");
    if (!json_object_object_get_ex(o, "bytes", &jb))
        return 1;
    uint64_t bytes = (uint64_t)json_object_get_uint64(jb);
    char *u = object_url(st->remote, rel);
    struct rm_target t;
    int bad = rm_target_init(&t, u) != 0;
    free(u);
    struct rm_resp resp = { 0 };
    if (!bad)
        bad = rm_request(&t, t.http, "HEAD", 0, 0, NULL, 0, &resp) != 0 ||
              resp.length != (int64_t)bytes || (x && strcmp(resp.meta_xxh3, x) != 0);
    sl_buf_release(&resp.body);
    rm_target_release(&t);
    sl_err_clear();
    if (!bad) {
        char *path = sl_xasprintf("%s/%s", st->remote->spool, rel);
        bad = sparse_stand_in(path, bytes) != 0;
        free(path);
    }
    return bad;
}

/* Fetch unit name's record into the spool and check its objects: 1 when all are whole. */
static int fetch_record(struct sl_stage *st, const char *name, int check)
{
    char *rel = sl_xasprintf(".sluice/%s.json", name);
    struct sl_buf b = SL_BUF_INIT;
    int rc = get_object(st->remote, rel, &b, 64u << 20);
    struct json_object *o = rc ? NULL : json_tokener_parse(b.data ? b.data : "");
    int done = 0;
    if (o && (!check || each_file(o, name, object_whole, st) == 0)) {
        char *p = sl_xasprintf("%s/%s.json", st->meta_dir, name);
        done = sl_write_file_atomic(p, b.data, b.len) == 0;
        free(p);
    }
    sl_err_clear();
    json_object_put(o);
    sl_buf_release(&b);
    free(rel);
    return done;
}

int sl_stage_remote_done(struct sl_stage *st, const char *name)
{
    return fetch_record(st, name, 1);
}

int sl_stage_remote_gather(struct sl_stage *st, char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *p = sl_xasprintf("%s/%s.json", st->meta_dir, names[i]);
        struct stat sb;
        int have = stat(p, &sb) == 0;
        free(p);
        if (!have)
            fetch_record(st, names[i], 1); /* a unit of another host (missing: the
                                              manifest's check names it) */
    }
    return 0;
}

/* The files a stage wrote beside its shards, by itself, at the top of the spool (dedup's
 * duplicates.jsonl, clusters.jsonl, pairs.jsonl): every regular file there but the
 * shards (part-*, uploaded with their units), the manifest and hidden files. */
static int upload_side_files(struct sl_stage *st)
{
    DIR *d = opendir(st->remote->spool);
    struct dirent *e;
    int rc = 0;
    while (d && !rc && (e = readdir(d))) {
        char *p = sl_xasprintf("%s/%s", st->remote->spool, e->d_name);
        struct stat sb;
        if (e->d_name[0] != '.' && strncmp(e->d_name, "part-", 5) != 0 &&
            strcmp(e->d_name, "manifest.json") != 0 && stat(p, &sb) == 0 && S_ISREG(sb.st_mode))
            rc = upload_file(st, e->d_name, NULL);
        free(p);
    }
    if (d)
        closedir(d);
    return rc;
}

int sl_stage_remote_finish(struct sl_stage *st)
{
    struct sl_buf m = SL_BUF_INIT;
    char *p = sl_xasprintf("%s/manifest.json", st->remote->spool);
    int rc = upload_side_files(st);
    if (!rc)
        rc = sl_read_file(p, &m);
    free(p);
    if (!rc)
        rc = put_small(st->remote, "manifest.json", m.data, m.len, NULL);
    sl_buf_release(&m);
    if (!rc)
        st->remote->finished = 1;
    return rc;
}

void sl_stage_remote_release(struct sl_stage *st)
{
    struct sl_stage_remote *r = st->remote;
    if (!r)
        return;
    if (r->locked) {
        struct rm_resp resp;
        char msg[SL_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s", sl_err_msg()); /* keep the run's own error */
        send_object(r, ".sluice/lock", NULL, "DELETE", NULL, 0, NULL, &resp);
        sl_buf_release(&resp.body);
        if (msg[0])
            sl_err_set(sl_err_code() ? sl_err_code() : SL_ERR_IO, "%s", msg);
    }
    if (r->finished) {
        clear_dir(r->spool);
        rmdir(r->spool);
    }
    free(r->url);
    free(r->spool);
    free(r);
    st->remote = NULL;
}
