/* The GPU trainer's communicator (train/gpu_comm.h) between emulated GPUs, one per MPI rank
 * (kernels/emu/), under `mpirun -np N`: every operation with both backends (NCCL, which the
 * emulation runs over MPI, and the host-staged MPI backend), in fp32 and bf16, sum and max,
 * in place and not, at odd counts and at counts below the number of ranks, over the world and
 * over groups from sl_world_split (the ranks reversed, and one rank alone: local copies),
 * send/recv in a group (a ring, a pairwise exchange, several messages to one peer in order)
 * and outside one, collectives in a group, on a stream of their own.
 * Expected values are computed here on the host from every rank's inputs (a function of the
 * rank, the element and the test, so each rank knows them all): the reductions fold the
 * ranks in group-rank order in fp32 (bf16 widened, rounded once to nearest even at the end),
 * the order both backends promise under the emulation; the inputs have many significant bits,
 * so that another order or a rounding at every step shows at 3 ranks. Comparison is bit for
 * bit. Built over the emulation with MPI (make test-gpu-emu runs it at -np 2 and 3); rank 0
 * prints "test_gcomm: N passed, N failed (W ranks)".
 */
#include "core/err.h"
#include "core/world.h"
#include "tests/gpu/common.h"
#include "train/gpu_comm.h"

static int rank, W, passed, failed;
static cudaStream_t st;

static void result(int ok, const char *be, const char *what, const char *group)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    printf("  FAIL %s: %s over %s (rank %d of %d)\n", be, what, group, rank, W);
}

/* A communicator under test: its backend, and the world rank of each group rank. */
struct tc {
    struct gcomm *c;
    const char *be, *name;
    int size, me, world_of[8];
};

/* input of world rank q, element i, test `seed`: a fraction with about 14 significant bits */
static float val(int q, size_t i, unsigned seed)
{
    uint64_t z = (uint64_t)seed * 0x9e3779b97f4a7c15ull + (uint64_t)q * 0xbf58476d1ce4e5b9ull +
                 (uint64_t)i * 0x94d049bb133111ebull;
    z = (z ^ (z >> 31)) * 0xd6e8feb86659fd39ull;
    z ^= z >> 29;
    return (float)((int)(z % 20001) - 10000) * 0.0137f;
}

/* n elements of type t, the inputs of world rank q for test seed from element `first` */
static void *inputs(int q, size_t first, size_t n, enum gcomm_type t, unsigned seed)
{
    if (t == GCOMM_F32) {
        float *h = halloc(n * 4 + 4);
        for (size_t i = 0; i < n; i++)
            h[i] = val(q, first + i, seed);
        return h;
    }
    uint16_t *h = halloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        h[i] = f2bf(val(q, first + i, seed));
    return h;
}

static size_t tsize(enum gcomm_type t)
{
    return t == GCOMM_BF16 ? 2 : 4;
}

/* the reduction over the group's ranks, in group-rank order, of their inputs [first, first+n) */
static void *reduced(const struct tc *g, size_t first, size_t n, enum gcomm_type t,
                     enum gcomm_op op, unsigned seed)
{
    float *acc = halloc(n * 4 + 4);
    for (int k = 0; k < g->size; k++) {
        void *in = inputs(g->world_of[k], first, n, t, seed);
        for (size_t i = 0; i < n; i++) {
            float x = t == GCOMM_F32 ? ((float *)in)[i] : bf2f(((uint16_t *)in)[i]);
            acc[i] = k == 0 ? x : op == GCOMM_SUM ? acc[i] + x : acc[i] > x ? acc[i] : x;
        }
    }
    if (t == GCOMM_F32)
        return acc;
    uint16_t *b = halloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        b[i] = f2bf(acc[i]);
    return b;
}

/* 1 when the n elements at device d have the bits of host h */
static int same(const void *d, const void *h, size_t n, enum gcomm_type t)
{
    CUDA_CHECK(cudaStreamSynchronize(st));
    void *got = halloc(n * tsize(t) + 4);
    CUDA_CHECK(cudaMemcpy(got, d, n * tsize(t), cudaMemcpyDeviceToHost));
    return !memcmp(got, h, n * tsize(t));
}

static const char *tname(enum gcomm_type t)
{
    return t == GCOMM_F32 ? "fp32" : "bf16";
}

