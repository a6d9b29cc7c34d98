/* The MPI world: rank and size, collectives on bytes and counters, and abort.
 *
 * Without a launcher (no OMPI_COMM_WORLD_SIZE, PMI_/PMIX_ variables) MPI is not
 * initialised, nor even loaded (core/world_mpi.h), and the process is rank 0 of 1; every
 * collective then works locally. Built without MPI (SL_HAVE_MPI undefined) the same holds
 * always.
 * Library code receives a struct sl_world * argument; commands get the process-wide one
 * from sl_world_get().
 */
#ifndef SL_WORLD_H
#define SL_WORLD_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct sl_counters;

struct sl_world {
    int rank, size;
    int mpi; /* MPI was initialised (by us): 1 for the world, 2 + k for group k (sl_world_split) */
};

enum sl_reduce_op { SL_SUM, SL_MAX, SL_MIN };

/* Initialise (MPI_Init_thread when launched under MPI: MULTIPLE with the watchdog, else
 * FUNNELED). Under MPI with more than one rank a watchdog (core/mpi_watch.h) stops a job
 * whose host is lost: SLUICE_MPI_TIMEOUT is the number of seconds a rank may stay silent
 * (SL_MPI_TIMEOUT_DEFAULT when unset; 0 for no watchdog; anything else but a number of
 * seconds up to 86400 is an SL_ERR_USAGE error). */
int sl_world_init(struct sl_world *w, int *argc, char ***argv);
/* The seconds of silence after which a rank is lost: long enough for a loaded host's
 * thread to be late many times over, short enough that a job on a dead host stops in a
 * minute instead of hanging for ever. */
#define SL_MPI_TIMEOUT_DEFAULT 60
/* What the watchdog calls, from its thread, with a message naming the lost rank and its
 * host: report it and stop the job (sl_world_abort). Set before sl_world_init. */
void sl_world_on_lost(void (*fn)(const char *msg));
void sl_world_finalize(struct sl_world *w);
/* Stop every rank now: MPI_Abort under MPI with size > 1, exit(code) otherwise. */
void sl_world_abort(const struct sl_world *w, int code) __attribute__((noreturn));

/* The process-wide world set up by the command dispatcher (a 1-rank world before). */
struct sl_world *sl_world_get(void);
/* The MPI communicator (MPI_Comm *) or NULL when MPI is not in use. */
void *sl_world_comm(const struct sl_world *w);
/* True when the process was started by an MPI launcher. */
int sl_world_launched(void);

/* A group of w: the ranks passing the same color, ranked by key (MPI_Comm_split).
 * Collective over w. Every collective below works on the group; release it with
 * sl_world_group_free. Without MPI, or for a negative color, the group is a 1-rank world. */
int sl_world_split(const struct sl_world *w, int color, int key, struct sl_world *group);
void sl_world_group_free(struct sl_world *group);

/* Point to point: n floats to / from rank `peer` of w (blocking, tag 0). */
int sl_world_send_f32(const struct sl_world *w, const float *v, size_t n, int peer);
int sl_world_recv_f32(const struct sl_world *w, float *v, size_t n, int peer);
/* Non-blocking send of n floats (below 2^31): *req is set (NULL when nothing is pending);
 * sl_world_wait completes it (a NULL *req is a no-op). v must stay valid until then. */
int sl_world_isend_f32(const struct sl_world *w, const float *v, size_t n, int peer, void **req);
int sl_world_wait(void **req);
/* Non-blocking transfers of n bytes (any n: messages of at most 1 GiB each, in order) to or
 * from rank `peer` of w, tag 0 like the f32 ones; *req as for sl_world_isend_f32 (completed
 * by sl_world_wait; buf untouched by the caller until then). Under MPI only (SL_ERR_MPI
 * otherwise: a world of one rank has no peer). */
int sl_world_isend(const struct sl_world *w, const void *buf, size_t n, int peer, void **req);
int sl_world_irecv(const struct sl_world *w, void *buf, size_t n, int peer, void **req);

