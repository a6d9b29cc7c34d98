/* The MPI world and its collectives; a single-rank world when not launched by MPI. */
#include "core/world.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/dl.h"
#include "core/err.h"
#include "core/world_mpi.h"

#include <stdlib.h>
#include <string.h>

/* The MPI side (core/world_mpi.h), set by sl_world_init whenever it sets a world's mpi
 * field (never in a build without MPI). */
static const struct sl_mpi *mpi;

#ifdef SL_HAVE_MPI
#include <dlfcn.h>
#include <limits.h>

/* The test programs link the MPI side (the weak reference is then set); the sluice binary
 * loads it from libsluice-mpi.so beside itself (or the file named by SLUICE_MPI_LIB). */
extern const struct sl_mpi sl_mpi_impl __attribute__((weak));

static int load_mpi(void)
{
    if (&sl_mpi_impl) {
        mpi = &sl_mpi_impl;
        return 0;
    }
    char path[PATH_MAX];
    if (sl_dl_beside_binary(path, sizeof(path), "libsluice-mpi.so", "SLUICE_MPI_LIB"))
        return sl_err_set(SL_ERR_MPI, "%s", path);
    /* global: Open MPI's components, which it loads itself, resolve its symbols */
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return sl_err_set(SL_ERR_MPI,
                          "launched under MPI, but cannot load sluice's MPI library: %s\nhint: "
                          "it is built by make beside the binary; SLUICE_NO_MPI=1 runs one rank",
                          dlerror());
    mpi = (const struct sl_mpi *)dlsym(h, "sl_mpi_impl");
    if (!mpi)
        return sl_err_set(SL_ERR_MPI, "'%s' is not sluice's MPI library", path);
    return 0;
}
#endif

static struct sl_world global_world = { 0, 1, 0 };
static void (*on_lost)(const char *msg);

void sl_world_on_lost(void (*fn)(const char *msg))
{
    on_lost = fn;
}

/* SLUICE_MPI_TIMEOUT in seconds (core/world.h) */
static int mpi_timeout(double *out)
{
    const char *v = getenv("SLUICE_MPI_TIMEOUT");
    *out = SL_MPI_TIMEOUT_DEFAULT;
    if (!v || !*v)
        return 0;
    char *end;
    double t = strtod(v, &end);
    if (*end || !(t >= 0 && t <= 86400))
        return sl_err_set(SL_ERR_USAGE,
                          "SLUICE_MPI_TIMEOUT='%s' is not a number of seconds from 0 to 86400\n"
                          "hint: the seconds a rank may stay silent before the job stops; 0 "
                          "turns the watchdog off",
                          v);
    *out = t;
    return 0;
}

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
        double timeout;
        int rc = mpi_timeout(&timeout);
        if (!rc)
            rc = load_mpi();
        if (!rc)
            rc = mpi->init(w, argc, argv, on_lost ? timeout : 0, on_lost);
        if (rc)
            return rc;
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
    if (w->mpi)
        mpi->finalize(w);
}

void sl_world_abort(const struct sl_world *w, int code)
{
    if (w->mpi)
        mpi->abort(w, code);
    exit(code);
}

void *sl_world_comm(const struct sl_world *w)
{
    return w->mpi ? mpi->comm(w) : NULL;
}

int sl_world_split(const struct sl_world *w, int color, int key, struct sl_world *group)
{
    *group = (struct sl_world){ 0, 1, 0 };
    return w->mpi ? mpi->split(w, color, key, group) : 0;
}

void sl_world_group_free(struct sl_world *group)
{
    if (group->mpi >= 2)
        mpi->group_free(group);
    *group = (struct sl_world){ 0, 1, 0 };
}

/* Point to point: nothing to do on a world that is not under MPI (a build without MPI has
 * no peer to talk to at all). */
static int no_peer(void)
{
#ifdef SL_HAVE_MPI
    return 0;
#else
    return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
#endif
}

int sl_world_send_f32(const struct sl_world *w, const float *v, size_t n, int peer)
{
    return w->mpi ? mpi->send_f32(w, v, n, peer) : no_peer();
}

int sl_world_recv_f32(const struct sl_world *w, float *v, size_t n, int peer)
{
    return w->mpi ? mpi->recv_f32(w, v, n, peer) : no_peer();
}

int sl_world_isend_f32(const struct sl_world *w, const float *v, size_t n, int peer, void **req)
{
    *req = NULL;
    if (!w->mpi)
        return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
    return mpi->isend_f32(w, v, n, peer, req);
}

