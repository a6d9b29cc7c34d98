/* The GPU trainer's collectives (train/gpu_comm.h): dispatch to a backend, a one-rank group
 * as device copies, and the NCCL backend (bootstrapped over the group's MPI communicator:
 * rank 0 of the group makes the unique id, sl_world_bcast hands it out).
 */
#include "train/gpu_comm_impl.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/world.h"
#include "kernels/cuda_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SL_HAVE_NCCL
#include <nccl.h>
#define NCCL_CHECK(call)                                                                           \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess)                                                                     \
            sl_cuda_fatal("nccl", ncclGetErrorString(r_), #call, __FILE__, __LINE__);              \
    } while (0)
#endif

size_t gcomm_type_size(enum gcomm_type t)
{
    return t == GCOMM_BF16 ? 2 : 4;
}

const char *gcomm_backend_name(enum gcomm_backend be)
{
    return be == GCOMM_MPI ? "mpi" : "nccl";
}

/* ---- NCCL ------------------------------------------------------------------------------ */

#ifdef SL_HAVE_NCCL
static ncclDataType_t nccl_type(enum gcomm_type t)
{
    return t == GCOMM_BF16 ? ncclBfloat16 : ncclFloat;
}

static ncclComm_t nccl_of(const struct gcomm *c)
{
    return (ncclComm_t)c->priv;
}

static int nccl_open(struct gcomm *c)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (c->rank == 0)
        NCCL_CHECK(ncclGetUniqueId(&id));
    int rc = sl_world_bcast(c->group, &id, sizeof(id), 0);
    if (rc)
        return rc;
    ncclComm_t comm;
    NCCL_CHECK(ncclCommInitRank(&comm, c->size, id, c->rank));
    c->priv = comm;
    return 0;
}

static void nccl_close(struct gcomm *c)
{
    if (c->priv)
        ncclCommDestroy(nccl_of(c));
}

static void nccl_all_reduce(struct gcomm *c, const void *send, void *recv, size_t count,
                            enum gcomm_type t, enum gcomm_op op, cudaStream_t st)
{
    NCCL_CHECK(ncclAllReduce(send, recv, count, nccl_type(t), op == GCOMM_MAX ? ncclMax : ncclSum,
                             nccl_of(c), st));
}

static void nccl_reduce_scatter(struct gcomm *c, const void *send, void *recv, size_t recvcount,
                                enum gcomm_type t, cudaStream_t st)
{
    NCCL_CHECK(ncclReduceScatter(send, recv, recvcount, nccl_type(t), ncclSum, nccl_of(c), st));
}

static void nccl_all_gather(struct gcomm *c, const void *send, void *recv, size_t sendcount,
                            enum gcomm_type t, cudaStream_t st)
{
    NCCL_CHECK(ncclAllGather(send, recv, sendcount, nccl_type(t), nccl_of(c), st));
}

static void nccl_broadcast(struct gcomm *c, const void *send, void *recv, size_t count,
                           enum gcomm_type t, int root, cudaStream_t st)
{
    NCCL_CHECK(ncclBroadcast(send, recv, count, nccl_type(t), root, nccl_of(c), st));
}

static void nccl_send(struct gcomm *c, const void *buf, size_t count, enum gcomm_type t, int peer,
                      cudaStream_t st)
{
    NCCL_CHECK(ncclSend(buf, count, nccl_type(t), peer, nccl_of(c), st));
}

static void nccl_recv(struct gcomm *c, void *buf, size_t count, enum gcomm_type t, int peer,
                      cudaStream_t st)
{
    NCCL_CHECK(ncclRecv(buf, count, nccl_type(t), peer, nccl_of(c), st));
}

static void nccl_group_begin(struct gcomm *c)
{
    (void)c;
    NCCL_CHECK(ncclGroupStart());
}

static void nccl_group_end(struct gcomm *c)
{
    (void)c;
    NCCL_CHECK(ncclGroupEnd());
}

static const struct gcomm_ops nccl_ops = {
    .open = nccl_open,
    .close = nccl_close,
    .all_reduce = nccl_all_reduce,
    .reduce_scatter = nccl_reduce_scatter,
    .all_gather = nccl_all_gather,
    .broadcast = nccl_broadcast,
    .send = nccl_send,
    .recv = nccl_recv,
    .group_begin = nccl_group_begin,
    .group_end = nccl_group_end,
};
#endif

/* ---- dispatch -------------------------------------------------------------------------- */

