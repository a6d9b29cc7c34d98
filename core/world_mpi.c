/* The MPI side of the world (core/world_mpi.h): built into libsluice-mpi.so. */
#include "core/world_mpi.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/mpi_watch.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static MPI_Comm world_comm;
static struct sl_mpi_watch *watch;
/* the groups' communicators (split); a group's mpi field is 2 + its index */
#define MAX_GROUPS 64
static MPI_Comm group_comm[MAX_GROUPS];
static int group_used[MAX_GROUPS];
/* the communicator of w: its own for a group, else the world's */
#define COMM(w) ((w)->mpi >= 2 ? group_comm[(w)->mpi - 2] : world_comm)

static int mpi_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return sl_err_set(SL_ERR_MPI, "%s failed: %.*s", what, len, msg);
}

static MPI_Op mpi_op(enum sl_reduce_op op)
{
    return op == SL_SUM ? MPI_SUM : op == SL_MAX ? MPI_MAX : MPI_MIN;
}

static int init(struct sl_world *w, int *argc, char ***argv, double timeout,
                void (*lost)(const char *msg))
{
    /* the watchdog's thread talks while the main thread may be in a collective */
    int want = timeout > 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, provided;
    if (MPI_Init_thread(argc, argv, want, &provided) != MPI_SUCCESS)
        return sl_err_set(SL_ERR_MPI, "MPI_Init_thread failed");
    MPI_Comm_dup(MPI_COMM_WORLD, &world_comm);
    MPI_Comm_set_errhandler(world_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world_comm, &w->rank);
    MPI_Comm_size(world_comm, &w->size);
    w->mpi = 1;
    if (timeout > 0 && provided < MPI_THREAD_MULTIPLE)
        return sl_err_set(SL_ERR_MPI,
                          "the MPI library gives no MPI_THREAD_MULTIPLE, which the watchdog "
                          "needs\nhint: SLUICE_MPI_TIMEOUT=0 runs without it");
    return timeout > 0 ? sl_mpi_watch_start(world_comm, timeout, lost, &watch) : 0;
}

static void finalize(struct sl_world *w)
{
    sl_mpi_watch_stop(watch);
    watch = NULL;
    MPI_Comm_free(&world_comm);
    MPI_Finalize();
    w->mpi = 0;
}

static void abort_world(const struct sl_world *w, int code)
{
    if (w->size > 1)
        MPI_Abort(world_comm, code);
    MPI_Finalize();
}

static void *comm(const struct sl_world *w)
{
    return w->mpi >= 2 ? (void *)&group_comm[w->mpi - 2] : (void *)&world_comm;
}

static int split(const struct sl_world *w, int color, int key, struct sl_world *group)
{
    int k = 0;
    while (k < MAX_GROUPS && group_used[k])
        k++;
    if (k == MAX_GROUPS)
        return sl_err_set(SL_ERR_MPI, "more than %d MPI groups at once", MAX_GROUPS);
    MPI_Comm c;
    int rc = mpi_check(MPI_Comm_split(COMM(w), color < 0 ? MPI_UNDEFINED : color, key, &c),
                       "MPI_Comm_split");
    if (rc || c == MPI_COMM_NULL) /* a negative color: in no group */
        return rc;
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    group_comm[k] = c;
    group_used[k] = 1;
    MPI_Comm_rank(c, &group->rank);
    MPI_Comm_size(c, &group->size);
    group->mpi = 2 + k;
    return 0;
}

static void group_free(struct sl_world *group)
{
    MPI_Comm_free(&group_comm[group->mpi - 2]);
    group_used[group->mpi - 2] = 0;
}

static int send_f32(const struct sl_world *w, const float *v, size_t n, int peer)
{
    while (n) {
        int chunk = n > (1u << 26) ? 1 << 26 : (int)n;
        int rc = mpi_check(MPI_Send(v, chunk, MPI_FLOAT, peer, 0, COMM(w)), "MPI_Send");
        if (rc)
            return rc;
        v += chunk;
        n -= (size_t)chunk;
    }
    return 0;
}