int sl_world_isend(const struct sl_world *w, const void *buf, size_t n, int peer, void **req)
{
    *req = NULL;
    if (!w->mpi)
        return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
    return mpi->isend(w, buf, n, peer, req);
}

int sl_world_irecv(const struct sl_world *w, void *buf, size_t n, int peer, void **req)
{
    *req = NULL;
    if (!w->mpi)
        return sl_err_set(SL_ERR_MPI, "point to point transfer without MPI");
    return mpi->irecv(w, buf, n, peer, req);
}

int sl_world_wait(void **req)
{
    if (!*req)
        return 0;
    int rc = mpi ? mpi->wait(*req) : 0; /* a request exists only under MPI */
    free(*req);
    *req = NULL;
    return rc;
}

/* True when a collective has other ranks to work with. */
#define MANY(w) ((w)->mpi && (w)->size > 1)

int sl_world_allgather_f32(const struct sl_world *w, const float *mine, float *all, size_t n)
{
    if (MANY(w))
        return mpi->allgather_f32(w, mine, all, n);
    if (all != mine)
        memmove(all, mine, n * sizeof(float));
    return 0;
}

int sl_world_alltoall(const struct sl_world *w, const void *send, void *recv, size_t count,
                      size_t width)
{
    if (MANY(w))
        return mpi->alltoall(w, send, recv, count, width);
    memmove(recv, send, count * width);
    return 0;
}

int sl_world_allgather(const struct sl_world *w, const void *mine, void *all, size_t count,
                       size_t width)
{
    if (MANY(w))
        return mpi->allgather(w, mine, all, count, width);
    if (all != mine)
        memmove(all, mine, count * width);
    return 0;
}

int sl_world_reduce_scatter_f32(const struct sl_world *w, const float *all, float *mine, size_t n)
{
    if (MANY(w))
        return mpi->reduce_scatter_f32(w, all, mine, n);
    if (all != mine)
        memmove(mine, all, n * sizeof(float));
    return 0;
}

int sl_world_reduce_scatterv_f32(const struct sl_world *w, float *all, const size_t *bounds)
{
    return MANY(w) ? mpi->reduce_scatterv_f32(w, all, bounds) : 0;
}

int sl_world_allgatherv_f32(const struct sl_world *w, float *all, const size_t *bounds)
{
    return MANY(w) ? mpi->allgatherv_f32(w, all, bounds) : 0;
}

int sl_world_gatherv_f32(const struct sl_world *w, const float *mine, float *all,
                         const size_t *bounds, int root)
{
    if (MANY(w))
        return mpi->gatherv_f32(w, mine, all, bounds, root);
    if (all && all + bounds[0] != mine)
        memmove(all + bounds[0], mine, (bounds[1] - bounds[0]) * sizeof(float));
    return 0;
}

int sl_world_barrier(const struct sl_world *w)
{
    return w->mpi ? mpi->barrier(w) : 0;
}

int sl_world_bcast(const struct sl_world *w, void *buf, size_t n, int root)
{
    return MANY(w) ? mpi->bcast(w, buf, n, root) : 0;
}

int sl_world_allreduce_u64(const struct sl_world *w, uint64_t *v, size_t n, enum sl_reduce_op op)
{
    return MANY(w) ? mpi->allreduce(w, v, n, SL_MPI_U64, op) : 0;
}

int sl_world_allreduce_i64(const struct sl_world *w, int64_t *v, size_t n, enum sl_reduce_op op)
{
    return MANY(w) ? mpi->allreduce(w, v, n, SL_MPI_I64, op) : 0;
}

int sl_world_allreduce_f64(const struct sl_world *w, double *v, size_t n, enum sl_reduce_op op)
{
    return MANY(w) ? mpi->allreduce(w, v, n, SL_MPI_F64, op) : 0;
}

int sl_world_allreduce_f32(const struct sl_world *w, float *v, size_t n, enum sl_reduce_op op)
{
    return MANY(w) ? mpi->allreduce(w, v, n, SL_MPI_F32, op) : 0;
}

static int gather_impl(const struct sl_world *w, const void *data, size_t n, int root,
                       struct sl_buf *all, uint64_t *counts)
{
    if (!MANY(w)) {
        if (counts)
            counts[0] = n;
        return all ? sl_buf_append(all, data, n) : 0;
    }
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
    if (MANY(w))
        return mpi->alltoallv(w, send, send_counts, send_offsets, recv, recv_counts);
    recv_counts[0] = send_counts[0];
    return sl_buf_append(recv, (const char *)send + send_offsets[0], send_counts[0]);
}

int sl_world_reduce_counters(const struct sl_world *w, struct sl_counters *c, int all)
{
    if (!MANY(w))
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
