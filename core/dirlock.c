/* Directory locks (flock on DIR/.sluice/lock and ranks.lock), counted per process. */
#include "core/dirlock.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/world.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The holder's description is one short JSON line; a command line longer than this is cut
 * (the message only has to let a person recognise the run). */
#define COMMAND_MAX 400
/* What is read of another run's description (the line above, with room to spare). */
#define DESCRIPTION_MAX 2048

struct sl_dirlock {
    struct sl_dirlock *next;
    dev_t dev; /* of DIR/.sluice, as this process sees it */
    ino_t ino;
    int fd_lock;  /* DIR/.sluice/lock, exclusive (rank 0; -1 on the other ranks) */
    int fd_ranks; /* DIR/.sluice/ranks.lock, shared */
    int refs;
};

/* The directories this process holds. */
static struct sl_dirlock *held;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;

char *sl_dirlock_path(const char *dir)
{
    return sl_xasprintf("%s/.sluice/lock", dir);
}

static struct sl_dirlock *find_held(dev_t dev, ino_t ino)
{
    for (struct sl_dirlock *l = held; l; l = l->next)
        if (l->dev == dev && l->ino == ino)
            return l;
    return NULL;
}

static int no_locks(int e)
{
    return e == ENOLCK || e == EOPNOTSUPP || e == ENOTSUP || e == ENOSYS;
}

/* Open DIR/.sluice/NAME for locking (created when missing). */
static int open_lock_file(const char *meta, const char *name, int *fd)
{
    char *p = sl_xasprintf("%s/%s", meta, name);
    *fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    int rc = *fd < 0
                 ? sl_err_set(SL_ERR_IO, "cannot open the lock file '%s': %s", p, strerror(errno))
                 : 0;
    free(p);
    return rc;
}

/* Is fd still the file at meta/name (not removed or replaced while we waited)? */
static int still_there(int fd, const char *meta, const char *name)
{
    char *p = sl_xasprintf("%s/%s", meta, name);
    struct stat a, b;
    int same =
        fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    free(p);
    return same;
}

/* "pid 123 on host 'h', started T: CMD" from the JSON line in the lock file, into b. */
static void describe_holder(int fd, struct sl_buf *b)
{
    char raw[DESCRIPTION_MAX + 1];
    ssize_t n = pread(fd, raw, DESCRIPTION_MAX, 0);
    raw[n > 0 ? n : 0] = '\0';
    struct json_object *o = n > 0 ? json_tokener_parse(raw) : NULL, *v;
    if (!o || !json_object_object_get_ex(o, "pid", &v)) {
        sl_buf_puts(b, "a run that has not described itself yet");
        json_object_put(o);
        return;
    }
    sl_buf_printf(b, "pid %lld", (long long)json_object_get_int64(v));
    if (json_object_object_get_ex(o, "host", &v))
        sl_buf_printf(b, " on host '%s'", json_object_get_string(v));
    if (json_object_object_get_ex(o, "started", &v))
        sl_buf_printf(b, ", started %s", json_object_get_string(v));
    if (json_object_object_get_ex(o, "command", &v) && json_object_get_string_len(v))
        sl_buf_printf(b, ": %s", json_object_get_string(v));
    json_object_put(o);
}

/* Write this process's description into the lock file (fd). */
static int describe_self(int fd, const char *command, const char *path)
{
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "?");
    char started[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *cmd = command ? command : "";
    size_t cl = strlen(cmd);
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_printf(&b, "{\"pid\":%ld,\"host\":", (long)getpid());
    sl_buf_json_str(&b, host, strlen(host));
    sl_buf_printf(&b, ",\"started\":\"%s\",\"command\":", started);
    sl_buf_json_str(&b, cmd, cl > COMMAND_MAX ? COMMAND_MAX : cl);
    sl_buf_puts(&b, "}\n");
    int rc = 0;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, b.data, b.len, 0) != (ssize_t)b.len)
        rc = sl_err_set(SL_ERR_IO, "cannot write the lock file '%s': %s", path, strerror(errno));
    sl_buf_release(&b);
    return rc;
}