static int recv_f32(const struct sl_world *w, float *v, size_t n, int peer)
{
    while (n) {
        int chunk = n > (1u << 26) ? 1 << 26 : (int)n;
        int rc = mpi_check(MPI_Recv(v, chunk, MPI_FLOAT, peer, 0, COMM(w), MPI_STATUS_IGNORE),
                           "MPI_Recv");
        if (rc)
            return rc;
        v += chunk;
        n -= (size_t)chunk;
    }
    return 0;
}

/* A pending transfer (sl_world_wait frees it): one MPI request per message. */
struct mreq {
    int n;
    MPI_Request r[];
};

/* Messages of the non-blocking byte transfers: 1 GiB, within MPI's int count. */
#define MSG_MAX ((size_t)1 << 30)

static int isend_f32(const struct sl_world *w, const float *v, size_t n, int peer, void **req)
{
    if (n > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "send of %zu floats: too large", n);
    struct mreq *q = sl_xmalloc(sizeof(*q) + sizeof(MPI_Request));
    q->n = 1;
    int rc = mpi_check(MPI_Isend(v, (int)n, MPI_FLOAT, peer, 0, COMM(w), q->r), "MPI_Isend");
    if (rc)
        free(q);
    else
        *req = q;
    return rc;
}

/* n bytes as messages of at most MSG_MAX, sent (send set) or received in order */
static int ibytes(const struct sl_world *w, void *buf, size_t n, int peer, int send, void **req)
{
    int msgs = (int)((n + MSG_MAX - 1) / MSG_MAX);
    struct mreq *q = sl_xmalloc(sizeof(*q) + (size_t)(msgs ? msgs : 1) * sizeof(MPI_Request));
    q->n = 0;
    int rc = 0;
    for (size_t off = 0; off < n && !rc; off += MSG_MAX) {
        int len = (int)(n - off < MSG_MAX ? n - off : MSG_MAX);
        char *p = (char *)buf + off;
        rc = send ? mpi_check(MPI_Isend(p, len, MPI_BYTE, peer, 0, COMM(w), &q->r[q->n]),
                              "MPI_Isend")
                  : mpi_check(MPI_Irecv(p, len, MPI_BYTE, peer, 0, COMM(w), &q->r[q->n]),
                              "MPI_Irecv");
        if (!rc)
            q->n++;
    }
    if (rc) { /* the receives posted are cancelled (buf is the caller's again) */
        for (int i = 0; i < q->n; i++) {
            if (!send)
                MPI_Cancel(&q->r[i]);
            MPI_Request_free(&q->r[i]);
        }
        free(q);
        return rc;
    }
    *req = q;
    return 0;
}

static int isend(const struct sl_world *w, const void *buf, size_t n, int peer, void **req)
{
    return ibytes(w, (void *)buf, n, peer, 1, req);
}

static int irecv(const struct sl_world *w, void *buf, size_t n, int peer, void **req)
{
    return ibytes(w, buf, n, peer, 0, req);
}

static int wait_req(void *req)
{
    struct mreq *q = req;
    if (!q->n)
        return 0;
    return mpi_check(MPI_Waitall(q->n, q->r, MPI_STATUSES_IGNORE), "MPI_Waitall");
}

static MPI_Datatype width_type(size_t width)
{
    return width == 8 ? MPI_UINT64_T : width == 4 ? MPI_UINT32_T : width == 2 ? MPI_UINT16_T
                                                                             : MPI_BYTE;
}

static int alltoall(const struct sl_world *w, const void *send, void *recv, size_t count,
                    size_t width)
{
    if (count > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "all-to-all of %zu elements per rank: too large", count);
    MPI_Datatype t = width_type(width);
    return mpi_check(MPI_Alltoall(send, (int)count, t, recv, (int)count, t, COMM(w)),
                     "MPI_Alltoall");
}

static int allgather(const struct sl_world *w, const void *mine, void *all, size_t count,
                     size_t width)
{
    if (count > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "all-gather of %zu elements per rank: too large", count);
    MPI_Datatype t = width_type(width);
    const char *at = (const char *)all + (size_t)w->rank * count * width;
    return mpi_check(MPI_Allgather(mine == at ? MPI_IN_PLACE : mine, (int)count, t, all,
                                   (int)count, t, COMM(w)),
                     "MPI_Allgather");
}

static int allgather_f32(const struct sl_world *w, const float *mine, float *all, size_t n)
{
    if (n > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "all-gather of %zu floats per rank: too large", n);
    return mpi_check(MPI_Allgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, COMM(w)),
                     "MPI_Allgather");
}

