/* The backends behind train/gpu_comm.h: a table of operations each backend fills, and the
 * communicator every backend shares. train/gpu_comm.c dispatches (and does a one-rank group
 * itself); the NCCL backend is in gpu_comm.c, the MPI one in gpu_comm_mpi.c.
 */
#ifndef SL_TRAIN_GPU_COMM_IMPL_H
#define SL_TRAIN_GPU_COMM_IMPL_H

#include "train/gpu_comm.h"

struct gcomm_ops {
    /* set up c->priv for c->group (rank, size and backend already set); collective */
    int (*open)(struct gcomm *c);
    void (*close)(struct gcomm *c);
    void (*all_reduce)(struct gcomm *c, const void *send, void *recv, size_t count,
                       enum gcomm_type t, enum gcomm_op op, cudaStream_t st);
    void (*reduce_scatter)(struct gcomm *c, const void *send, void *recv, size_t recvcount,
                           enum gcomm_type t, cudaStream_t st);
    void (*all_gather)(struct gcomm *c, const void *send, void *recv, size_t sendcount,
                       enum gcomm_type t, cudaStream_t st);
    void (*broadcast)(struct gcomm *c, const void *send, void *recv, size_t count,
                      enum gcomm_type t, int root, cudaStream_t st);
    void (*send)(struct gcomm *c, const void *buf, size_t count, enum gcomm_type t, int peer,
                 cudaStream_t st);
    void (*recv)(struct gcomm *c, void *buf, size_t count, enum gcomm_type t, int peer,
                 cudaStream_t st);
    void (*group_begin)(struct gcomm *c);
    void (*group_end)(struct gcomm *c);
};

struct gcomm {
    const struct gcomm_ops *ops; /* NULL for a one-rank group */
    const struct sl_world *group;
    enum gcomm_backend be;
    int rank, size;
    int in_group; /* between gcomm_group_begin and gcomm_group_end */
    void *priv;   /* the backend's */
};

/* The MPI backend's table (train/gpu_comm_mpi.c). */
extern const struct gcomm_ops gcomm_mpi_ops;

/* Bytes of one element of type t. */
size_t gcomm_type_size(enum gcomm_type t);

#endif
