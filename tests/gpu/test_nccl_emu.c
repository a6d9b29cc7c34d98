/* The NCCL calls sluice's trainer makes, under `mpirun -np N` with the emulation's NCCL over
 * MPI (kernels/emu/nccl.cc): each rank is one emulated GPU. The communicator from an id that
 * rank 0 makes and MPI broadcasts (as train/gpu_zero.c does), all-reduce (fp32 sum out of
 * place, fp32 max and bf16 sum in place), reduce-scatter in place as the ZeRO path does it
 * (fp32 and bf16), all-gather in place in a group, broadcast, a ring of send/recv in a group,
 * and the refusals: a host buffer, a communicator size that does not match the ranks. The
 * inputs are small integers, exact in bf16 and fp32, so every expected value is the plain
 * sum, maximum or copy computed here. Built only over the emulation and with MPI
 * (make test-gpu-emu runs it at -np 2 and 3); rank 0 prints
 * "test_nccl_emu: N passed, N failed (W ranks)".
 */
#include <mpi.h>
#include <nccl.h>

#include "tests/gpu/common.h"

static int rank, W, passed, failed;

static void result(int ok, const char *what)
{
    if (ok)
        passed++;
    else {
        failed++;
        printf("  FAIL %s (rank %d of %d)\n", what, rank, W);
    }
}

#define NCCL_OK(call)                                                                              \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            printf("  FAIL %s: %s: %s (rank %d)\n", #call, ncclGetErrorString(r_),                 \
                   ncclGetLastError(NULL), rank);                                                  \
            failed++;                                                                              \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static float *f32_dev(size_t n, float (*f)(size_t))
{
    float *h = (float *)halloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = f(i);
    return (float *)to_dev(h, n * 4);
}

/* 1 when the n device floats at d equal want(i) */
static int f32_equal(const float *d, size_t n, double (*want)(size_t))
{
    float *h = get_f32(d, n);
    for (size_t i = 0; i < n; i++)
        if (h[i] != want(i))
            return 0;
    return 1;
}

static int bf16_equal(const void *d, size_t n, double (*want)(size_t))
{
    float *h = get_bf16(d, n);
    for (size_t i = 0; i < n; i++)
        if (h[i] != want(i))
            return 0;
    return 1;
}

/* ---- all-reduce --------------------------------------------------------------------------- */

#define N_AR 1031
static float ar_in(size_t i)
{
    return (float)(rank * 1000 + (int)i);
}
static double ar_in_d(size_t i)
{
    return ar_in(i);
}
static double ar_sum(size_t i)
{
    return (double)W * (double)i + 1000.0 * W * (W - 1) / 2;
}
static float mx_in(size_t i)
{
    return (float)((i * 7 + (size_t)rank * 3) % 11);
}
static double mx_want(size_t i)
{
    double m = 0;
    for (int q = 0; q < W; q++)
        m = fmax(m, (double)((i * 7 + (size_t)q * 3) % 11));
    return m;
}
static double bsum_want(size_t i)
{
    return (double)W * (double)(i % 5) + W * (W - 1) / 2.0;
}

static void t_allreduce(ncclComm_t c)
{
    float *in = f32_dev(N_AR, ar_in), *out = (float *)dalloc(N_AR * 4);
    poison(out, N_AR * 4);
    NCCL_OK(ncclAllReduce(in, out, N_AR, ncclFloat, ncclSum, c, 0));
    result(f32_equal(out, N_AR, ar_sum), "all-reduce fp32 sum");
    result(f32_equal(in, N_AR, ar_in_d), "all-reduce out of place leaves sendbuff as it was");
    float *mx = f32_dev(N_AR, mx_in);
    NCCL_OK(ncclAllReduce(mx, mx, N_AR, ncclFloat, ncclMax, c, 0));
    result(f32_equal(mx, N_AR, mx_want), "all-reduce fp32 max in place");
    uint16_t *hb = (uint16_t *)halloc(N_AR * 2);
    for (size_t i = 0; i < N_AR; i++)
        hb[i] = f2bf((float)(i % 5 + (size_t)rank));
    void *b = to_dev(hb, N_AR * 2);
    NCCL_OK(ncclAllReduce(b, b, N_AR, ncclBfloat16, ncclSum, c, 0));
    result(bf16_equal(b, N_AR, bsum_want), "all-reduce bf16 sum in place");
}

/* ---- reduce-scatter, in place as train/gpu_zero.c: rank r keeps block r -------------------- */

#define N_RS 129
static float rs_in(size_t j)
{
    return (float)(rank + (int)j);
}
static double rs_want(size_t i)
{
    return (double)W * (double)((size_t)rank * N_RS + i) + W * (W - 1) / 2.0;
}
static double rsb_want(size_t i)
{
    return (double)W * (double)(((size_t)rank * N_RS + i) % 7) + W;
}

static void t_reduce_scatter(ncclComm_t c)
{
    float *buf = f32_dev((size_t)W * N_RS, rs_in);
    float *mine = buf + (size_t)rank * N_RS;
    NCCL_OK(ncclReduceScatter(buf, mine, N_RS, ncclFloat, ncclSum, c, 0));
    result(f32_equal(mine, N_RS, rs_want), "reduce-scatter fp32 sum in place");
    uint16_t *hb = (uint16_t *)halloc((size_t)W * N_RS * 2);
    for (size_t j = 0; j < (size_t)W * N_RS; j++)
        hb[j] = f2bf((float)(j % 7 + 1));
    uint16_t *b = (uint16_t *)to_dev(hb, (size_t)W * N_RS * 2);
    NCCL_OK(ncclReduceScatter(b, b + (size_t)rank * N_RS, N_RS, ncclBfloat16, ncclSum, c, 0));
    result(bf16_equal(b + (size_t)rank * N_RS, N_RS, rsb_want), "reduce-scatter bf16 sum in place");
}

