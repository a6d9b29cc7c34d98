/* The MPI world's collectives under real mpirun (run by tests/cli/t_mpi.sh with -np 1..4):
 * allreduce, bcast, allgather, gather, alltoallv with uneven sizes, counter reduction, the
 * size-balanced assignment, groups, the in-place collectives on blocks of uneven size, and
 * the typed all-to-all / all-gather and non-blocking byte transfers.
 * Prints "ok" on rank 0 or the first failure. */
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "rank %d: ", W->rank);                                                     \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        sl_world_abort(W, 1);                                                                      \
    } while (0)

/* all-reduce (sum, max) and broadcast */
static void check_reduce(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    uint64_t v[2] = { (uint64_t)r + 1, (uint64_t)r * 10 };
    sl_world_allreduce_u64(W, v, 2, SL_SUM);
    if (v[0] != (uint64_t)R * (R + 1) / 2 || v[1] != (uint64_t)10 * R * (R - 1) / 2)
        FAIL("allreduce sum: %llu %llu", (unsigned long long)v[0], (unsigned long long)v[1]);
    double d = r;
    sl_world_allreduce_f64(W, &d, 1, SL_MAX);
    if (d != R - 1)
        FAIL("allreduce max: %g", d);

    char msg[16] = "";
    if (r == 0)
        strcpy(msg, "from rank 0");
    sl_world_bcast(W, msg, sizeof(msg), 0);
    if (strcmp(msg, "from rank 0"))
        FAIL("bcast: '%s'", msg);
}

/* all-gather and gather of uneven contributions */
static void check_gather(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    /* every rank contributes r+1 copies of the letter 'a'+r */
    char mine[8];
    memset(mine, 'a' + r, sizeof(mine));
    struct sl_buf all = SL_BUF_INIT;
    uint64_t *counts = calloc((size_t)R, sizeof(uint64_t));
    sl_world_allgather_bytes(W, mine, (size_t)r + 1, &all, counts);
    size_t off = 0;
    for (int s = 0; s < R; s++) {
        if (counts[s] != (uint64_t)s + 1)
            FAIL("allgather count %d: %llu", s, (unsigned long long)counts[s]);
        for (int k = 0; k <= s; k++)
            if (all.data[off++] != 'a' + s)
                FAIL("allgather data from %d", s);
    }
    sl_buf_reset(&all);
    sl_world_gather_bytes(W, mine, (size_t)r + 1, 0, &all, counts);
    if (r == 0 && all.len != (size_t)R * (R + 1) / 2)
        FAIL("gather length %zu", all.len);
    if (r != 0 && all.len != 0)
        FAIL("gather delivered to a non-root rank");
    sl_buf_release(&all);
    free(counts);
}

/* all-to-all of uneven sizes */
static void check_alltoallv(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    /* alltoallv: rank r sends (r + d) bytes of value r*16+d to rank d */
    uint64_t *sc = calloc((size_t)R, sizeof(uint64_t)), *so = calloc((size_t)R, sizeof(uint64_t));
    uint64_t *rc = calloc((size_t)R, sizeof(uint64_t));
    struct sl_buf send = SL_BUF_INIT, recv = SL_BUF_INIT;
    for (int dst = 0; dst < R; dst++) {
        so[dst] = send.len;
        sc[dst] = (uint64_t)(r + dst);
        for (int k = 0; k < r + dst; k++)
            sl_buf_putc(&send, (char)(r * 16 + dst));
    }
    if (sl_world_alltoallv(W, send.data ? send.data : "", sc, so, &recv, rc))
        FAIL("alltoallv: %s", sl_err_msg());
    size_t off = 0;
    for (int src = 0; src < R; src++) {
        if (rc[src] != (uint64_t)(src + r))
            FAIL("alltoallv count from %d: %llu", src, (unsigned long long)rc[src]);
        for (int k = 0; k < src + r; k++)
            if (recv.data[off++] != (char)(src * 16 + r))
                FAIL("alltoallv data from %d", src);
    }
    sl_buf_release(&send);
    sl_buf_release(&recv);
    free(sc);
    free(so);
    free(rc);
}