/* ---- collectives -------------------------------------------------------------------------- */

static void t_all_reduce(const struct tc *g, unsigned *seed)
{
    /* the last count grows the staging memory past what the earlier ones allocated */
    static const size_t counts[] = { 1031, 1, 65537 };
    char what[96];
    for (int t = 0; t < 2; t++)
        for (int op = 0; op < 2; op++)
            for (int in_place = 0; in_place < 2; in_place++)
                for (int k = 0; k < 3; k++) {
                    size_t n = counts[k], es = tsize(t);
                    unsigned s = (*seed)++;
                    void *h = inputs(rank, 0, n, t, s);
                    void *send = to_dev(h, n * es), *recv = send;
                    if (!in_place) {
                        recv = dalloc(n * es);
                        poison(recv, n * es);
                    }
                    gcomm_all_reduce(g->c, send, recv, n, t, op, st);
                    snprintf(what, sizeof(what), "all-reduce %s %s %s, %zu elements", tname(t),
                             op == GCOMM_SUM ? "sum" : "max",
                             in_place ? "in place" : "out of place", n);
                    int ok = same(recv, reduced(g, 0, n, t, op, s), n, t);
                    if (!in_place)
                        ok = ok && same(send, h, n, t);
                    result(ok, g->be, what, g->name);
                }
}

static void t_reduce_scatter(const struct tc *g, unsigned *seed)
{
    static const size_t counts[] = { 129, 1 };
    char what[96];
    for (int t = 0; t < 2; t++)
        for (int in_place = 0; in_place < 2; in_place++)
            for (int k = 0; k < 2; k++) {
                size_t n = counts[k], es = tsize(t), all = n * (size_t)g->size;
                unsigned s = (*seed)++;
                char *send = to_dev(inputs(rank, 0, all, t, s), all * es);
                char *recv = send + (size_t)g->me * n * es;
                if (!in_place) {
                    recv = dalloc(n * es);
                    poison(recv, n * es);
                }
                gcomm_reduce_scatter(g->c, send, recv, n, t, st);
                snprintf(what, sizeof(what), "reduce-scatter %s %s, %zu elements a rank",
                         tname(t), in_place ? "in place" : "out of place", n);
                result(same(recv, reduced(g, (size_t)g->me * n, n, t, GCOMM_SUM, s), n, t),
                       g->be, what, g->name);
            }
}

/* every rank's inputs [0, n) one after the other, as an all-gather leaves them */
static void *gathered(const struct tc *g, size_t n, enum gcomm_type t, unsigned s)
{
    char *h = halloc((size_t)g->size * n * tsize(t) + 4);
    for (int k = 0; k < g->size; k++)
        memcpy(h + (size_t)k * n * tsize(t), inputs(g->world_of[k], 0, n, t, s), n * tsize(t));
    return h;
}

static void t_all_gather(const struct tc *g, unsigned *seed)
{
    static const size_t counts[] = { 37, 1 };
    char what[96];
    for (int t = 0; t < 2; t++)
        for (int in_place = 0; in_place < 2; in_place++)
            for (int k = 0; k < 2; k++) {
                size_t n = counts[k], es = tsize(t), all = n * (size_t)g->size;
                unsigned s = (*seed)++;
                char *recv = dalloc(all * es), *send;
                poison(recv, all * es);
                if (in_place) {
                    send = recv + (size_t)g->me * n * es;
                    upload(send, inputs(rank, 0, n, t, s), n * es);
                } else {
                    send = to_dev(inputs(rank, 0, n, t, s), n * es);
                }
                gcomm_all_gather(g->c, send, recv, n, t, st);
                snprintf(what, sizeof(what), "all-gather %s %s, %zu elements a rank", tname(t),
                         in_place ? "in place" : "out of place", n);
                result(same(recv, gathered(g, n, t, s), all, t), g->be, what, g->name);
            }
    /* two in a group, in place, as the trainer gathers its parameters bucket by bucket */
    unsigned s0 = (*seed)++, s1 = (*seed)++;
    size_t n = 53;
    char *a = dalloc((size_t)g->size * n * 2), *b = dalloc((size_t)g->size * n * 2);
    upload(a + (size_t)g->me * n * 2, inputs(rank, 0, n, GCOMM_BF16, s0), n * 2);
    upload(b + (size_t)g->me * n * 2, inputs(rank, 0, n, GCOMM_BF16, s1), n * 2);
    gcomm_group_begin(g->c);
    gcomm_all_gather(g->c, a + (size_t)g->me * n * 2, a, n, GCOMM_BF16, st);
    gcomm_all_gather(g->c, b + (size_t)g->me * n * 2, b, n, GCOMM_BF16, st);
    gcomm_group_end(g->c);
    result(same(a, gathered(g, n, GCOMM_BF16, s0), (size_t)g->size * n, GCOMM_BF16) &&
               same(b, gathered(g, n, GCOMM_BF16, s1), (size_t)g->size * n, GCOMM_BF16),
           g->be, "two all-gathers in a group", g->name);
}