/* ---- all-gather in place, two in a group (train/gpu_zero.c's parameter gather) -------------- */

#define N_AG 37
static double ag_want(size_t j)
{
    return (double)(j / N_AG * 8 + j % N_AG % 8);
}
static double ag2_want(size_t j)
{
    return ag_want(j) + 1;
}

static void t_allgather(ncclComm_t c)
{
    uint16_t *h = (uint16_t *)halloc((size_t)W * N_AG * 2);
    uint16_t *a = (uint16_t *)dalloc((size_t)W * N_AG * 2);
    uint16_t *b = (uint16_t *)dalloc((size_t)W * N_AG * 2);
    poison(a, (size_t)W * N_AG * 2);
    poison(b, (size_t)W * N_AG * 2);
    for (size_t i = 0; i < N_AG; i++)
        h[i] = f2bf((float)(rank * 8 + (int)(i % 8)));
    upload(a + (size_t)rank * N_AG, h, N_AG * 2);
    for (size_t i = 0; i < N_AG; i++)
        h[i] = f2bf((float)(rank * 8 + (int)(i % 8) + 1));
    upload(b + (size_t)rank * N_AG, h, N_AG * 2);
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclAllGather(a + (size_t)rank * N_AG, a, N_AG, ncclBfloat16, c, 0));
    NCCL_OK(ncclAllGather(b + (size_t)rank * N_AG, b, N_AG, ncclBfloat16, c, 0));
    NCCL_OK(ncclGroupEnd());
    result(bf16_equal(a, (size_t)W * N_AG, ag_want), "all-gather bf16 in place, first of a group");
    result(bf16_equal(b, (size_t)W * N_AG, ag2_want),
           "all-gather bf16 in place, second of a group");
}

/* ---- broadcast, send/recv ---------------------------------------------------------------- */

#define N_BC 300
static float bc_in(size_t i)
{
    return 0.5f * (float)i + 7.0f;
}
static double bc_want(size_t i)
{
    return 0.5 * (double)i + 7.0;
}

static void t_broadcast(ncclComm_t c)
{
    const int root = W - 1;
    float *src = rank == root ? f32_dev(N_BC, bc_in) : NULL;
    float *dst = (float *)dalloc(N_BC * 4);
    poison(dst, N_BC * 4);
    NCCL_OK(ncclBroadcast(src, dst, N_BC, ncclFloat, root, c, 0));
    result(f32_equal(dst, N_BC, bc_want), "broadcast fp32 from the last rank");
}

#define N_P2P 501
static int32_t *ring_expect; /* host copy of what the previous rank sent */

static void t_send_recv(ncclComm_t c)
{
    const int next = (rank + 1) % W, prev = (rank + W - 1) % W;
    int32_t *h = (int32_t *)halloc(N_P2P * 4);
    ring_expect = (int32_t *)halloc(N_P2P * 4);
    for (int i = 0; i < N_P2P; i++) {
        h[i] = rank * 100000 + i;
        ring_expect[i] = prev * 100000 + i;
    }
    int32_t *s = (int32_t *)to_dev(h, N_P2P * 4), *r = (int32_t *)dalloc(N_P2P * 4);
    poison(r, N_P2P * 4);
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(s, N_P2P, ncclInt32, next, c, 0));
    NCCL_OK(ncclRecv(r, N_P2P, ncclInt32, prev, c, 0));
    NCCL_OK(ncclGroupEnd());
    int32_t *got = (int32_t *)halloc(N_P2P * 4);
    CUDA_CHECK(cudaMemcpy(got, r, N_P2P * 4, cudaMemcpyDeviceToHost));
    result(!memcmp(got, ring_expect, N_P2P * 4), "send/recv ring in a group");
}

/* ---- refusals ------------------------------------------------------------------------------ */

static void t_refusals(ncclComm_t c, ncclUniqueId id)
{
    float host[4] = { 0 };
    float *d = (float *)dalloc(16);
    result(ncclAllReduce(host, d, 4, ncclFloat, ncclSum, c, 0) == ncclInvalidArgument,
           "a host sendbuff is an invalid argument");
    ncclComm_t c2 = NULL;
    result(ncclCommInitRank(&c2, W + 1, id, rank) != ncclSuccess && !c2,
           "a communicator of more ranks than joined is refused");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t c = NULL;
    if (ncclCommInitRank(&c, W, id, rank) != ncclSuccess) {
        printf("  FAIL ncclCommInitRank: %s (rank %d)\n", ncclGetLastError(NULL), rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int n = -1, me = -1;
    ncclCommCount(c, &n);
    ncclCommUserRank(c, &me);
    result(n == W && me == rank, "communicator size and rank");
    t_allreduce(c);
    t_reduce_scatter(c);
    t_allgather(c);
    t_broadcast(c);
    t_send_recv(c);
    t_refusals(c, id);
    free_all();
    ncclCommDestroy(c);
    int sums[2] = { passed, failed }, tot[2];
    MPI_Reduce(sums, tot, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    fflush(stdout);
    if (rank == 0)
        printf("test_nccl_emu: %d passed, %d failed (%d ranks)\n", tot[0], tot[1], W);
    MPI_Finalize();
    return failed ? 1 : 0;
}