static int reduce_scatter_f32(const struct sl_world *w, const float *all, float *mine, size_t n)
{
    if (n > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "reduce-scatter of %zu floats per rank: too large", n);
    return mpi_check(MPI_Reduce_scatter_block(all, mine, (int)n, MPI_FLOAT, MPI_SUM, COMM(w)),
                     "MPI_Reduce_scatter_block");
}

/* bounds as MPI's counts and displacements (caller frees both) */
static int v_counts(const struct sl_world *w, const size_t *bounds, const char *what, int **counts,
                    int **displs)
{
    if (bounds[w->size] > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "%s of %zu floats: too large", what, bounds[w->size]);
    *counts = sl_xmalloc((size_t)w->size * sizeof(int));
    *displs = sl_xmalloc((size_t)w->size * sizeof(int));
    for (int r = 0; r < w->size; r++) {
        (*counts)[r] = (int)(bounds[r + 1] - bounds[r]);
        (*displs)[r] = (int)bounds[r];
    }
    return 0;
}

static int reduce_scatterv_f32(const struct sl_world *w, float *all, const size_t *bounds)
{
    int *counts = NULL, *displs = NULL;
    int rc = v_counts(w, bounds, "reduce-scatter", &counts, &displs);
    /* in place, MPI puts the block at the start of the buffer: moved to its own place */
    if (!rc)
        rc = mpi_check(MPI_Reduce_scatter(MPI_IN_PLACE, all, counts, MPI_FLOAT, MPI_SUM, COMM(w)),
                       "MPI_Reduce_scatter");
    if (!rc && displs[w->rank])
        memmove(all + displs[w->rank], all, (size_t)counts[w->rank] * sizeof(float));
    free(counts);
    free(displs);
    return rc;
}

static int allgatherv_f32(const struct sl_world *w, float *all, const size_t *bounds)
{
    int *counts = NULL, *displs = NULL;
    int rc = v_counts(w, bounds, "all-gather", &counts, &displs);
    if (!rc)
        rc = mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs,
                                      MPI_FLOAT, COMM(w)),
                       "MPI_Allgatherv");
    free(counts);
    free(displs);
    return rc;
}

