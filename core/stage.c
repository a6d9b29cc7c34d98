/* Stage output directories: the lock, the plan and resumption, stale temporaries, shard
 * names. Records and the manifest: core/stage_record.c; the per-file loop:
 * core/stage_files.c. */
#include "core/stage.h"

#include "core/http.h"
#include "core/remote.h"
#include "core/stage_remote.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/dirlock.h"
#include "core/err.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/stream.h"
#include "core/world.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The plan: stage, settings and inputs (path, size, mtime). */
static void plan_json(const struct sl_stage *st, struct sl_buf *b)
{
    sl_buf_puts(b, "{\"stage\":");
    sl_buf_json_str(b, st->cfg.stage, strlen(st->cfg.stage));
    sl_buf_puts(b, ",\"settings\":");
    sl_buf_puts(b, st->cfg.settings_json ? st->cfg.settings_json : "{}");
    sl_buf_puts(b, ",\"inputs\":[");
    const struct sl_inputs *in = st->cfg.inputs;
    for (size_t i = 0; in && i < in->n; i++) {
        if (i)
            sl_buf_putc(b, ',');
        sl_buf_puts(b, "{\"path\":");
        sl_buf_json_str(b, in->v[i].path, strlen(in->v[i].path));
        sl_buf_printf(b, ",\"bytes\":%llu,\"mtime\":%lld}", (unsigned long long)in->v[i].size,
                      (long long)in->v[i].mtime);
    }
    sl_buf_puts(b, "]}\n");
}

/* Remove dir's files whose names match; with `folders`, also those in its first level of
 * folders that are not hidden (filter's lang=xx/; links are not followed). */
static int remove_matching_in(const char *dir, int (*match)(const char *name), int folders)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (folders && e->d_name[0] != '.') {
            char *sub = sl_xasprintf("%s/%s", dir, e->d_name);
            struct stat sb;
            if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode) && !rc)
                rc = remove_matching_in(sub, match, 0);
            free(sub);
            continue;
        }
        if (!match(e->d_name))
            continue;
        char *p = sl_xasprintf("%s/%s", dir, e->d_name);
        if (unlink(p) != 0 && errno != ENOENT)
            rc = sl_err_set(SL_ERR_IO, "cannot remove '%s': %s", p, strerror(errno));
        free(p);
    }
    closedir(d);
    return rc;
}

static int remove_matching(const char *dir, int (*match)(const char *name))
{
    return remove_matching_in(dir, match, 0);
}

/* A temporary file: hidden, ending in .tmp (core/atomic.h names them .NAME.PID-HOST.tmp;
 * releases before it used .NAME.tmp). */
static int is_tmp(const char *name)
{
    size_t n = strlen(name);
    return name[0] == '.' && n > 5 && strcmp(name + n - 4, ".tmp") == 0;
}

static int is_output(const char *name)
{
    return strncmp(name, "part-", 5) == 0 || strcmp(name, "manifest.json") == 0;
}

