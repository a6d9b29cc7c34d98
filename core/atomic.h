/* Atomic output files: write to a hidden temporary name in the same directory, fsync,
 * rename over the final name, fsync the directory. A file under its final name is always
 * complete (and, unless it was written with no_sync, on disk). The temporary name is the
 * process's own (DIR/.NAME.PID-HOST.tmp), so two processes writing one name never write
 * into one temporary; the last rename wins. A temporary left by a killed process stays
 * until whoever owns the directory removes it (a stage: core/stage.h). Temporary files still open
 * when SIGINT/SIGTERM/SIGHUP arrives are removed by the handler installed with
 * sl_atomic_install_signal_cleanup(). */
#ifndef SL_ATOMIC_H
#define SL_ATOMIC_H

#include <stddef.h>

struct sl_atomic_file {
    char *path;     /* final name (owned) */
    char *tmp_path; /* temporary name: DIR/.NAME.PID-HOST.tmp (owned) */
    int fd;         /* -1 when closed */
    int slot;       /* signal-cleanup registry slot, -1 if none */
    int no_sync;    /* commit renames without fsync: an intermediate file that is only
                     * read back, copied or linked (sl_atomic_link syncs it) by a later
                     * step that checks it; a crash may leave it damaged under its name */
};

/* Create DIR/.NAME.PID-HOST.tmp (truncating a stale one; no_sync 0). 0 or SL_ERR_IO with a
 * message. */
int sl_atomic_open(struct sl_atomic_file *f, const char *path);
/* Write all n bytes. */
int sl_atomic_write(struct sl_atomic_file *f, const void *data, size_t n);
/* fsync (unless no_sync), rename to the final name, fsync the directory (unless no_sync),
 * release. */
int sl_atomic_commit(struct sl_atomic_file *f);
/* Remove the temporary file and release. Safe to call after a failed commit or twice. */
void sl_atomic_abort(struct sl_atomic_file *f);

/* Write a whole file atomically. */
int sl_write_file_atomic(const char *path, const void *data, size_t n);

/* Give the complete file `src` a second name, `path`, atomically: fsync it (it may have
 * been written with no_sync), hard-link it under the temporary name, rename that over
 * `path`, fsync the directory. No byte is copied; the two names share the file, so `src`
 * must not be written again. SL_ERR_UNSUPPORTED (no
 * message) where the file system cannot link them (another file system, no hard links):
 * the caller copies instead. */
int sl_atomic_link(const char *src, const char *path);

/* The temporary name sl_atomic_open uses for `path` in this process (caller frees):
 * DIR/.NAME.TAG.tmp, TAG from sl_atomic_tmp_tag; a NAME over 200 bytes is cut there and
 * followed by "~" and a hash of the whole name. */
char *sl_atomic_tmp_name(const char *path);
/* This process's tag, "PID-HOST" (HOST: 8 hex digits of a hash of the host name), for
 * other per-process temporary names (caller frees). */
char *sl_atomic_tmp_tag(void);

/* Remove the temporaries of `path` that any process left (DIR/.NAME.*.tmp, and the
 * DIR/.NAME.tmp of older releases): for a caller that holds what keeps every other writer
 * of `path` out (a directory lock), so that none is in use. 0 or SL_ERR_IO. */
int sl_atomic_remove_stale(const char *path);

/* Remove temporary files under the cleanup registry when a terminating signal arrives,
 * then re-raise it. Idempotent. */
void sl_atomic_install_signal_cleanup(void);

/* Create a directory and its parents (mode 0777 & ~umask). 0 or SL_ERR_IO. */
int sl_mkdir_p(const char *path);

/* For an output named by a prefix (DIR/NAME -> DIR/NAME.model, ...): create DIR and its
 * parents and check that a file can be created there, before any work is done. 0 or
 * SL_ERR_IO naming the directory. */
int sl_prepare_out_prefix(const char *prefix);

#endif
