/* Step records (OUT/.sluice/run/step.json): file fingerprints and the state of a step. */
#include "pipeline/record.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "pipeline/pipeline.h"

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct fp {
    char *path;
    long long bytes;
    long long mtime_ns;
};

struct fps {
    struct fp *v;
    size_t n, cap;
};

static void fps_add(struct fps *f, const char *path, long long bytes, long long mtime)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->v = sl_xrealloc(f->v, f->cap * sizeof(*f->v));
    }
    f->v[f->n].path = sl_xstrdup(path);
    f->v[f->n].bytes = bytes;
    f->v[f->n].mtime_ns = mtime;
    f->n++;
}

static void fps_release(struct fps *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].path);
    free(f->v);
    memset(f, 0, sizeof(*f));
}

static int cmp_fp(const void *a, const void *b)
{
    return strcmp(((const struct fp *)a)->path, ((const struct fp *)b)->path);
}

static long long mtime_of(const struct stat *st)
{
    return (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* Every regular file under path (itself if a file), skipping names that start with '.'. */
static int walk(struct fps *f, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0; /* absent: nothing to record */
    if (S_ISREG(st.st_mode)) {
        fps_add(f, path, (long long)st.st_size, mtime_of(&st));
        return 0;
    }
    if (!S_ISDIR(st.st_mode) || depth > 32)
        return 0;
    DIR *d = opendir(path);
    if (!d)
        return sl_err_set(SL_ERR_IO, "cannot read directory '%s': %s", path, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *sub = sl_xasprintf("%s/%s", path, e->d_name);
        rc = walk(f, sub, depth + 1);
        free(sub);
    }
    closedir(d);
    return rc;
}

static int fingerprint(const char *const *paths, size_t n, struct fps *f)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = walk(f, paths[i], 0);
    if (f->n)
        qsort(f->v, f->n, sizeof(*f->v), cmp_fp);
    /* a path named twice (an input dir and a file in it) is one entry */
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (k && !strcmp(f->v[k - 1].path, f->v[i].path)) {
            free(f->v[i].path);
            continue;
        }
        f->v[k++] = f->v[i];
    }
    f->n = k;
    return rc;
}

static void fps_json(struct sl_buf *b, const struct fps *f)
{
    sl_buf_putc(b, '[');
    for (size_t i = 0; i < f->n; i++) {
        sl_buf_puts(b, i ? ",\n    [" : "\n    [");
        sl_buf_json_str(b, f->v[i].path, strlen(f->v[i].path));
        sl_buf_printf(b, ", %lld, %lld]", f->v[i].bytes, f->v[i].mtime_ns);
    }
    sl_buf_puts(b, f->n ? "\n  ]" : "]");
}

static int fps_parse(struct json_object *a, struct fps *f)
{
    if (!a || !json_object_is_type(a, json_type_array))
        return -1;
    size_t n = json_object_array_length(a);
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = json_object_array_get_idx(a, i);
        if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 3)
            return -1;
        struct json_object *p = json_object_array_get_idx(e, 0);
        if (!json_object_is_type(p, json_type_string))
            return -1;
        fps_add(f, json_object_get_string(p),
                (long long)json_object_get_int64(json_object_array_get_idx(e, 1)),
                (long long)json_object_get_int64(json_object_array_get_idx(e, 2)));
    }
    if (f->n)
        qsort(f->v, f->n, sizeof(*f->v), cmp_fp);
    return 0;
}

static char *record_path(const struct pl_step *s)
{
    return sl_xasprintf("%s/.sluice/run/step.json", s->out);
}

static int write_record(const struct pl_step *s, const struct fps *in, const struct fps *out,
                        int complete)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "{\n  \"step\": ");
    sl_buf_json_str(&b, s->label, strlen(s->label));
    sl_buf_puts(&b, ",\n  \"command\": [");
    for (size_t i = 0; i < s->argv.n; i++) {
        if (i)
            sl_buf_puts(&b, ", ");
        sl_buf_json_str(&b, s->argv.v[i], strlen(s->argv.v[i]));
    }
    sl_buf_printf(&b, "],\n  \"complete\": %s,\n  \"inputs\": ", complete ? "true" : "false");
    fps_json(&b, in);
    sl_buf_puts(&b, ",\n  \"outputs\": ");
    fps_json(&b, out);
    sl_buf_puts(&b, "\n}\n");
    char *dir = sl_xasprintf("%s/.sluice/run", s->out);
    int rc = sl_mkdir_p(dir);
    free(dir);
    char *rp = record_path(s);
    if (!rc)
        rc = sl_write_file_atomic(rp, b.data, b.len);
    free(rp);
    sl_buf_release(&b);
    return rc;
}

int pl_record_begin(const struct pl_step *s)
{
    struct fps in = { 0 }, out = { 0 };
    int rc = fingerprint((const char *const *)s->inputs.v, s->inputs.n, &in);
    if (!rc)
        rc = write_record(s, &in, &out, 0);
    fps_release(&in);
    return rc;
}

struct record {
    struct json_object *root;
    struct fps in, out;
    int complete;
};

static void record_release(struct record *r)
{
    json_object_put(r->root);
    fps_release(&r->in);
    fps_release(&r->out);
}