static void t_broadcast(const struct tc *g, unsigned *seed)
{
    char what[96];
    size_t n = 301;
    for (int t = 0; t < 2; t++)
        for (int in_place = 0; in_place < 2; in_place++)
            for (int root = 0; root < g->size; root += g->size > 1 ? g->size - 1 : 1) {
                size_t es = tsize(t);
                unsigned s = (*seed)++;
                void *recv = dalloc(n * es), *send = NULL;
                poison(recv, n * es);
                if (g->me == root) {
                    if (in_place) {
                        upload(recv, inputs(rank, 0, n, t, s), n * es);
                        send = recv;
                    } else {
                        send = to_dev(inputs(rank, 0, n, t, s), n * es);
                    }
                } else if (in_place) {
                    send = recv;
                }
                gcomm_broadcast(g->c, send, recv, n, t, root, st);
                snprintf(what, sizeof(what), "broadcast %s %s from group rank %d", tname(t),
                         in_place ? "in place" : "out of place", root);
                result(same(recv, inputs(g->world_of[root], 0, n, t, s), n, t), g->be, what,
                       g->name);
            }
}

/* ---- point to point ------------------------------------------------------------------------- */

static void t_send_recv(const struct tc *g, unsigned *seed)
{
    if (g->size < 2)
        return;
    int next = (g->me + 1) % g->size, prev = (g->me + g->size - 1) % g->size;
    char what[96];
    for (int t = 0; t < 2; t++) { /* a ring in a group: every rank sends and receives */
        size_t n = 501, es = tsize(t);
        unsigned s = (*seed)++;
        void *send = to_dev(inputs(rank, 0, n, t, s), n * es), *recv = dalloc(n * es);
        poison(recv, n * es);
        gcomm_group_begin(g->c);
        gcomm_send(g->c, send, n, t, next, st);
        gcomm_recv(g->c, recv, n, t, prev, st);
        gcomm_group_end(g->c);
        snprintf(what, sizeof(what), "send/recv ring in a group, %s", tname(t));
        result(same(recv, inputs(g->world_of[prev], 0, n, t, s), n, t), g->be, what, g->name);
    }
    /* three messages to the next rank in one group, received in order, the receives first */
    size_t n = 77;
    unsigned s[3] = { (*seed)++, (*seed)++, (*seed)++ };
    float *in[3], *out[3];
    for (int k = 0; k < 3; k++) {
        in[k] = to_dev(inputs(rank, 0, n, GCOMM_F32, s[k]), n * 4);
        out[k] = dalloc(n * 4);
        poison(out[k], n * 4);
    }
    gcomm_group_begin(g->c);
    for (int k = 0; k < 3; k++)
        gcomm_recv(g->c, out[k], n, GCOMM_F32, prev, st);
    for (int k = 0; k < 3; k++)
        gcomm_send(g->c, in[k], n, GCOMM_F32, next, st);
    gcomm_group_end(g->c);
    int ok = 1;
    for (int k = 0; k < 3; k++)
        ok = ok && same(out[k], inputs(g->world_of[prev], 0, n, GCOMM_F32, s[k]), n, GCOMM_F32);
    result(ok, g->be, "three messages to one peer in a group, in order", g->name);
    /* outside a group: group rank 0 sends to the last, which receives */
    unsigned s1 = (*seed)++;
    int last = g->size - 1;
    void *buf = dalloc(n * 2);
    poison(buf, n * 2);
    if (g->me == 0) {
        upload(buf, inputs(rank, 0, n, GCOMM_BF16, s1), n * 2);
        gcomm_send(g->c, buf, n, GCOMM_BF16, last, st);
    } else if (g->me == last) {
        gcomm_recv(g->c, buf, n, GCOMM_BF16, 0, st);
    }
    if (g->me == last)
        result(same(buf, inputs(g->world_of[0], 0, n, GCOMM_BF16, s1), n, GCOMM_BF16), g->be,
               "send and recv outside a group", g->name);
}

