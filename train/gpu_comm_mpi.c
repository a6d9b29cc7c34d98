/* The MPI backend of the GPU trainer's collectives (train/gpu_comm.h, GCOMM_MPI): host-staged.
 * Each operation copies its input from the device into pinned host memory on the caller's
 * stream, waits for the stream to get there (the calling thread blocks), moves the bytes
 * through MPI (core/world.h, over a communicator of its own split from the group at open),
 * and copies the result back on the stream. The staging memory grows to the largest
 * operation and is freed at close; a buffer is reused only after the copy back out of it has
 * finished (an event per buffer), so the copy back stays asynchronous.
 *
 * Reductions are done on the host in rank order, so that every rank gets the same bits:
 * each rank receives every rank's block of its share (MPI_Alltoall), folds them from rank 0
 * up (fp32 in fp32; bf16 widened to fp32, summed or compared there and rounded once, to
 * nearest even, back to bf16), and an all-gather hands the reduced blocks out (all-reduce
 * = that reduce-scatter of blocks of ceil(count / size) elements, then the all-gather).
 * That is the emulated NCCL's order (kernels/emu/nccl.cc), so the two backends agree bit
 * for bit under the emulation; real NCCL's ring adds in another order and rounds bf16 at
 * every hop, so a bf16 sum can differ from it in the last bits, an fp32 sum of three or more
 * ranks by fp32 rounding.
 *
 * Send and receive between gcomm_group_begin and gcomm_group_end are posted non-blocking
 * (a send once its data is on the host) and completed at the end, where each received
 * buffer is copied to the device on its stream; collectives in a group run when called.
 * Outside a group a send or a receive completes before it returns. An MPI failure is fatal
 * (sl_cuda_fatal: the trainer's hook aborts every rank, as for an NCCL error).
 */
#include "train/gpu_comm_impl.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/world.h"
#include "kernels/cuda_common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WORLD_CHECK(call)                                                                          \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("mpi", sl_err_msg(), #call, __FILE__, __LINE__);                        \
    } while (0)

/* A pinned host buffer; `busy` when a copy to the device out of it may still be running
 * (until event `done`). */
struct stage {
    void *h;
    size_t cap;
    cudaEvent_t done;
    int busy;
};

/* A send or receive of the open group: its request, and for a receive where the bytes go. */
struct pending {
    void *req;
    int stage; /* index into m->p2p */
    void *dst; /* device buffer of a receive, NULL for a send */
    size_t bytes;
    cudaStream_t st;
};

struct mpi_comm {
    struct sl_world own;  /* this communicator's own MPI group (a split of the group) */
    struct stage coll;    /* the collectives' staging */
    struct stage *p2p;    /* one per transfer of a group (or the one outside a group) */
    int np2p;
    struct pending *pend; /* the transfers posted since gcomm_group_begin */
    int npend, cap_pend;
};

static struct mpi_comm *mc_of(struct gcomm *c)
{
    return c->priv;
}

/* At least `bytes` of s, free of any copy still reading it. */
static void *stage_get(struct stage *s, size_t bytes)
{
    if (s->busy) {
        CUDA_CHECK(cudaEventSynchronize(s->done));
        s->busy = 0;
    }
    if (!s->done)
        CUDA_CHECK(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
    if (bytes > s->cap) {
        size_t cap = s->cap * 2 > bytes ? s->cap * 2 : bytes;
        if (s->h)
            CUDA_CHECK(cudaFreeHost(s->h));
        s->h = NULL;
        s->cap = 0;
        CUDA_CHECK(cudaMallocHost(&s->h, cap));
        s->cap = cap;
    }
    return s->h;
}

/* A copy out of s was enqueued on st: s is busy until st gets past it. */
static void stage_hand_back(struct stage *s, cudaStream_t st)
{
    CUDA_CHECK(cudaEventRecord(s->done, st));
    s->busy = 1;
}

static void stage_free(struct stage *s)
{
    if (s->busy)
        cudaEventSynchronize(s->done);
    if (s->done)
        cudaEventDestroy(s->done);
    if (s->h)
        cudaFreeHost(s->h);
    memset(s, 0, sizeof(*s));
}

/* bytes from the device at src to the host at dst, enqueued on st; the thread waits until
 * they are there (and everything enqueued on st before) */
static void to_host(void *dst, const void *src, size_t bytes, cudaStream_t st)
{
    if (bytes)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, st));
    CUDA_CHECK(cudaStreamSynchronize(st));
}

static void to_device(void *dst, const void *src, size_t bytes, cudaStream_t st)
{
    if (bytes)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st));
}