static int is_record(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int rank0_prepare(struct sl_stage *st)
{
    const char *out = st->cfg.out_dir;
    int rc = sl_mkdir_p(out);
    if (rc)
        return rc;
    rc = sl_mkdir_p(st->meta_dir);
    if (rc)
        return sl_err_wrap(rc, "output directory is not writable: ");
    /* probe writability for a clear message before any work (not synced: a sync here
     * waits for whatever else the file system has to write, 30 ms on a busy disk) */
    char *probe = sl_xasprintf("%s/.write-test", st->meta_dir);
    struct sl_atomic_file pf;
    rc = sl_atomic_open(&pf, probe);
    if (!rc) {
        pf.no_sync = 1;
        rc = sl_atomic_commit(&pf);
    }
    unlink(probe);
    free(probe);
    if (rc)
        return sl_err_set(SL_ERR_IO, "output directory '%s' is not writable (%s)", out,
                          sl_err_msg());

    struct sl_buf want = SL_BUF_INIT, have = SL_BUF_INIT;
    sl_buf_init(&have, 256u << 20);
    plan_json(st, &want);
    char *plan_path = sl_xasprintf("%s/plan.json", st->meta_dir);
    struct stat sb;
    int exists = stat(plan_path, &sb) == 0;
    if (exists) {
        rc = sl_read_file(plan_path, &have);
        if (!rc && have.len == want.len && memcmp(have.data, want.data, want.len) == 0) {
            st->resumed = 1;
        } else if (!rc && !st->cfg.force) {
            rc = sl_err_set(SL_ERR_EXISTS,
                            "output directory '%s' holds the outputs of a different run "
                            "(other inputs or settings)\n"
                            "hint: use --force to replace them, or choose another --out",
                            out);
        } else if (!rc) {
            exists = 0;
        }
    } else {
        /* an output directory of someone else: refuse to mix with existing shards */
        DIR *d = opendir(out);
        struct dirent *e;
        while (d && (e = readdir(d)) && !rc)
            if (is_output(e->d_name) && !st->cfg.force)
                rc = sl_err_set(SL_ERR_EXISTS,
                                "output directory '%s' already has '%s' from an unknown run\n"
                                "hint: use --force to replace it, or choose another --out",
                                out, e->d_name);
        if (d)
            closedir(d);
    }
    if (!rc && !exists) {
        rc = remove_matching(out, is_output);
        if (!rc)
            rc = remove_matching(st->meta_dir, is_record);
        if (!rc)
            rc = sl_write_file_atomic(plan_path, want.data, want.len);
    }
    /* the lock is held: no temporary here belongs to a live writer */
    if (!rc)
        rc = remove_matching_in(out, is_tmp, 1);
    if (!rc)
        rc = remove_matching(st->meta_dir, is_tmp);
    free(plan_path);
    sl_buf_release(&want);
    sl_buf_release(&have);
    return rc;
}

int sl_stage_check_inputs(const struct sl_stage_cfg *cfg)
{
    const struct sl_inputs *in = cfg->inputs;
    for (size_t i = 0; cfg->rereads_inputs && in && i < in->n; i++)
        if (!S_ISREG((mode_t)in->v[i].mode))
            return sl_err_set(SL_ERR_UNSUPPORTED,
                              "cannot read input '%s': it is %s, and the stage '%s' reads each "
                              "input more than once\nhint: save its data to a regular file and "
                              "give that",
                              in->v[i].path, sl_input_kind(&in->v[i]), cfg->stage);
    return 0;
}

static void on_lock_wait(void *ctx, const char *dir, const char *holder)
{
    (void)ctx;
    sl_info("output directory '%s' is in use by %s: waiting for it to end", dir, holder);
}

int sl_stage_lock(struct sl_world *w, const char *dir, int wait, int argc, const char **argv,
                  struct sl_dirlock **out)
{
    struct sl_buf cmd = SL_BUF_INIT;
    sl_buf_puts(&cmd, "sluice");
    for (int i = 0; i < argc; i++) {
        char *shown = strstr(argv[i], "://") ? sl_url_display(argv[i]) : NULL; /* no token */
        sl_buf_printf(&cmd, " %s", shown ? shown : argv[i]);
        free(shown);
    }
    struct sl_dirlock_opts lo = { .wait = wait, .command = cmd.data, .on_wait = on_lock_wait };
    int rc = sl_dirlock_acquire(out, w, dir, &lo);
    sl_buf_release(&cmd);
    if (rc == SL_ERR_UNSUPPORTED) {
        if (w->rank == 0)
            sl_warn("%s", sl_err_msg());
        rc = 0;
    }
    return rc;
}

int sl_stage_begin(struct sl_stage *st, struct sl_world *w, const struct sl_stage_cfg *cfg)
{
    memset(st, 0, sizeof(*st));
    st->cfg = *cfg;
    st->world = w;
    st->meta_dir = sl_xasprintf("%s/.sluice", cfg->out_dir);
    st->t0 = sl_now();
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(st->started, sizeof(st->started), "%Y-%m-%dT%H:%M:%SZ", &tm);

    int rc = sl_stage_check_inputs(cfg);
    if (!rc && sl_remote_is_url(cfg->out_dir)) /* s3://: out_dir becomes the spool */
        rc = sl_stage_remote_begin(st);
    if (!rc)
        rc = sl_stage_lock(w, st->cfg.out_dir, cfg->wait, cfg->argc, cfg->argv, &st->lock);
    if (rc) {
        sl_stage_release(st);
        return rc;
    }
    /* rank 0 prepares; its verdict (and message) goes to everyone */
    int64_t status[2] = { 0, 0 };
    char msg[SL_ERR_MSG_MAX] = "";
    if (w->rank == 0) {
        int prc = rank0_prepare(st);
        if (!prc && st->remote)
            prc = sl_stage_remote_prepared(st);
        status[0] = prc;
        status[1] = st->resumed;
        if (prc)
            snprintf(msg, sizeof(msg), "%s", sl_err_msg());
    }
    rc = sl_world_bcast(w, status, sizeof(status), 0);
    if (!rc)
        rc = sl_world_bcast(w, msg, sizeof(msg), 0);
    if (rc) {
        sl_stage_release(st);
        return rc;
    }
    st->resumed = (int)status[1];
    if (status[0]) {
        sl_stage_release(st);
        return sl_err_set((int)status[0], "%s", msg);
    }
    sl_atomic_install_signal_cleanup();
    return 0;
}

char *sl_stage_shard_name(size_t index, const char *ext)
{
    return sl_xasprintf("part-%05zu%s", index, ext);
}

char *sl_stage_shard_path(const struct sl_stage *st, size_t index, const char *ext)
{
    return sl_xasprintf("%s/part-%05zu%s", st->cfg.out_dir, index, ext);
}

void sl_stage_release(struct sl_stage *st)
{
    sl_dirlock_release(st->lock);
    st->lock = NULL;
    sl_stage_remote_release(st);
    free(st->meta_dir);
    st->meta_dir = NULL;
}