/* ---- the communicators ---------------------------------------------------------------------- */

static void run_all(struct tc *g)
{
    unsigned seed = 1;
    result(gcomm_rank(g->c) == g->me && gcomm_size(g->c) == g->size, g->be, "rank and size",
           g->name);
    t_all_reduce(g, &seed);
    t_reduce_scatter(g, &seed);
    t_all_gather(g, &seed);
    t_broadcast(g, &seed);
    t_send_recv(g, &seed);
    CUDA_CHECK(cudaStreamSynchronize(st));
    free_all();
}

/* A communicator of backend be over group gr (collective over gr). */
static int open_tc(struct tc *g, enum gcomm_backend be, const struct sl_world *gr,
                   const char *name)
{
    memset(g, 0, sizeof(*g));
    g->be = gcomm_backend_name(be);
    g->name = name;
    g->size = gr->size;
    g->me = gr->rank;
    int64_t mine = rank;
    /* the world rank of every group rank: each rank's own, summed over the group */
    for (int k = 0; k < gr->size; k++) {
        int64_t v = k == gr->rank ? mine : 0;
        sl_world_allreduce_i64(gr, &v, 1, SL_SUM);
        g->world_of[k] = (int)v;
    }
    if (gcomm_open(&g->c, be, gr)) {
        printf("  FAIL %s: gcomm_open over %s: %s (rank %d)\n", g->be, name, sl_err_msg(), rank);
        failed++;
        return -1;
    }
    return 0;
}

static void test_backend(enum gcomm_backend be, struct sl_world *w)
{
    struct tc g;
    /* the world */
    if (!open_tc(&g, be, w, "the world")) {
        run_all(&g);
        gcomm_close(g.c);
    }
    /* the world's ranks in reverse order */
    struct sl_world rev;
    if (sl_world_split(w, 0, W - 1 - rank, &rev) == 0 && !open_tc(&g, be, &rev, "a reversed group")) {
        run_all(&g);
        gcomm_close(g.c);
    }
    sl_world_group_free(&rev);
    /* each rank alone: local copies */
    struct sl_world alone;
    if (sl_world_split(w, rank, 0, &alone) == 0 && !open_tc(&g, be, &alone, "a group of one")) {
        run_all(&g);
        gcomm_close(g.c);
    }
    sl_world_group_free(&alone);
    /* even and odd ranks: groups of different sizes at -np 3. The emulated NCCL makes every
     * communicator by splitting the whole world, which a one-rank group (no communicator at
     * all) does not take part in: MPI backend only */
    struct sl_world parity;
    if (be == GCOMM_MPI && sl_world_split(w, rank % 2, rank, &parity) == 0) {
        if (!open_tc(&g, be, &parity, "the even or odd ranks")) {
            run_all(&g);
            gcomm_close(g.c);
        }
        sl_world_group_free(&parity);
    }
}

int main(int argc, char **argv)
{
    struct sl_world w;
    if (sl_world_init(&w, &argc, &argv)) {
        fprintf(stderr, "test_gcomm: %s\n", sl_err_msg());
        return 1;
    }
    rank = w.rank;
    W = w.size;
    if (W > 8) {
        fprintf(stderr, "test_gcomm: at most 8 ranks\n");
        sl_world_abort(&w, 1);
    }
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
#ifdef SL_HAVE_NCCL
    test_backend(GCOMM_NCCL, &w);
#else
    if (rank == 0)
        printf("  skip: the NCCL backend (built without nccl.h)\n");
#endif
    test_backend(GCOMM_MPI, &w);
    CUDA_CHECK(cudaStreamDestroy(st));
    int64_t sums[2] = { passed, failed };
    sl_world_allreduce_i64(&w, sums, 2, SL_SUM);
    fflush(stdout);
    if (rank == 0)
        printf("test_gcomm: %lld passed, %lld failed (%d ranks)\n", (long long)sums[0],
               (long long)sums[1], W);
    sl_world_finalize(&w);
    return sums[1] ? 1 : 0;
}