/* ---- the host reduction -------------------------------------------------------------------- */

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* round to nearest, ties to even; a NaN stays a (quiet) NaN */
static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* fold b into the running value a: a + b, or the larger (a when they are equal or b is NaN,
 * b when a is NaN: the emulated NCCL's a > b ? a : b) */
static float combine(float a, float b, enum gcomm_op op)
{
    if (op == GCOMM_SUM)
        return a + b;
    return a > b ? a : b;
}

/* out[i] = the fold over ranks r = 0, 1, ... of in[r * n + i] */
static void reduce_blocks(void *out, const void *in, size_t n, int ranks, enum gcomm_type t,
                          enum gcomm_op op)
{
    if (t == GCOMM_F32) {
        const float *x = in;
        float *o = out;
        for (size_t i = 0; i < n; i++) {
            float acc = x[i];
            for (int r = 1; r < ranks; r++)
                acc = combine(acc, x[(size_t)r * n + i], op);
            o[i] = acc;
        }
        return;
    }
    const uint16_t *x = in;
    uint16_t *o = out;
    for (size_t i = 0; i < n; i++) {
        float acc = bf16_to_f32(x[i]);
        for (int r = 1; r < ranks; r++)
            acc = combine(acc, bf16_to_f32(x[(size_t)r * n + i]), op);
        o[i] = f32_to_bf16(acc);
    }
}

/* ---- collectives ---------------------------------------------------------------------------- */

/* The rank's reduced block: `in` holds every rank's blocks of blk elements (size x blk),
 * scratch as many; the fold of this rank's block over ranks lands at out. */
static void reduce_scatter_host(struct mpi_comm *m, const void *in, void *scratch, void *out,
                                size_t blk, enum gcomm_type t, enum gcomm_op op)
{
    size_t es = gcomm_type_size(t);
    WORLD_CHECK(sl_world_alltoall(&m->own, in, scratch, blk, es));
    reduce_blocks(out, scratch, blk, m->own.size, t, op);
}

static void mpi_all_reduce(struct gcomm *c, const void *send, void *recv, size_t count,
                           enum gcomm_type t, enum gcomm_op op, cudaStream_t st)
{
    if (!count) /* on every rank alike: nothing to do */
        return;
    struct mpi_comm *m = mc_of(c);
    size_t es = gcomm_type_size(t), n = (size_t)c->size;
    size_t blk = (count + n - 1) / n; /* the last blocks padded: their tails are never read */
    char *a = stage_get(&m->coll, 2 * n * blk * es);
    char *b = a + n * blk * es;
    to_host(a, send, count * es, st);
    memset(a + count * es, 0, (n * blk - count) * es);
    char *mine = a + (size_t)c->rank * blk * es;
    reduce_scatter_host(m, a, b, mine, blk, t, op);
    WORLD_CHECK(sl_world_allgather(&m->own, mine, a, blk, es));
    to_device(recv, a, count * es, st);
    stage_hand_back(&m->coll, st);
}

static void mpi_reduce_scatter(struct gcomm *c, const void *send, void *recv, size_t recvcount,
                               enum gcomm_type t, cudaStream_t st)
{
    if (!recvcount) /* on every rank alike: nothing to do */
        return;
    struct mpi_comm *m = mc_of(c);
    size_t es = gcomm_type_size(t), n = (size_t)c->size;
    char *a = stage_get(&m->coll, 2 * n * recvcount * es);
    char *b = a + n * recvcount * es;
    to_host(a, send, n * recvcount * es, st);
    reduce_scatter_host(m, a, b, a, recvcount, t, GCOMM_SUM);
    to_device(recv, a, recvcount * es, st);
    stage_hand_back(&m->coll, st);
}

static void mpi_all_gather(struct gcomm *c, const void *send, void *recv, size_t sendcount,
                           enum gcomm_type t, cudaStream_t st)
{
    if (!sendcount) /* on every rank alike: nothing to do */
        return;
    struct mpi_comm *m = mc_of(c);
    size_t es = gcomm_type_size(t), n = (size_t)c->size;
    char *a = stage_get(&m->coll, n * sendcount * es);
    char *mine = a + (size_t)c->rank * sendcount * es;
    to_host(mine, send, sendcount * es, st);
    WORLD_CHECK(sl_world_allgather(&m->own, mine, a, sendcount, es));
    to_device(recv, a, n * sendcount * es, st);
    stage_hand_back(&m->coll, st);
}

static void mpi_broadcast(struct gcomm *c, const void *send, void *recv, size_t count,
                          enum gcomm_type t, int root, cudaStream_t st)
{
    if (!count) /* on every rank alike: nothing to do */
        return;
    struct mpi_comm *m = mc_of(c);
    size_t bytes = count * gcomm_type_size(t);
    char *a = stage_get(&m->coll, bytes);
    if (c->rank == root)
        to_host(a, send, bytes, st);
    WORLD_CHECK(sl_world_bcast(&m->own, a, bytes, root));
    to_device(recv, a, bytes, st);
    stage_hand_back(&m->coll, st);
}

/* ---- point to point -------------------------------------------------------------------------- */

/* The staging of transfer i of a group (0 outside one). */
static struct stage *p2p_stage(struct mpi_comm *m, int i)
{
    if (i >= m->np2p) {
        m->p2p = sl_xrealloc(m->p2p, (size_t)(i + 1) * sizeof(*m->p2p));
        memset(m->p2p + m->np2p, 0, (size_t)(i + 1 - m->np2p) * sizeof(*m->p2p));
        m->np2p = i + 1;
    }
    return &m->p2p[i];
}

/* Complete transfers [0, npend): a receive's bytes go to the device on its stream. */
static void complete(struct mpi_comm *m)
{
    for (int i = 0; i < m->npend; i++) {
        struct pending *p = &m->pend[i];
        WORLD_CHECK(sl_world_wait(&p->req));
        if (p->dst) {
            struct stage *s = &m->p2p[p->stage];
            to_device(p->dst, s->h, p->bytes, p->st);
            stage_hand_back(s, p->st);
        }
    }
    m->npend = 0;
}

static void post(struct gcomm *c, void *dev, size_t bytes, int peer, int send, cudaStream_t st)
{
    struct mpi_comm *m = mc_of(c);
    if (peer < 0 || peer >= c->size || peer == c->rank)
        sl_cuda_fatal("gcomm", "send or receive with a peer outside the group, or itself",
                      send ? "gcomm_send" : "gcomm_recv", __FILE__, __LINE__);
    if (m->npend == m->cap_pend) {
        m->cap_pend = m->cap_pend ? 2 * m->cap_pend : 8;
        m->pend = sl_xrealloc(m->pend, (size_t)m->cap_pend * sizeof(*m->pend));
    }
    int i = m->npend;
    struct stage *s = p2p_stage(m, i);
    void *h = stage_get(s, bytes ? bytes : 1);
    struct pending *p = &m->pend[i];
    *p = (struct pending){ NULL, i, send ? NULL : dev, bytes, st };
    if (send) {
        to_host(h, dev, bytes, st);
        WORLD_CHECK(sl_world_isend(&m->own, h, bytes, peer, &p->req));
    } else {
        WORLD_CHECK(sl_world_irecv(&m->own, h, bytes, peer, &p->req));
    }
    m->npend++;
    if (!c->in_group)
        complete(m);
}

static void mpi_send(struct gcomm *c, const void *buf, size_t count, enum gcomm_type t, int peer,
                     cudaStream_t st)
{
    post(c, (void *)buf, count * gcomm_type_size(t), peer, 1, st);
}

static void mpi_recv(struct gcomm *c, void *buf, size_t count, enum gcomm_type t, int peer,
                     cudaStream_t st)
{
    post(c, buf, count * gcomm_type_size(t), peer, 0, st);
}

static void mpi_group_begin(struct gcomm *c)
{
    (void)c;
}

static void mpi_group_end(struct gcomm *c)
{
    complete(mc_of(c));
}

/* ---- open and close -------------------------------------------------------------------------- */

static int mpi_open(struct gcomm *c)
{
    struct mpi_comm *m = sl_xcalloc(1, sizeof(*m));
    /* a communicator of its own: its messages never meet the group's other traffic */
    int rc = sl_world_split(c->group, 0, c->rank, &m->own);
    if (rc) {
        free(m);
        return rc;
    }
    c->priv = m;
    return 0;
}

static void mpi_close(struct gcomm *c)
{
    struct mpi_comm *m = mc_of(c);
    if (!m)
        return;
    stage_free(&m->coll);
    for (int i = 0; i < m->np2p; i++)
        stage_free(&m->p2p[i]);
    free(m->p2p);
    free(m->pend);
    sl_world_group_free(&m->own);
    free(m);
    c->priv = NULL;
}

const struct gcomm_ops gcomm_mpi_ops = {
    .open = mpi_open,
    .close = mpi_close,
    .all_reduce = mpi_all_reduce,
    .reduce_scatter = mpi_reduce_scatter,
    .all_gather = mpi_all_gather,
    .broadcast = mpi_broadcast,
    .send = mpi_send,
    .recv = mpi_recv,
    .group_begin = mpi_group_begin,
    .group_end = mpi_group_end,
};
