/* The MPI world and its collectives; a single-rank world when not launched by MPI. */
#include "core/world.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"

#include <stdlib.h>
#include <string.h>

#ifdef SL_HAVE_MPI
#include <mpi.h>
static MPI_Comm world_comm;
/* the groups' communicators (sl_world_split); a group's mpi field is 2 + its index */
#define MAX_GROUPS 64
static MPI_Comm group_comm[MAX_GROUPS];
static int group_used[MAX_GROUPS];
/* the communicator of w: its own for a group, else the world's */
#define COMM(w) ((w)->mpi >= 2 ? group_comm[(w)->mpi - 2] : world_comm)
#endif

static struct sl_world global_world = { 0, 1, 0 };

struct sl_world *sl_world_get(void)
{
    return &global_world;
}

int sl_world_launched(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                        "PMI_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE" };
    const char *off = getenv("SLUICE_NO_MPI");
    if (off && *off && strcmp(off, "0") != 0)
        return 0;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}

int sl_world_init(struct sl_world *w, int *argc, char ***argv)
{
    w->rank = 0;
    w->size = 1;
    w->mpi = 0;
#ifdef SL_HAVE_MPI
    if (sl_world_launched()) {
        int provided;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return sl_err_set(SL_ERR_MPI, "MPI_Init_thread failed");
        MPI_Comm_dup(MPI_COMM_WORLD, &world_comm);
        MPI_Comm_set_errhandler(world_comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(world_comm, &w->rank);
        MPI_Comm_size(world_comm, &w->size);
        w->mpi = 1;
    }
#else
    (void)argc;
    (void)argv;
#endif
    if (w != &global_world)
        global_world = *w;
    return 0;
}

void sl_world_finalize(struct sl_world *w)
{
#ifdef SL_HAVE_MPI
    if (w->mpi) {
        MPI_Comm_free(&world_comm);
        MPI_Finalize();
        w->mpi = 0;
    }
#else
    (void)w;
#endif
}

void sl_world_abort(const struct sl_world *w, int code)
{
#ifdef SL_HAVE_MPI
    if (w->mpi && w->size > 1)
        MPI_Abort(world_comm, code);
    if (w->mpi)
        MPI_Finalize();
#else
    (void)w;
#endif
    exit(code);
}

void *sl_world_comm(const struct sl_world *w)
{
#ifdef SL_HAVE_MPI
    return w->mpi ? (w->mpi >= 2 ? (void *)&group_comm[w->mpi - 2] : (void *)&world_comm) : NULL;
#else
    (void)w;
    return NULL;
#endif
}

#ifdef SL_HAVE_MPI
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
#endif

int sl_world_split(const struct sl_world *w, int color, int key, struct sl_world *group)
{
    *group = (struct sl_world){ 0, 1, 0 };
#ifdef SL_HAVE_MPI
    if (w->mpi) {
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
    }
#else
    (void)w;
    (void)color;
    (void)key;
#endif
    return 0;
}

void sl_world_group_free(struct sl_world *group)
{
#ifdef SL_HAVE_MPI
    if (group->mpi >= 2) {
        MPI_Comm_free(&group_comm[group->mpi - 2]);
        group_used[group->mpi - 2] = 0;
    }
#endif
    *group = (struct sl_world){ 0, 1, 0 };
}

int sl_world_send_f32(const struct sl_world *w, const float *v, size_t n, int peer)
{
#ifdef SL_HAVE_MPI
    while (w->mpi && n) {
        int chunk = n > (1u << 26) ? 1 << 26 : (int)n;
        int rc = mpi_check(MPI_Send(v, chunk, MPI_FLOAT, peer, 0, COMM(w)), "MPI_Send");
        if (rc)
            return rc;
        v += chunk;
        n -= (size_t)chunk;
    }
    return 0;
#else
    (void)w;
    (void)v;
    (void)n;
    (void)peer;
    return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
#endif
}

int sl_world_recv_f32(const struct sl_world *w, float *v, size_t n, int peer)
{
#ifdef SL_HAVE_MPI
    while (w->mpi && n) {
        int chunk = n > (1u << 26) ? 1 << 26 : (int)n;
        int rc = mpi_check(MPI_Recv(v, chunk, MPI_FLOAT, peer, 0, COMM(w), MPI_STATUS_IGNORE),
                           "MPI_Recv");
        if (rc)
            return rc;
        v += chunk;
        n -= (size_t)chunk;
    }
    return 0;
#else
    (void)w;
    (void)v;
    (void)n;
    (void)peer;
    return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
#endif
}

int sl_world_isend_f32(const struct sl_world *w, const float *v, size_t n, int peer, void **req)
{
    *req = NULL;
#ifdef SL_HAVE_MPI
    if (!w->mpi)
        return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
    if (n > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "send of %zu floats: too large", n);
    MPI_Request *r = sl_xmalloc(sizeof(*r));
    int rc = mpi_check(MPI_Isend(v, (int)n, MPI_FLOAT, peer, 0, COMM(w), r), "MPI_Isend");
    if (rc)
        free(r);
    else
        *req = r;
    return rc;
#else
    (void)w;
    (void)v;
    (void)n;
    (void)peer;
    return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
#endif
}

int sl_world_wait(void **req)
{
    if (!*req)
        return 0;
    int rc = 0;
#ifdef SL_HAVE_MPI
    rc = mpi_check(MPI_Wait((MPI_Request *)*req, MPI_STATUS_IGNORE), "MPI_Wait");
#endif
    free(*req);
    *req = NULL;
    return rc;
}

int sl_world_allgather_f32(const struct sl_world *w, const float *mine, float *all, size_t n)
{
    if (!w->mpi || w->size == 1) {
        if (all != mine)
            memmove(all, mine, n * sizeof(float));
        return 0;
    }
#ifdef SL_HAVE_MPI
    if (n > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "all-gather of %zu floats per rank: too large", n);
    return mpi_check(MPI_Allgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, COMM(w)),
                     "MPI_Allgather");
#else
    return 0;
#endif
}

