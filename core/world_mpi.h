/* The MPI side of the world (core/world.h), in its own library, libsluice-mpi.so beside the
 * sluice binary, which core/world.c loads when the process was started by an MPI launcher.
 * Linked into the binary, Open MPI and the libraries it brings (hwloc, libevent, udev) were
 * loaded by every command at start-up, though only a launched one uses them: sluice
 * --version 9.5 -> 6.8 ms of CPU (medians of 60). The MPI test program links
 * core/world_mpi.c itself.
 *
 * Each function is the MPI half of the sl_world_ function of the same name, called only for
 * a world with w->mpi set (and, for the collectives, more than one rank). */
#ifndef SL_WORLD_MPI_H
#define SL_WORLD_MPI_H

#include "core/world.h"

enum sl_mpi_type { SL_MPI_U64, SL_MPI_I64, SL_MPI_F64, SL_MPI_F32 };

struct sl_mpi {
    /* timeout: the watchdog's (core/mpi_watch.h), 0 for none; lost: what it calls */
    int (*init)(struct sl_world *w, int *argc, char ***argv, double timeout,
                void (*lost)(const char *msg));
    void (*finalize)(struct sl_world *w);
    void (*abort)(const struct sl_world *w, int code);
    void *(*comm)(const struct sl_world *w);
    int (*split)(const struct sl_world *w, int color, int key, struct sl_world *group);
    void (*group_free)(struct sl_world *group);
    int (*send_f32)(const struct sl_world *w, const float *v, size_t n, int peer);
    int (*recv_f32)(const struct sl_world *w, float *v, size_t n, int peer);
    int (*isend_f32)(const struct sl_world *w, const float *v, size_t n, int peer, void **req);
    int (*wait)(void *req);
    int (*isend)(const struct sl_world *w, const void *buf, size_t n, int peer, void **req);
    int (*irecv)(const struct sl_world *w, void *buf, size_t n, int peer, void **req);
    int (*alltoall)(const struct sl_world *w, const void *send, void *recv, size_t count,
                    size_t width);
    int (*allgather)(const struct sl_world *w, const void *mine, void *all, size_t count,
                     size_t width);
    int (*allgather_f32)(const struct sl_world *w, const float *mine, float *all, size_t n);
    int (*reduce_scatter_f32)(const struct sl_world *w, const float *all, float *mine, size_t n);
    int (*reduce_scatterv_f32)(const struct sl_world *w, float *all, const size_t *bounds);
    int (*allgatherv_f32)(const struct sl_world *w, float *all, const size_t *bounds);
    int (*gatherv_f32)(const struct sl_world *w, const float *mine, float *all,
                       const size_t *bounds, int root);
    int (*barrier)(const struct sl_world *w);
    int (*bcast)(const struct sl_world *w, void *buf, size_t n, int root);
    int (*allreduce)(const struct sl_world *w, void *v, size_t n, enum sl_mpi_type type,
                     enum sl_reduce_op op);
    int (*alltoallv)(const struct sl_world *w, const void *send, const uint64_t *send_counts,
                     const uint64_t *send_offsets, struct sl_buf *recv, uint64_t *recv_counts);
};

/* The table, defined by core/world_mpi.c (the symbol core/world.c looks up). */
extern const struct sl_mpi sl_mpi_impl;

#endif
