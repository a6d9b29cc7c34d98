/* Atomic output files (temporary name + fsync + rename) and their signal-time cleanup. */
#include "core/atomic.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/hash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLEANUP_SLOTS 256

/* Paths of open temporary files; read by the signal handler. */
static char *volatile cleanup_paths[CLEANUP_SLOTS];

static int cleanup_add(const char *path)
{
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (!cleanup_paths[i]) {
            cleanup_paths[i] = sl_xstrdup(path);
            return i;
        }
    }
    return -1;
}

static void cleanup_remove(int slot)
{
    if (slot < 0)
        return;
    char *p = cleanup_paths[slot];
    cleanup_paths[slot] = NULL;
    free(p);
}

static void on_signal(int sig)
{
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        char *p = cleanup_paths[i];
        if (p)
            unlink(p);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void sl_atomic_install_signal_cleanup(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    int sigs[] = { SIGINT, SIGTERM, SIGHUP };
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* Names longer than this keep this much of the name in their temporary's, then a hash of
 * the whole name: the temporary must stay under NAME_MAX (255) with its dot, tag and
 * suffix (about 30 bytes). */
#define TMP_NAME_KEEP 200

char *sl_atomic_tmp_tag(void)
{
    /* the host as a hash: a host name can be long, and only has to tell hosts apart */
    static uint32_t host;
    if (!host) {
        char h[256] = "";
        gethostname(h, sizeof(h) - 1);
        host = (uint32_t)sl_hash64(h, strlen(h), 0) | 1u;
    }
    return sl_xasprintf("%ld-%08x", (long)getpid(), (unsigned)host);
}

char *sl_atomic_tmp_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    char *tag = sl_atomic_tmp_tag(), *out;
    size_t n = strlen(base);
    if (n <= TMP_NAME_KEEP)
        out = sl_xasprintf("%.*s.%s.%s.tmp", dirlen, path, base, tag);
    else
        out = sl_xasprintf("%.*s.%.*s~%016llx.%s.tmp", dirlen, path, TMP_NAME_KEEP, base,
                           (unsigned long long)sl_hash64(base, n, 0), tag);
    free(tag);
    return out;
}

int sl_atomic_remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? sl_xstrndup(path, (size_t)(slash - path)) : sl_xstrdup(".");
    size_t bl = strlen(base);
    DIR *d = opendir(dir[0] ? dir : "/");
    int rc = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        /* ".NAME." then anything, ending in ".tmp" (or ".NAME.tmp") */
        const char *n = e->d_name;
        size_t l = strlen(n);
        if (n[0] != '.' || l < bl + 5 || strncmp(n + 1, base, bl) != 0 || n[bl + 1] != '.' ||
            strcmp(n + l - 4, ".tmp") != 0)
            continue;
        char *p = sl_xasprintf("%s/%s", dir, n);
        if (unlink(p) != 0 && errno != ENOENT)
            rc = sl_err_set(SL_ERR_IO, "cannot remove '%s': %s", p, strerror(errno));
        free(p);
    }
    if (d)
        closedir(d);
    free(dir);
    return rc;
}

int sl_atomic_open(struct sl_atomic_file *f, const char *path)
{
    f->path = sl_xstrdup(path);
    f->tmp_path = sl_atomic_tmp_name(path);
    f->slot = cleanup_add(f->tmp_path);
    f->no_sync = 0;
    f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (f->fd < 0) {
        int e = errno;
        sl_err_set(SL_ERR_IO, "cannot create '%s': %s", f->tmp_path, strerror(e));
        cleanup_remove(f->slot);
        free(f->path);
        free(f->tmp_path);
        f->path = f->tmp_path = NULL;
        f->slot = -1;
        return SL_ERR_IO;
    }
    return 0;
}

int sl_atomic_write(struct sl_atomic_file *f, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sl_err_set(SL_ERR_IO, "cannot write '%s': %s", f->tmp_path, strerror(errno));
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void fsync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? sl_xstrndup(path, (size_t)(slash - path)) : sl_xstrdup(".");
    int dfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(dir);
}

static void release(struct sl_atomic_file *f)
{
    cleanup_remove(f->slot);
    f->slot = -1;
    free(f->path);
    free(f->tmp_path);
    f->path = f->tmp_path = NULL;
}