int sl_world_reduce_scatter_f32(const struct sl_world *w, const float *all, float *mine, size_t n)
{
    if (!w->mpi || w->size == 1) {
        if (all != mine)
            memmove(mine, all, n * sizeof(float));
        return 0;
    }
#ifdef SL_HAVE_MPI
    if (n > (size_t)INT32_MAX)
        return sl_err_set(SL_ERR_MPI, "reduce-scatter of %zu floats per rank: too large", n);
    return mpi_check(MPI_Reduce_scatter_block(all, mine, (int)n, MPI_FLOAT, MPI_SUM, COMM(w)),
                     "MPI_Reduce_scatter_block");
#else
    return 0;
#endif
}

#ifdef SL_HAVE_MPI
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
#endif

int sl_world_reduce_scatterv_f32(const struct sl_world *w, float *all, const size_t *bounds)
{
    if (!w->mpi || w->size == 1)
        return 0;
#ifdef SL_HAVE_MPI
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
#else
    (void)all;
    (void)bounds;
    return 0;
#endif
}

int sl_world_allgatherv_f32(const struct sl_world *w, float *all, const size_t *bounds)
{
    if (!w->mpi || w->size == 1)
        return 0;
#ifdef SL_HAVE_MPI
    int *counts = NULL, *displs = NULL;
    int rc = v_counts(w, bounds, "all-gather", &counts, &displs);
    if (!rc)
        rc = mpi_check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs,
                                      MPI_FLOAT, COMM(w)),
                       "MPI_Allgatherv");
    free(counts);
    free(displs);
    return rc;
#else
    (void)all;
    (void)bounds;
    return 0;
#endif
}

int sl_world_gatherv_f32(const struct sl_world *w, const float *mine, float *all,
                         const size_t *bounds, int root)
{
    if (!w->mpi || w->size == 1) {
        if (all && all + bounds[0] != mine)
            memmove(all + bounds[0], mine, (bounds[1] - bounds[0]) * sizeof(float));
        return 0;
    }
#ifdef SL_HAVE_MPI
    int *counts = NULL, *displs = NULL;
    int rc = v_counts(w, bounds, "gather", &counts, &displs);
    if (!rc)
        rc = mpi_check(MPI_Gatherv(mine, counts[w->rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT,
                                   root, COMM(w)),
                       "MPI_Gatherv");
    free(counts);
    free(displs);
    return rc;
#else
    (void)root;
    return 0;
#endif
}

int sl_world_barrier(const struct sl_world *w)
{
#ifdef SL_HAVE_MPI
    if (w->mpi)
        return mpi_check(MPI_Barrier(COMM(w)), "MPI_Barrier");
#else
    (void)w;
#endif
    return 0;
}

int sl_world_bcast(const struct sl_world *w, void *buf, size_t n, int root)
{
#ifdef SL_HAVE_MPI
    if (w->mpi && w->size > 1) {
        char *p = buf;
        while (n) {
            int chunk = n > (1u << 30) ? 1 << 30 : (int)n;
            int rc = mpi_check(MPI_Bcast(p, chunk, MPI_BYTE, root, COMM(w)), "MPI_Bcast");
            if (rc)
                return rc;
            p += chunk;
            n -= (size_t)chunk;
        }
    }
#else
    (void)w;
    (void)buf;
    (void)n;
    (void)root;
#endif
    return 0;
}

#ifdef SL_HAVE_MPI
#define ALLREDUCE(name, ctype, mtype)                                                              \
    int name(const struct sl_world *w, ctype *v, size_t n, enum sl_reduce_op op)                   \
    {                                                                                              \
        if (!w->mpi || w->size == 1)                                                               \
            return 0;                                                                              \
        while (n) {                                                                                \
            int chunk = n > (1u << 26) ? 1 << 26 : (int)n;                                         \
            int rc = mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, chunk, mtype, mpi_op(op), COMM(w)),  \
                               "MPI_Allreduce");                                                   \
            if (rc)                                                                                \
                return rc;                                                                         \
            v += chunk;                                                                            \
            n -= (size_t)chunk;                                                                    \
        }                                                                                          \
        return 0;                                                                                  \
    }