/* counter reduction and the size-balanced assignment */
static void check_counters(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    struct sl_counters c;
    sl_counters_init(&c);
    sl_counters_add(&c, "docs", (uint64_t)r + 1);
    sl_counters_max(&c, "len_max", (uint64_t)r * 7);
    if (r == R - 1)
        sl_counters_add(&c, "only_last", 5);
    sl_world_reduce_counters(W, &c, 0);
    if (r == 0) {
        if (sl_counters_get(&c, "docs") != (uint64_t)R * (R + 1) / 2 ||
            sl_counters_get(&c, "len_max") != (uint64_t)(R - 1) * 7 ||
            sl_counters_get(&c, "only_last") != 5)
            FAIL("reduce_counters");
    }

    /* every rank computes the same assignment */
    uint64_t sizes[7] = { 5, 900, 3, 77, 77, 1000, 0 };
    int owner[7];
    sl_assign_by_size(sizes, 7, R, owner);
    int64_t sig = 0;
    for (int i = 0; i < 7; i++)
        sig = sig * 31 + owner[i];
    int64_t sig_max = sig, sig_min = sig;
    sl_world_allreduce_i64(W, &sig_max, 1, SL_MAX);
    sl_world_allreduce_i64(W, &sig_min, 1, SL_MIN);
    if (sig_max != sig_min)
        FAIL("assignments differ between ranks");
    sl_counters_release(&c);
}

/* groups */
static void check_groups(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    /* groups (model parallelism): pairs of consecutive ranks; all-gather, reduce-scatter,
     * all-reduce and point to point inside a group, a negative color in no group */
    struct sl_world g, none;
    if (sl_world_split(W, r / 2, r, &g) || sl_world_split(W, -1, r, &none))
        FAIL("split: %s", sl_err_msg());
    int gsize = r / 2 * 2 + 1 < R ? 2 : 1;
    if (g.size != gsize || g.rank != r % 2 || none.size != 1)
        FAIL("group of rank %d: %d of %d", r, g.rank, g.size);
    float part[3] = { (float)r, (float)r + 0.5f, -1.0f }, ga[6] = { 0 }, rs[3] = { 0 };
    if (sl_world_allgather_f32(&g, part, ga, 3))
        FAIL("allgather_f32: %s", sl_err_msg());
    for (int k = 0; k < gsize; k++)
        if (ga[3 * k] != (float)(r / 2 * 2 + k) || ga[3 * k + 2] != -1.0f)
            FAIL("allgather_f32 block %d", k);
    float blocks[6];
    for (int k = 0; k < 6; k++)
        blocks[k] = (float)(k + 10 * r);
    if (sl_world_reduce_scatter_f32(&g, blocks, rs, 3))
        FAIL("reduce_scatter_f32: %s", sl_err_msg());
    float want0 = 0;
    for (int k = 0; k < gsize; k++)
        want0 += (float)(3 * g.rank + 10 * (r / 2 * 2 + k));
    if (rs[0] != want0)
        FAIL("reduce_scatter_f32: %g, expected %g", rs[0], want0);
    float x = 1.0f;
    sl_world_allreduce_f32(&g, &x, 1, SL_SUM);
    if (x != (float)gsize)
        FAIL("group allreduce: %g", x);
    if (gsize == 2) {
        float v[2] = { (float)r, 7.0f }, got[2] = { 0 };
        void *req = NULL;
        if (sl_world_isend_f32(&g, v, 2, 1 - g.rank, &req) ||
            sl_world_recv_f32(&g, got, 2, 1 - g.rank) || sl_world_wait(&req))
            FAIL("point to point: %s", sl_err_msg());
        if (got[0] != (float)(r ^ 1) || got[1] != 7.0f)
            FAIL("point to point data");
    }
    sl_world_group_free(&g);
    sl_world_group_free(&none);
}

/* the most ranks the fixed-size arrays below hold (tests/cli/t_hosts.sh runs 6) */
#define MAX_RANKS 8