/* Typed blocks of `count` elements of `width` bytes (1, 2, 4 or 8; count below 2^31), for
 * callers that move raw bits (bf16 as 2-byte words, fp32 as 4):
 * every rank's block d of send[size * count] to rank d, which receives it as block r (the
 * sender's rank) of recv[size * count] (MPI_Alltoall; send and recv do not overlap). */
int sl_world_alltoall(const struct sl_world *w, const void *send, void *recv, size_t count,
                      size_t width);
/* mine[count] from every rank into all[size * count] in rank order (MPI_Allgather); in place
 * when mine == all + rank * count * width. */
int sl_world_allgather(const struct sl_world *w, const void *mine, void *all, size_t count,
                       size_t width);

/* mine[n] from every rank into all[size * n] in rank order (MPI_Allgather). */
int sl_world_allgather_f32(const struct sl_world *w, const float *mine, float *all, size_t n);
/* The sum over ranks of all[size * n], rank r receiving block r into mine[n]
 * (MPI_Reduce_scatter_block). */
int sl_world_reduce_scatter_f32(const struct sl_world *w, const float *all, float *mine, size_t n);

/* Blocks of variable size: rank r's block of a buffer of bounds[size] floats is
 * [bounds[r], bounds[r + 1]) (bounds has size + 1 entries, non-decreasing, bounds[size]
 * below 2^31). */
/* In place: rank r's block of all becomes the sum over ranks of that block; the rest of all
 * is undefined afterwards (MPI_Reduce_scatter). */
int sl_world_reduce_scatterv_f32(const struct sl_world *w, float *all, const size_t *bounds);
/* In place: every rank's block of all, from that rank to every rank (MPI_Allgatherv). */
int sl_world_allgatherv_f32(const struct sl_world *w, float *all, const size_t *bounds);
/* mine (this rank's block size) from every rank into all at its block, on root only
 * (MPI_Gatherv; all may be NULL on the other ranks). */
int sl_world_gatherv_f32(const struct sl_world *w, const float *mine, float *all,
                         const size_t *bounds, int root);

int sl_world_barrier(const struct sl_world *w);
int sl_world_bcast(const struct sl_world *w, void *buf, size_t n, int root);
int sl_world_allreduce_u64(const struct sl_world *w, uint64_t *v, size_t n, enum sl_reduce_op op);
int sl_world_allreduce_i64(const struct sl_world *w, int64_t *v, size_t n, enum sl_reduce_op op);
int sl_world_allreduce_f64(const struct sl_world *w, double *v, size_t n, enum sl_reduce_op op);
int sl_world_allreduce_f32(const struct sl_world *w, float *v, size_t n, enum sl_reduce_op op);

/* Every rank contributes n bytes; every rank receives all contributions concatenated in
 * rank order into `all` (appended), with per-rank byte counts in counts[size] (caller
 * allocated, may be NULL). */
int sl_world_allgather_bytes(const struct sl_world *w, const void *data, size_t n,
                             struct sl_buf *all, uint64_t *counts);
/* Like allgather but only `root` receives. */
int sl_world_gather_bytes(const struct sl_world *w, const void *data, size_t n, int root,
                          struct sl_buf *all, uint64_t *counts);

/* Personalised exchange: rank r sends send_counts[d] bytes (at send_offsets[d]) to each d.
 * recv receives what every source sent, concatenated in source order; recv_counts[size]
 * (caller allocated) gets the sizes. Any volume (rounds of at most 1 GiB per pair). */
int sl_world_alltoallv(const struct sl_world *w, const void *send, const uint64_t *send_counts,
                       const uint64_t *send_offsets, struct sl_buf *recv, uint64_t *recv_counts);

/* Sum (max for "_max" names) counters over ranks into rank 0's set; other ranks keep theirs.
 * Collective. With `all` set, every rank gets the total. */
int sl_world_reduce_counters(const struct sl_world *w, struct sl_counters *c, int all);

#endif