#else
#define ALLREDUCE(name, ctype, mtype)                                                              \
    int name(const struct sl_world *w, ctype *v, size_t n, enum sl_reduce_op op)                   \
    {                                                                                              \
        (void)w;                                                                                   \
        (void)v;                                                                                   \
        (void)n;                                                                                   \
        (void)op;                                                                                  \
        return 0;                                                                                  \
    }
#endif

ALLREDUCE(sl_world_allreduce_u64, uint64_t, MPI_UINT64_T)
ALLREDUCE(sl_world_allreduce_i64, int64_t, MPI_INT64_T)
ALLREDUCE(sl_world_allreduce_f64, double, MPI_DOUBLE)
ALLREDUCE(sl_world_allreduce_f32, float, MPI_FLOAT)

static int gather_impl(const struct sl_world *w, const void *data, size_t n, int root,
                       struct sl_buf *all, uint64_t *counts)
{
    if (w->size == 1 || !w->mpi) {
        if (counts)
            counts[0] = n;
        return all ? sl_buf_append(all, data, n) : 0;
    }
#ifdef SL_HAVE_MPI
    /* Exchange sizes, then route everything through alltoallv (handles > 2 GiB). */
    uint64_t *send_counts = sl_xcalloc((size_t)w->size, sizeof(uint64_t));
    uint64_t *send_offsets = sl_xcalloc((size_t)w->size, sizeof(uint64_t));
    uint64_t *recv_counts = sl_xcalloc((size_t)w->size, sizeof(uint64_t));
    for (int d = 0; d < w->size; d++)
        if (root < 0 || d == root)
            send_counts[d] = n;
    struct sl_buf tmp = SL_BUF_INIT;
    int rc = sl_world_alltoallv(w, data, send_counts, send_offsets, &tmp, recv_counts);
    if (!rc && all && (root < 0 || w->rank == root))
        rc = sl_buf_append(all, tmp.data ? tmp.data : "", tmp.len);
    if (counts && (root < 0 || w->rank == root))
        memcpy(counts, recv_counts, (size_t)w->size * sizeof(uint64_t));
    sl_buf_release(&tmp);
    free(send_counts);
    free(send_offsets);
    free(recv_counts);
    return rc;
#else
    return 0;
#endif
}

int sl_world_allgather_bytes(const struct sl_world *w, const void *data, size_t n,
                             struct sl_buf *all, uint64_t *counts)
{
    return gather_impl(w, data, n, -1, all, counts);
}

int sl_world_gather_bytes(const struct sl_world *w, const void *data, size_t n, int root,
                          struct sl_buf *all, uint64_t *counts)
{
    return gather_impl(w, data, n, root, all, counts);
}

int sl_world_alltoallv(const struct sl_world *w, const void *send, const uint64_t *send_counts,
                       const uint64_t *send_offsets, struct sl_buf *recv, uint64_t *recv_counts)
{
    if (!w->mpi || w->size == 1) {
        recv_counts[0] = send_counts[0];
        return sl_buf_append(recv, (const char *)send + send_offsets[0], send_counts[0]);
    }
#ifdef SL_HAVE_MPI
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
#else
    return 0;
#endif
}

int sl_world_reduce_counters(const struct sl_world *w, struct sl_counters *c, int all)
{
    if (!w->mpi || w->size == 1)
        return 0;
    struct sl_buf mine = SL_BUF_INIT, every = SL_BUF_INIT;
    uint64_t *counts = sl_xcalloc((size_t)w->size, sizeof(uint64_t));
    int rc = sl_counters_serialize(c, &mine);
    if (!rc)
        rc =
            all ? sl_world_allgather_bytes(w, mine.data ? mine.data : "", mine.len, &every, counts)
                : sl_world_gather_bytes(w, mine.data ? mine.data : "", mine.len, 0, &every, counts);
    if (!rc && (all || w->rank == 0)) {
        struct sl_counters total;
        sl_counters_init(&total);
        /* keep rank 0's name order first, then merge in rank order */
        uint64_t off = 0;
        for (int r = 0; r < w->size && !rc; r++) {
            rc = sl_counters_parse(&total, every.data + off, counts[r]);
            off += counts[r];
        }
        if (!rc) {
            sl_counters_release(c);
            *c = total;
        } else {
            sl_counters_release(&total);
        }
    }
    free(counts);
    sl_buf_release(&mine);
    sl_buf_release(&every);
    return rc;
}