int gcomm_open(struct gcomm **out, enum gcomm_backend be, const struct sl_world *group)
{
    *out = NULL;
    const struct gcomm_ops *ops = NULL;
    if (group->size > 1) {
        if (be == GCOMM_NCCL) {
#ifdef SL_HAVE_NCCL
            ops = &nccl_ops;
#else
            return sl_err_set(SL_ERR_UNSUPPORTED,
                              "this build has no NCCL: %d ranks cannot talk over it\nhint: "
                              "train.comm=mpi, or install NCCL and rebuild",
                              group->size);
#endif
        } else {
            ops = &gcomm_mpi_ops;
        }
    }
    struct gcomm *c = sl_xcalloc(1, sizeof(*c));
    c->ops = ops;
    c->group = group;
    c->be = be;
    c->rank = group->rank;
    c->size = group->size;
    int rc = ops ? ops->open(c) : 0;
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void gcomm_close(struct gcomm *c)
{
    if (!c)
        return;
    if (c->ops)
        c->ops->close(c);
    free(c);
}

int gcomm_rank(const struct gcomm *c)
{
    return c->rank;
}

int gcomm_size(const struct gcomm *c)
{
    return c->size;
}

enum gcomm_backend gcomm_backend_of(const struct gcomm *c)
{
    return c->be;
}

/* one rank: the result is the input */
static void local_copy(const void *send, void *recv, size_t count, enum gcomm_type t,
                       cudaStream_t st)
{
    if (send != recv && count)
        CUDA_CHECK(cudaMemcpyAsync(recv, send, count * gcomm_type_size(t),
                                   cudaMemcpyDeviceToDevice, st));
}

void gcomm_all_reduce(struct gcomm *c, const void *send, void *recv, size_t count,
                      enum gcomm_type t, enum gcomm_op op, cudaStream_t st)
{
    if (c->ops)
        c->ops->all_reduce(c, send, recv, count, t, op, st);
    else
        local_copy(send, recv, count, t, st);
}

void gcomm_reduce_scatter(struct gcomm *c, const void *send, void *recv, size_t recvcount,
                          enum gcomm_type t, cudaStream_t st)
{
    if (c->ops)
        c->ops->reduce_scatter(c, send, recv, recvcount, t, st);
    else
        local_copy(send, recv, recvcount, t, st);
}

void gcomm_all_gather(struct gcomm *c, const void *send, void *recv, size_t sendcount,
                      enum gcomm_type t, cudaStream_t st)
{
    if (c->ops)
        c->ops->all_gather(c, send, recv, sendcount, t, st);
    else
        local_copy(send, recv, sendcount, t, st);
}

void gcomm_broadcast(struct gcomm *c, const void *send, void *recv, size_t count,
                     enum gcomm_type t, int root, cudaStream_t st)
{
    if (c->ops)
        c->ops->broadcast(c, send, recv, count, t, root, st);
    else
        local_copy(send, recv, count, t, st);
}

/* A one-rank group has no peer: a transfer to itself is a bug of the caller. */
static void no_peer(const char *what, int peer)
{
    char msg[96];
    snprintf(msg, sizeof(msg), "%s with peer %d in a group of one rank", what, peer);
    sl_cuda_fatal("gcomm", msg, what, __FILE__, __LINE__);
}

void gcomm_send(struct gcomm *c, const void *buf, size_t count, enum gcomm_type t, int peer,
                cudaStream_t st)
{
    if (!c->ops)
        no_peer("send", peer);
    c->ops->send(c, buf, count, t, peer, st);
}

void gcomm_recv(struct gcomm *c, void *buf, size_t count, enum gcomm_type t, int peer,
                cudaStream_t st)
{
    if (!c->ops)
        no_peer("recv", peer);
    c->ops->recv(c, buf, count, t, peer, st);
}

void gcomm_group_begin(struct gcomm *c)
{
    if (c->in_group)
        sl_cuda_fatal("gcomm", "group begun twice", "gcomm_group_begin", __FILE__, __LINE__);
    c->in_group = 1;
    if (c->ops)
        c->ops->group_begin(c);
}

void gcomm_group_end(struct gcomm *c)
{
    if (!c->in_group)
        sl_cuda_fatal("gcomm", "group ended without a begin", "gcomm_group_end", __FILE__,
                      __LINE__);
    c->in_group = 0;
    if (c->ops)
        c->ops->group_end(c);
}
