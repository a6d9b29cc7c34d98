/* Directory locks: one run at a time writes in an output directory, and no rank of an
 * earlier run is still writing there when the next one starts.
 *
 * Two files in DIR/.sluice/, locked with flock(2):
 *   lock        rank 0 of the run that owns DIR holds it exclusively for the whole run.
 *               Its content describes the holder, one JSON line (pid, host, started,
 *               command), for the message of a run that finds it taken.
 *   ranks.lock  every rank of the run (rank 0 too) holds it shared for as long as it may
 *               write in DIR. A new run's rank 0, holding `lock`, must also get this one
 *               exclusively before it touches DIR: so ranks of an earlier run that outlive
 *               their launcher (kill -9 mpirun leaves them writing for seconds) keep the
 *               next run out until they exit, though their rank 0 is gone.
 * Order on rank 0: `lock` exclusive, `ranks.lock` exclusive, the description written,
 * `ranks.lock` turned shared; then the other ranks take `ranks.lock` shared (they cannot be
 * refused: an exclusive holder needs `lock` first). A lock file that was removed (or
 * replaced) while this run waited for it is opened again (a finished tokenize removes its
 * parts folder), so two runs never hold locks on two different files of one name.
 *
 * Taken: without `wait`, SL_ERR_BUSY with a message naming the holder (pid, host, start,
 * command) and the hint to pass --wait; with `wait`, on_wait is called with that
 * description (once for `lock`, once more if an earlier run's ranks hold ranks.lock) and
 * the call blocks until the holder ends (a run that dies releases its locks with its
 * process). Waiting ranks other than rank 0 wait in the broadcast.
 *
 * One process, several holds: a directory this process holds already (a pipeline step's
 * command inside `sluice run`, the stage runner inside tokenize) gets another reference,
 * and its files are not opened again; the locks go with the last release. (Opening and
 * closing a second descriptor would drop NFS's locks, below.)
 *
 * What is relied on: flock(2) locks belong to the open file and end when every process
 * holding it exits, however it ends. On NFS, Linux (2.6.12 and later) emulates flock with
 * whole-file POSIX byte-range locks through the server's lock manager (NLM for NFSv3, the
 * protocol itself for v4): they exclude across hosts, so ranks on several nodes and a run
 * on another node are kept apart as on one host; the descriptors are opened read-write
 * (an exclusive POSIX lock needs write access), never twice in one process (a POSIX lock
 * is the process's, and closing any descriptor of the file drops it), and with O_CLOEXEC.
 * A node that dies keeps its locks until the server reclaims them (the NFSv4 lease, 90 s
 * by default; NLM when the client's status monitor reports the reboot); a mount with
 * `nolock` or `local_lock=flock` keeps locks local to each host, and a run on another host
 * is then not stopped.
 * A file system without locks (flock fails with ENOLCK, EOPNOTSUPP or ENOSYS) gives
 * SL_ERR_UNSUPPORTED with a message: the caller decides whether to go on unlocked.
 */
#ifndef SL_DIRLOCK_H
#define SL_DIRLOCK_H

struct sl_world;
struct sl_dirlock;

struct sl_dirlock_opts {
    int wait; /* block until the holder ends, instead of SL_ERR_BUSY */
    /* what holds it, for others' messages ("sluice extract ..."); may be NULL */
    const char *command;
    /* with wait, called (rank 0) before blocking, with who holds it: "another run (pid 123
     * on host 'h', started 2024-05-01T10:00:00Z: sluice extract ...)", or "ranks of an
     * earlier run (...) that outlived their launcher" */
    void (*on_wait)(void *ctx, const char *dir, const char *holder);
    void *ctx;
};

/* Collective over w. Creates DIR/.sluice when needed and locks DIR as described above.
 * 0 with *out set (release with sl_dirlock_release), or <0 with a message on every rank:
 * SL_ERR_BUSY (another run holds DIR, or ranks of an earlier one still do), SL_ERR_IO
 * (DIR or its lock files cannot be created or opened), SL_ERR_UNSUPPORTED (no locks on
 * this file system; DIR/.sluice is created). */
int sl_dirlock_acquire(struct sl_dirlock **out, const struct sl_world *w, const char *dir,
                       const struct sl_dirlock_opts *o);

/* Drop one reference; the last one releases the locks. Not collective. NULL: a no-op. */
void sl_dirlock_release(struct sl_dirlock *l);

/* "DIR/.sluice/lock" (caller frees): for tools and tests that hold a directory with
 * flock(1) to keep sluice runs out of it. */
char *sl_dirlock_path(const char *dir);

#endif
