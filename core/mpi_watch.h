/* The job's watchdog under MPI (part of libsluice-mpi.so, core/world_mpi.h): every rank
 * watches its two neighbours in the ring of ranks (r - 1 and r + 1, modulo the size).
 *
 * A thread of each rank sends an empty message (a heartbeat) to both neighbours every
 * interval (a tenth of the timeout, at most one second) on a communicator of its own, and
 * receives theirs. A neighbour from which nothing came for `timeout` seconds is lost: its
 * host is down or cut off, or its process stopped. The thread then calls `lost` with a
 * message naming that rank and its host, and the rank it was seen from; `lost` is expected
 * to stop the job (sl_world_abort). A rank busy outside MPI still beats (the thread is its
 * own), so only a silent host trips the watchdog, never a slow collective: an MPI
 * collective that waits on a dead peer, which Open MPI's TCP transport would wait on
 * forever, ends within `timeout` plus an interval.
 *
 * A rank that ends says so to its neighbours (sl_mpi_watch_stop), which stop watching it.
 * The watchdog needs MPI_THREAD_MULTIPLE (the thread talks while the main thread may be
 * in a collective).
 */
#ifndef SL_MPI_WATCH_H
#define SL_MPI_WATCH_H

#include <mpi.h>

struct sl_mpi_watch;

/* Start watching on a duplicate of comm (collective over comm: it also gathers every
 * rank's host name). timeout in seconds, above 0. *out is NULL for a world of one rank.
 * Returns 0 or a negative enum sl_err with a message. */
int sl_mpi_watch_start(MPI_Comm comm, double timeout, void (*lost)(const char *msg),
                       struct sl_mpi_watch **out);
/* Stop the thread, tell the neighbours this rank ends, and free wd (NULL: nothing). */
void sl_mpi_watch_stop(struct sl_mpi_watch *wd);

#endif