/* flock(fd, how), waiting when told to (on_wait first, with the holder: another run, or
 * with `orphans` an earlier run's ranks); EINTR is retried. 0, 1 when taken and not
 * waiting, or <0 with errno's message. */
static int take(int fd, int how, const struct sl_dirlock_opts *o, const char *dir, int holder_fd,
                const char *path, int orphans)
{
    if (flock(fd, how | LOCK_NB) == 0)
        return 0;
    if (errno != EWOULDBLOCK && errno != EINTR)
        goto fail;
    if (!o->wait)
        return 1;
    if (o->on_wait) {
        struct sl_buf b = SL_BUF_INIT;
        sl_buf_puts(&b, orphans ? "ranks of an earlier run (" : "another run (");
        describe_holder(holder_fd, &b);
        sl_buf_puts(&b, orphans ? ") that outlived their launcher" : ")");
        o->on_wait(o->ctx, dir, b.data);
        sl_buf_release(&b);
    }
    for (;;) {
        if (flock(fd, how) == 0)
            return 0;
        if (errno != EINTR)
            break;
    }
fail:
    if (no_locks(errno))
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot lock '%s': %s (the file system has no locks): another run "
                          "into '%s' at the same time would not be stopped",
                          path, strerror(errno), dir);
    return sl_err_set(SL_ERR_IO, "cannot lock '%s': %s", path, strerror(errno));
}

static int busy(int fd, const char *dir, int orphans)
{
    struct sl_buf b = SL_BUF_INIT;
    describe_holder(fd, &b);
    int rc = orphans ? sl_err_set(SL_ERR_BUSY,
                                  "output directory '%s' is still written by ranks of an "
                                  "earlier run (%s) that outlived their launcher\nhint: they "
                                  "stop within seconds: run again, or add --wait to start "
                                  "when they have",
                                  dir, b.data)
                     : sl_err_set(SL_ERR_BUSY,
                                  "output directory '%s' is in use by another run (%s)\n"
                                  "hint: wait for it to end, or add --wait to start when it has",
                                  dir, b.data);
    sl_buf_release(&b);
    return rc;
}