/* blocks of uneven size */
static void check_uneven_blocks(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    /* blocks of uneven size (ZeRO-1's pieces of a tensor: rank k holds [n k / R, n (k + 1) /
     * R), the first ones shorter or empty), in place: reduce-scatter, all-gather, gather */
    enum { N = 11 };
    size_t bounds[MAX_RANKS + 1];
    for (int k = 0; k <= R; k++)
        bounds[k] = (size_t)N * (size_t)k / (size_t)R;
    float t[N], full[N];
    for (int i = 0; i < N; i++)
        t[i] = (float)(i + 100 * r);
    if (sl_world_reduce_scatterv_f32(W, t, bounds))
        FAIL("reduce_scatterv_f32: %s", sl_err_msg());
    for (size_t i = bounds[r]; i < bounds[r + 1]; i++)
        if (t[i] != (float)((int)i * R + 100 * R * (R - 1) / 2))
            FAIL("reduce_scatterv_f32 element %zu: %g", i, t[i]);
    for (size_t i = bounds[r]; i < bounds[r + 1]; i++)
        t[i] = (float)(1000 * r) + (float)i;
    if (sl_world_allgatherv_f32(W, t, bounds))
        FAIL("allgatherv_f32: %s", sl_err_msg());
    for (int k = 0; k < R; k++)
        for (size_t i = bounds[k]; i < bounds[k + 1]; i++)
            if (t[i] != (float)(1000 * k) + (float)i)
                FAIL("allgatherv_f32 element %zu from %d: %g", i, k, t[i]);
    float piece[N];
    for (size_t i = bounds[r]; i < bounds[r + 1]; i++)
        piece[i - bounds[r]] = -(float)i;
    memset(full, 0, sizeof(full));
    if (sl_world_gatherv_f32(W, piece, r == 0 ? full : NULL, bounds, 0))
        FAIL("gatherv_f32: %s", sl_err_msg());
    for (int i = 0; r == 0 && i < N; i++)
        if (full[i] != -(float)i)
            FAIL("gatherv_f32 element %d: %g", i, full[i]);
}

/* typed all-to-all and all-gather (2-byte words), non-blocking byte transfers in a ring */
static void check_typed(struct sl_world *W)
{
    int R = W->size, r = W->rank;
    uint16_t send[MAX_RANKS * 3], recv[MAX_RANKS * 3];
    for (int d = 0; d < R; d++)
        for (int i = 0; i < 3; i++)
            send[d * 3 + i] = (uint16_t)(1000 * r + 10 * d + i);
    if (sl_world_alltoall(W, send, recv, 3, sizeof(uint16_t)))
        FAIL("alltoall: %s", sl_err_msg());
    for (int s = 0; s < R; s++)
        for (int i = 0; i < 3; i++)
            if (recv[s * 3 + i] != (uint16_t)(1000 * s + 10 * r + i))
                FAIL("alltoall block from %d element %d: %u", s, i, recv[s * 3 + i]);
    uint16_t all[MAX_RANKS * 3];
    for (int i = 0; i < 3; i++)
        all[r * 3 + i] = (uint16_t)(7 * r + i); /* in place */
    if (sl_world_allgather(W, all + r * 3, all, 3, sizeof(uint16_t)))
        FAIL("allgather: %s", sl_err_msg());
    for (int s = 0; s < R; s++)
        for (int i = 0; i < 3; i++)
            if (all[s * 3 + i] != (uint16_t)(7 * s + i))
                FAIL("allgather block %d element %d: %u", s, i, all[s * 3 + i]);
    if (R < 2 || !W->mpi)
        return;
    char out[5] = { 'a', 'b', 'c', 'd', (char)('0' + r) }, in[5] = { 0 };
    void *sq = NULL, *rq = NULL;
    if (sl_world_irecv(W, in, sizeof(in), (r + R - 1) % R, &rq) ||
        sl_world_isend(W, out, sizeof(out), (r + 1) % R, &sq) || sl_world_wait(&rq) ||
        sl_world_wait(&sq))
        FAIL("isend/irecv: %s", sl_err_msg());
    if (memcmp(in, "abcd", 4) || in[4] != (char)('0' + (r + R - 1) % R) || sq || rq)
        FAIL("isend/irecv ring data");
}

int main(int argc, char **argv)
{
    struct sl_world w;
    if (sl_world_init(&w, &argc, &argv))
        return 1;
    if (w.size > MAX_RANKS) {
        fprintf(stderr, "test_world: %d ranks, at most %d\n", w.size, MAX_RANKS);
        sl_world_abort(&w, 1);
    }
    check_reduce(&w);
    check_gather(&w);
    check_alltoallv(&w);
    check_counters(&w);
    check_groups(&w);
    check_uneven_blocks(&w);
    check_typed(&w);
    sl_world_barrier(&w);
    if (w.rank == 0)
        printf("ok %d ranks\n", w.size);
    sl_world_finalize(&w);
    return 0;
}