/* 1 loaded, 0 absent or unreadable (treated as absent). */
static int load_record(const struct pl_step *s, struct record *r)
{
    memset(r, 0, sizeof(*r));
    char *rp = record_path(s);
    struct stat st;
    int have = stat(rp, &st) == 0;
    if (have)
        r->root = json_object_from_file(rp);
    free(rp);
    if (!r->root)
        return 0;
    struct json_object *c = NULL, *in = NULL, *out = NULL;
    json_object_object_get_ex(r->root, "complete", &c);
    json_object_object_get_ex(r->root, "inputs", &in);
    json_object_object_get_ex(r->root, "outputs", &out);
    if (fps_parse(in, &r->in) || fps_parse(out, &r->out)) {
        record_release(r);
        return 0;
    }
    r->complete = c && json_object_get_boolean(c);
    return 1;
}

int pl_record_finish(const struct pl_step *s)
{
    struct record r;
    if (!load_record(s, &r))
        return sl_err_set(SL_ERR_STATE, "the record of step '%s' is missing", s->label);
    struct fps out = { 0 };
    const char *dir = s->out;
    int rc = fingerprint(&dir, 1, &out);
    if (!rc)
        rc = write_record(s, &r.in, &out, 1);
    fps_release(&out);
    record_release(&r);
    return rc;
}

static int same_command(const struct record *r, const struct pl_step *s)
{
    struct json_object *c = NULL;
    if (!json_object_object_get_ex(r->root, "command", &c) ||
        !json_object_is_type(c, json_type_array) || json_object_array_length(c) != s->argv.n)
        return 0;
    for (size_t i = 0; i < s->argv.n; i++) {
        struct json_object *a = json_object_array_get_idx(c, i);
        if (!json_object_is_type(a, json_type_string) ||
            strcmp(json_object_get_string(a), s->argv.v[i]))
            return 0;
    }
    return 1;
}

static const struct fp *find(const struct fps *f, const char *path)
{
    struct fp key = { (char *)path, 0, 0 };
    return f->n ? bsearch(&key, f->v, f->n, sizeof(*f->v), cmp_fp) : NULL;
}

const char *pl_state_name(enum pl_state s)
{
    static const char *const names[] = { "new", "partial", "stale", "complete" };
    return names[s];
}

static int state_of(const struct pl_pipeline *p, size_t i, enum pl_state *out, char **why,
                    int depth);

/* Outputs of step i that are gone were deleted by a later step that is complete. */
static int consumed(const struct pl_pipeline *p, size_t i, int depth)
{
    for (size_t j = i + 1; j < p->n; j++) {
        const struct pl_step *t = &p->steps[j];
        if (!t->rm_inputs)
            continue;
        for (size_t k = 0; k < t->ndeps; k++) {
            enum pl_state st;
            if (t->deps[k] == i && !state_of(p, j, &st, NULL, depth + 1) && st == PL_STATE_COMPLETE)
                return 1;
        }
    }
    return 0;
}

static void set_why(char **why, const char *fmt, const char *arg)
{
    if (why && !*why)
        *why = sl_xasprintf(fmt, arg);
}

static int state_of(const struct pl_pipeline *p, size_t i, enum pl_state *out, char **why,
                    int depth)
{
    const struct pl_step *s = &p->steps[i];
    struct record r;
    *out = PL_STATE_NEW;
    if (depth > 64 || !load_record(s, &r))
        return 0;
    struct fps cur = { 0 };
    int rc = fingerprint((const char *const *)s->inputs.v, s->inputs.n, &cur);
    enum pl_state st = PL_STATE_COMPLETE;
    if (rc) {
        record_release(&r);
        return rc;
    }
    if (!same_command(&r, s)) {
        st = PL_STATE_STALE;
        set_why(why, "%s", "its command line changed");
    }
    /* inputs: the same files, unchanged (those the step itself deleted may be gone) */
    for (size_t k = 0; st != PL_STATE_STALE && k < r.in.n; k++) {
        const struct fp *c = find(&cur, r.in.v[k].path);
        if (!c && s->rm_inputs)
            continue;
        if (!c || c->bytes != r.in.v[k].bytes || c->mtime_ns != r.in.v[k].mtime_ns) {
            st = PL_STATE_STALE;
            set_why(why, c ? "input '%s' changed" : "input '%s' is gone", r.in.v[k].path);
        }
    }
    for (size_t k = 0; st != PL_STATE_STALE && k < cur.n; k++) {
        if (!find(&r.in, cur.v[k].path)) {
            st = PL_STATE_STALE;
            set_why(why, "input '%s' is new", cur.v[k].path);
        }
    }
    if (st != PL_STATE_STALE && !r.complete)
        st = PL_STATE_PARTIAL;
    if (st == PL_STATE_COMPLETE) {
        int missing = 0;
        for (size_t k = 0; k < r.out.n && st == PL_STATE_COMPLETE; k++) {
            struct stat sb;
            if (stat(r.out.v[k].path, &sb) != 0) {
                missing = 1;
            } else if ((long long)sb.st_size != r.out.v[k].bytes ||
                       mtime_of(&sb) != r.out.v[k].mtime_ns) {
                st = PL_STATE_STALE;
                set_why(why, "output '%s' changed since it was written", r.out.v[k].path);
            }
        }
        if (st == PL_STATE_COMPLETE && missing && !consumed(p, i, depth))
            st = PL_STATE_PARTIAL;
    }
    fps_release(&cur);
    record_release(&r);
    *out = st;
    return 0;
}

int pl_step_state(const struct pl_pipeline *p, size_t i, enum pl_state *out, char **why)
{
    if (why)
        *why = NULL;
    return state_of(p, i, out, why, 0);
}