/* Rank 0: both locks, the description, ranks.lock turned shared. */
static int lock_rank0(struct sl_dirlock *l, const char *dir, const char *meta,
                      const struct sl_dirlock_opts *o)
{
    char *path = sl_xasprintf("%s/lock", meta);
    int rc = 0;
    for (;;) {
        rc = sl_mkdir_p(meta);
        if (!rc)
            rc = open_lock_file(meta, "lock", &l->fd_lock);
        if (!rc)
            rc = take(l->fd_lock, LOCK_EX, o, dir, l->fd_lock, path, 0);
        if (rc == 1)
            rc = busy(l->fd_lock, dir, 0);
        if (rc || still_there(l->fd_lock, meta, "lock"))
            break;
        close(l->fd_lock); /* removed while we waited: lock the new one */
        l->fd_lock = -1;
    }
    if (!rc)
        rc = open_lock_file(meta, "ranks.lock", &l->fd_ranks);
    if (!rc) {
        /* the description in `lock` is still the earlier run's: the orphans' own */
        rc = take(l->fd_ranks, LOCK_EX, o, dir, l->fd_lock, path, 1);
        if (rc == 1)
            rc = busy(l->fd_lock, dir, 1);
    }
    if (!rc)
        rc = describe_self(l->fd_lock, o->command, path);
    if (!rc && flock(l->fd_ranks, LOCK_SH) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot lock '%s/ranks.lock': %s", meta, strerror(errno));
    free(path);
    return rc;
}

static void close_fds(struct sl_dirlock *l)
{
    if (l->fd_ranks >= 0)
        close(l->fd_ranks);
    if (l->fd_lock >= 0)
        close(l->fd_lock);
    l->fd_ranks = l->fd_lock = -1;
}

/* Every rank learns rank 0's status and message; then any rank's failure is everyone's. */
static int agree(const struct sl_world *w, int rc, int root_decides, const char *dir)
{
    int64_t v[2] = { rc, rc ? 1 : 0 };
    char msg[SL_ERR_MSG_MAX] = "";
    if (rc)
        snprintf(msg, sizeof(msg), "%s", sl_err_msg());
    if (root_decides) {
        if (sl_world_bcast(w, v, sizeof(v), 0) || sl_world_bcast(w, msg, sizeof(msg), 0))
            return SL_ERR_MPI;
        return v[0] ? sl_err_set((int)v[0], "%s", msg) : 0;
    }
    int64_t any = rc ? 1 : 0;
    if (sl_world_allreduce_i64(w, &any, 1, SL_MAX))
        return SL_ERR_MPI;
    if (rc)
        return sl_err_set(rc, "%s", msg);
    return any ? sl_err_set(SL_ERR_STATE, "another rank could not lock '%s'", dir) : 0;
}

int sl_dirlock_acquire(struct sl_dirlock **out, const struct sl_world *w, const char *dir,
                       const struct sl_dirlock_opts *o)
{
    static const struct sl_dirlock_opts defaults = { 0 };
    if (!o)
        o = &defaults;
    *out = NULL;
    char *meta = sl_xasprintf("%s/.sluice", dir);
    int rc = w->rank == 0 ? sl_mkdir_p(meta) : 0;
    rc = agree(w, rc, 1, dir);
    struct stat st;
    if (!rc && stat(meta, &st) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot read '%s': %s", meta, strerror(errno));
    rc = agree(w, rc, 0, dir);
    if (rc) {
        free(meta);
        return rc;
    }
    /* held by this process already: one more reference (the same answer on every rank) */
    pthread_mutex_lock(&held_mu);
    struct sl_dirlock *l = find_held(st.st_dev, st.st_ino);
    if (l)
        l->refs++;
    pthread_mutex_unlock(&held_mu);
    int64_t nested[2] = { l != NULL, l != NULL };
    sl_world_allreduce_i64(w, &nested[0], 1, SL_MIN);
    sl_world_allreduce_i64(w, &nested[1], 1, SL_MAX);
    if (nested[0] != nested[1]) {
        sl_dirlock_release(l);
        free(meta);
        return sl_err_set(SL_ERR_STATE, "'%s' is locked by some ranks of this run only", dir);
    }
    if (l) {
        free(meta);
        *out = l;
        return 0;
    }
    l = sl_xcalloc(1, sizeof(*l));
    l->fd_lock = l->fd_ranks = -1;
    l->refs = 1;
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    rc = agree(w, w->rank == 0 ? lock_rank0(l, dir, meta, o) : 0, 1, dir);
    if (!rc && w->rank != 0) {
        /* rank 0 holds `lock` and ranks.lock shared: nobody can hold it exclusively */
        rc = open_lock_file(meta, "ranks.lock", &l->fd_ranks);
        if (!rc && flock(l->fd_ranks, LOCK_SH | LOCK_NB) != 0)
            rc = sl_err_set(no_locks(errno) ? SL_ERR_UNSUPPORTED : SL_ERR_IO,
                            "cannot lock '%s/ranks.lock': %s", meta, strerror(errno));
        if (!rc && !still_there(l->fd_ranks, meta, "ranks.lock"))
            rc = sl_err_set(SL_ERR_STATE, "'%s/ranks.lock' was replaced while locking it", meta);
    }
    rc = agree(w, rc, 0, dir);
    /* the directory may have been made anew while rank 0 waited */
    if (!rc && stat(meta, &st) == 0) {
        l->dev = st.st_dev;
        l->ino = st.st_ino;
    }
    free(meta);
    if (rc) {
        close_fds(l);
        free(l);
        return rc;
    }
    pthread_mutex_lock(&held_mu);
    l->next = held;
    held = l;
    pthread_mutex_unlock(&held_mu);
    *out = l;
    return 0;
}

void sl_dirlock_release(struct sl_dirlock *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&held_mu);
    int last = --l->refs == 0;
    if (last) {
        struct sl_dirlock **p = &held;
        while (*p && *p != l)
            p = &(*p)->next;
        if (*p)
            *p = l->next;
    }
    pthread_mutex_unlock(&held_mu);
    if (!last)
        return;
    close_fds(l);
    free(l);
}