int sl_atomic_commit(struct sl_atomic_file *f)
{
    int rc = 0;
    if (!f->path)
        return sl_err_set(SL_ERR_STATE, "atomic file already closed");
    if (!f->no_sync && fsync(f->fd) != 0 && errno != EINVAL)
        rc = sl_err_set(SL_ERR_IO, "cannot sync '%s': %s", f->tmp_path, strerror(errno));
    if (close(f->fd) != 0 && !rc)
        rc = sl_err_set(SL_ERR_IO, "cannot close '%s': %s", f->tmp_path, strerror(errno));
    f->fd = -1;
    if (!rc && rename(f->tmp_path, f->path) != 0)
        rc = sl_err_set(SL_ERR_IO, "cannot rename '%s' to '%s': %s", f->tmp_path, f->path,
                        strerror(errno));
    if (rc)
        unlink(f->tmp_path);
    else if (!f->no_sync)
        fsync_dir_of(f->path);
    release(f);
    return rc;
}

void sl_atomic_abort(struct sl_atomic_file *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->tmp_path)
        unlink(f->tmp_path);
    release(f);
}

int sl_atomic_link(const char *src, const char *path)
{
    /* its bytes on disk before a second name is durable (a no_sync file is not yet) */
    int sfd = open(src, O_RDONLY | O_CLOEXEC);
    if (sfd < 0)
        return sl_err_set(SL_ERR_IO, "cannot open '%s': %s", src, strerror(errno));
    if (fsync(sfd) != 0 && errno != EINVAL) {
        int e = errno;
        close(sfd);
        return sl_err_set(SL_ERR_IO, "cannot sync '%s': %s", src, strerror(e));
    }
    close(sfd);
    char *tmp = sl_atomic_tmp_name(path);
    int rc = 0, slot = cleanup_add(tmp);
    unlink(tmp); /* a stale one */
    if (link(src, tmp) != 0) {
        int e = errno;
        if (e == EXDEV || e == EPERM || e == EMLINK || e == ENOTSUP || e == EOPNOTSUPP ||
            e == ENOSYS)
            rc = SL_ERR_UNSUPPORTED;
        else
            rc = sl_err_set(SL_ERR_IO, "cannot link '%s' to '%s': %s", src, tmp, strerror(e));
    } else if (rename(tmp, path) != 0) {
        rc = sl_err_set(SL_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        unlink(tmp);
    } else {
        /* where `path` already was this file (a run resumed after linking it), rename
         * leaves both names: drop the temporary one */
        unlink(tmp);
        fsync_dir_of(path);
    }
    cleanup_remove(slot);
    free(tmp);
    return rc;
}

int sl_write_file_atomic(const char *path, const void *data, size_t n)
{
    struct sl_atomic_file f;
    int rc = sl_atomic_open(&f, path);
    if (rc)
        return rc;
    rc = sl_atomic_write(&f, data, n);
    if (rc) {
        sl_atomic_abort(&f);
        return rc;
    }
    return sl_atomic_commit(&f);
}

int sl_mkdir_p(const char *path)
{
    char *p = sl_xstrdup(path);
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/')
        p[--len] = '\0';
    for (char *s = p + 1; ; s++) {
        char c = *s;
        if (c == '/' || c == '\0') {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                sl_err_set(SL_ERR_IO, "cannot create directory '%s': %s", p, strerror(e));
                free(p);
                return SL_ERR_IO;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    int rc = 0;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = sl_err_set(SL_ERR_IO, "'%s' exists and is not a directory", path);
    free(p);
    return rc;
}

int sl_prepare_out_prefix(const char *prefix)
{
    char *dir = sl_xstrdup(prefix), *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    else if (slash)
        dir[1] = '\0';
    else
        strcpy(dir, ".");
    int rc = sl_mkdir_p(dir);
    if (!rc) {
        /* a probe file: access(W_OK) says yes to root on a read-only mount */
        char *probe = sl_xasprintf("%s/.sluice-write-probe.%ld.tmp", dir, (long)getpid());
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0) {
            rc = sl_err_set(SL_ERR_IO, "cannot write in '%s': %s", dir, strerror(errno));
        } else {
            close(fd);
            unlink(probe);
        }
        free(probe);
    }
    free(dir);
    return rc;
}