static int gatherv_f32(const struct sl_world *w, const float *mine, float *all,
                       const size_t *bounds, int root)
{
    int *counts = NULL, *displs = NULL;
    int rc = v_counts(w, bounds, "gather", &counts, &displs);
    if (!rc)
        rc = mpi_check(MPI_Gatherv(mine, counts[w->rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT,
                                   root, COMM(w)),
                       "MPI_Gatherv");
    free(counts);
    free(displs);
    return rc;
}

static int barrier(const struct sl_world *w)
{
    return mpi_check(MPI_Barrier(COMM(w)), "MPI_Barrier");
}

static int bcast(const struct sl_world *w, void *buf, size_t n, int root)
{
    char *p = buf;
    while (n) {
        int chunk = n > (1u << 30) ? 1 << 30 : (int)n;
        int rc = mpi_check(MPI_Bcast(p, chunk, MPI_BYTE, root, COMM(w)), "MPI_Bcast");
        if (rc)
            return rc;
        p += chunk;
        n -= (size_t)chunk;
    }
    return 0;
}

static int allreduce(const struct sl_world *w, void *v, size_t n, enum sl_mpi_type type,
                     enum sl_reduce_op op)
{
    static const size_t width[] = { 8, 8, 8, 4 };
    MPI_Datatype t = type == SL_MPI_U64   ? MPI_UINT64_T
                     : type == SL_MPI_I64 ? MPI_INT64_T
                     : type == SL_MPI_F64 ? MPI_DOUBLE
                                          : MPI_FLOAT;
    char *p = v;
    while (n) {
        int chunk = n > (1u << 26) ? 1 << 26 : (int)n;
        int rc = mpi_check(MPI_Allreduce(MPI_IN_PLACE, p, chunk, t, mpi_op(op), COMM(w)),
                           "MPI_Allreduce");
        if (rc)
            return rc;
        p += (size_t)chunk * width[type];
        n -= (size_t)chunk;
    }
    return 0;
}

static int alltoallv(const struct sl_world *w, const void *send, const uint64_t *send_counts,
                     const uint64_t *send_offsets, struct sl_buf *recv, uint64_t *recv_counts)
{
    int size = w->size;
    int rc = mpi_check(
        MPI_Alltoall((void *)send_counts, 1, MPI_UINT64_T, recv_counts, 1, MPI_UINT64_T, COMM(w)),
        "MPI_Alltoall");
    if (rc)
        return rc;
    uint64_t total = 0;
    uint64_t *recv_base = sl_xcalloc((size_t)size, sizeof(uint64_t));
    for (int s = 0; s < size; s++) {
        recv_base[s] = total;
        total += recv_counts[s];
    }
    size_t start = recv->len;
    rc = sl_buf_reserve(recv, total);
    if (rc) {
        free(recv_base);
        return rc;
    }
    recv->len += total;
    recv->data[recv->len] = '\0';

    /* per-pair bytes per round, so that a round's total fits an int displacement */
    const uint64_t chunk =
        ((1u << 30) / (uint64_t)size) > (1u << 20) ? (1u << 30) / (uint64_t)size : (1u << 20);
    int *sc = sl_xcalloc((size_t)size, sizeof(int)), *sd = sl_xcalloc((size_t)size, sizeof(int));
    int *rcnt = sl_xcalloc((size_t)size, sizeof(int)), *rd = sl_xcalloc((size_t)size, sizeof(int));
    char *sbuf = NULL, *rbuf = NULL;
    for (uint64_t round = 0;; round++) {
        uint64_t off = round * chunk;
        uint64_t more = 0, smax = 0, rmax = 0;
        int stot = 0, rtot = 0;
        for (int d = 0; d < size; d++) {
            uint64_t s = send_counts[d] > off ? send_counts[d] - off : 0;
            uint64_t r = recv_counts[d] > off ? recv_counts[d] - off : 0;
            s = s > chunk ? chunk : s;
            r = r > chunk ? chunk : r;
            sc[d] = (int)s;
            rcnt[d] = (int)r;
            smax += s;
            rmax += r;
            more |= s | r;
        }
        uint64_t anymore = more ? 1 : 0;
        MPI_Allreduce(MPI_IN_PLACE, &anymore, 1, MPI_UINT64_T, MPI_MAX, COMM(w));
        if (!anymore)
            break;
        /* pack this round's pieces contiguously (int displacements) */
        sbuf = sl_xrealloc(sbuf, smax ? smax : 1);
        rbuf = sl_xrealloc(rbuf, rmax ? rmax : 1);
        for (int d = 0; d < size; d++) {
            sd[d] = stot;
            if (sc[d])
                memcpy(sbuf + stot, (const char *)send + send_offsets[d] + off, (size_t)sc[d]);
            stot += sc[d];
            rd[d] = rtot;
            rtot += rcnt[d];
        }
        rc = mpi_check(MPI_Alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rcnt, rd, MPI_BYTE, COMM(w)),
                       "MPI_Alltoallv");
        if (rc)
            break;
        for (int s = 0; s < size; s++)
            if (rcnt[s])
                memcpy(recv->data + start + recv_base[s] + off, rbuf + rd[s], (size_t)rcnt[s]);
    }
    free(sbuf);
    free(rbuf);
    free(sc);
    free(sd);
    free(rcnt);
    free(rd);
    free(recv_base);
    return rc;
}

const struct sl_mpi sl_mpi_impl = {
    .init = init,
    .finalize = finalize,
    .abort = abort_world,
    .comm = comm,
    .split = split,
    .group_free = group_free,
    .send_f32 = send_f32,
    .recv_f32 = recv_f32,
    .isend_f32 = isend_f32,
    .wait = wait_req,
    .isend = isend,
    .irecv = irecv,
    .alltoall = alltoall,
    .allgather = allgather,
    .allgather_f32 = allgather_f32,
    .reduce_scatter_f32 = reduce_scatter_f32,
    .reduce_scatterv_f32 = reduce_scatterv_f32,
    .allgatherv_f32 = allgatherv_f32,
    .gatherv_f32 = gatherv_f32,
    .barrier = barrier,
    .bcast = bcast,
    .allreduce = allreduce,
    .alltoallv = alltoallv,
};
