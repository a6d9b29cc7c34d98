/* NCCL over MPI, for the emulation (kernels/emu/): under `mpirun -np N` each process is one
 * emulated GPU, and a communicator is an MPI communicator over the ranks that created it
 * with the same ncclUniqueId (MPI_Comm_split of MPI_COMM_WORLD, so every MPI rank must take
 * part in creating each communicator, as sluice's one communicator over all ranks does).
 * AllReduce, ReduceScatter, AllGather, Broadcast, Send and Recv, and groups: a collective has
 * finished when its call returns; Send and Recv are posted at once and completed by the
 * outermost ncclGroupEnd (or at once outside a group), so a ring of sends and receives in a
 * group does not deadlock. Reductions combine the ranks' values in rank order, bf16 and fp16
 * through fp32 rounded once, so every rank gets the same bits. Buffers must lie in cudaMalloc
 * memory (ncclInvalidArgument otherwise, as NCCL checks); in-place forms as NCCL defines them.
 * The MPI library is the caller's: MPI must be initialised before ncclCommInitRank, but for
 * a communicator of one rank, which needs no MPI (a process started without a launcher).
 * Not modelled: the real library's ring/tree order and its rounding at every step (results
 * may differ from NCCL's in the last bit of bf16/fp16/fp32 sums), asynchrony with respect to
 * the stream (a missing wait on a communication stream cannot show), more than one GPU per
 * process, fp8 types, user-defined reductions, the config/split/abort-on-error machinery, and
 * buffers over 2 GiB per message.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include <mpi.h>
#include <nccl.h>

#include "kernels/emu/emu.h"

struct ncclComm {
    MPI_Comm mpi; /* MPI_COMM_NULL for one rank without MPI: the collectives are local copies */
    int rank, size;
};

#define P2P_TAG 0x5e1u /* the MPI tag of Send/Recv; MPI keeps each pair's messages in order */

static int group_depth;                    /* ncclGroupStart nesting */
static std::vector<MPI_Request> group_p2p; /* Send/Recv posted since the outermost start */
static char last_error[256];

static ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static ncclResult_t fail(ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return r;
}

extern "C" const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error";
    case ncclSystemError:
        return "unhandled system error";
    case ncclInternalError:
        return "internal error";
    case ncclInvalidArgument:
        return "invalid argument";
    case ncclInvalidUsage:
        return "invalid usage";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

extern "C" const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return last_error;
}

extern "C" ncclResult_t ncclGetVersion(int *v)
{
    if (!v)
        return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

/* ---- communicators ------------------------------------------------------------------------ */

extern "C" ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static unsigned counter;
    if (!id)
        return fail(ncclInvalidArgument, "ncclGetUniqueId: id is NULL");
    memset(id, 0, sizeof(*id));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id->internal, sizeof(id->internal), "sl-emu %d %lld.%09ld %u", (int)getpid(),
             (long long)ts.tv_sec, ts.tv_nsec, counter++);
    return ncclSuccess;
}

/* a non-negative MPI color from the id's bytes (FNV-1a) */
static int id_color(const ncclUniqueId *id)
{
    uint32_t h = 2166136261u; /* FNV-1a's offset basis and prime */
    for (size_t i = 0; i < sizeof(id->internal); i++)
        h = (h ^ (unsigned char)id->internal[i]) * 16777619u;
    return (int)(h & 0x7fffffff);
}

extern "C" ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && comm && nranks == 1 && rank == 0) {
        *comm = new ncclComm{ MPI_COMM_NULL, 0, 1 };
        return ncclSuccess;
    }
    if (!inited)
        return fail(ncclInvalidUsage, "ncclCommInitRank: MPI is not initialised (the emulated "
                                      "NCCL runs over MPI)");
    if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of %d", rank, nranks);
    MPI_Comm c;
    if (MPI_Comm_split(MPI_COMM_WORLD, id_color(&id), rank, &c) != MPI_SUCCESS)
        return fail(ncclSystemError, "ncclCommInitRank: MPI_Comm_split failed");
    int size = 0, me = 0;
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &me);
    if (size != nranks || me != rank) {
        MPI_Comm_free(&c);
        return fail(ncclInvalidUsage,
                    "ncclCommInitRank: %d ranks joined with this id, rank %d of %d expected", size,
                    rank, nranks);
    }
    *comm = new ncclComm{ c, rank, nranks };
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;
    if (comm->mpi != MPI_COMM_NULL)
        MPI_Comm_free(&comm->mpi);
    delete comm;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    return ncclCommDestroy(comm);
}

extern "C" ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm || !count)
        return fail(ncclInvalidArgument, "ncclCommCount: NULL argument");
    *count = comm->size;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm || !rank)
        return fail(ncclInvalidArgument, "ncclCommUserRank: NULL argument");
    *rank = comm->rank;
    return ncclSuccess;
}

/* ---- reductions ----------------------------------------------------------------------------- */

static size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0; /* fp8: not modelled */
    }
}

template <class A> static A combine(ncclRedOp_t op, A a, A b)
{
    switch (op) {
    case ncclProd:
        return a * b;
    case ncclMax:
        return a > b ? a : b;
    case ncclMin:
        return a < b ? a : b;
    default: /* ncclSum, ncclAvg */
        return a + b;
    }
}

/* out[i] = op over r of in[r * stride + i], for T stored and A accumulated in rank order */
template <class T, class A, class Load, class Store>
static void reduce_as(void *out, const char *in, size_t stride, size_t n, int ranks, ncclRedOp_t op,
                      Load load, Store store)
{
    for (size_t i = 0; i < n; i++) {
        A acc = load(reinterpret_cast<const T *>(in)[i]);
        for (int r = 1; r < ranks; r++)
            acc = combine<A>(op, acc, load(reinterpret_cast<const T *>(in + r * stride)[i]));
        if (op == ncclAvg)
            acc = acc / (A)ranks;
        reinterpret_cast<T *>(out)[i] = store(acc);
    }
}

template <class T>
static void reduce_plain(void *out, const char *in, size_t stride, size_t n, int ranks,
                         ncclRedOp_t op)
{
    reduce_as<T, T>(
        out, in, stride, n, ranks, op, [](T x) { return x; }, [](T x) { return x; });
}

/* out (n elements) = the reduction of the `ranks` arrays of n elements, `stride` bytes apart */
static void reduce(void *out, const char *in, size_t stride, size_t n, int ranks, ncclDataType_t t,
                   ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8:
        return reduce_plain<int8_t>(out, in, stride, n, ranks, op);
    case ncclUint8:
        return reduce_plain<uint8_t>(out, in, stride, n, ranks, op);
    case ncclInt32:
        return reduce_plain<int32_t>(out, in, stride, n, ranks, op);
    case ncclUint32:
        return reduce_plain<uint32_t>(out, in, stride, n, ranks, op);
    case ncclInt64:
        return reduce_plain<int64_t>(out, in, stride, n, ranks, op);
    case ncclUint64:
        return reduce_plain<uint64_t>(out, in, stride, n, ranks, op);
    case ncclFloat32:
        return reduce_plain<float>(out, in, stride, n, ranks, op);
    case ncclFloat64:
        return reduce_plain<double>(out, in, stride, n, ranks, op);
    case ncclFloat16:
        return reduce_as<__half, float>(
            out, in, stride, n, ranks, op, [](__half x) { return __half2float(x); },
            [](float x) { return __float2half(x); });
    case ncclBfloat16:
        return reduce_as<__nv_bfloat16, float>(
            out, in, stride, n, ranks, op, [](__nv_bfloat16 x) { return __bfloat162float(x); },
            [](float x) { return __float2bfloat16(x); });
    default:
        return;
    }
}

/* ---- checks ----------------------------------------------------------------------------- */

static ncclResult_t check_call(const char *fn, ncclComm_t comm, ncclDataType_t t, size_t count,
                               size_t per_message)
{
    if (!comm)
        return fail(ncclInvalidArgument, "%s: comm is NULL", fn);
    if (!type_size(t))
        return fail(ncclInvalidArgument, "%s: data type %d is not emulated", fn, (int)t);
    if (per_message * type_size(t) > INT_MAX)
        return fail(ncclInvalidArgument, "%s: %zu elements per message: over 2 GiB", fn, count);
    return ncclSuccess;
}

static ncclResult_t check_op(const char *fn, ncclRedOp_t op)
{
    if (op < ncclSum || op > ncclAvg)
        return fail(ncclInvalidArgument, "%s: reduction %d is not emulated", fn, (int)op);
    return ncclSuccess;
}

static ncclResult_t check_buf(const char *fn, const char *name, const void *p, size_t bytes)
{
    if (bytes && !sl_emu_is_device(p, bytes))
        return fail(ncclInvalidArgument, "%s: %s %p is not device memory of %zu bytes", fn, name, p,
                    bytes);
    return ncclSuccess;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        ncclResult_t r_ = (x);                                                                     \
        if (r_ != ncclSuccess)                                                                     \
            return r_;                                                                             \
    } while (0)

static ncclResult_t mpi(const char *fn, int rc)
{
    return rc == MPI_SUCCESS ? ncclSuccess : fail(ncclSystemError, "%s: MPI error %d", fn, rc);
}

/* ---- collectives -------------------------------------------------------------------------- */

/* the stream-order check (streams.cc): the collective reads in_bytes at in, writes out_bytes
 * at out */
static void note(cudaStream_t st, const char *fn, const void *in, size_t in_bytes, void *out,
                 size_t out_bytes)
{
    const sl_emu_access acc[2] = { { in, in_bytes, 0 }, { out, out_bytes, 1 } };
    if (in_bytes && out_bytes)
        sl_emu_stream_work(st, fn, acc, 2);
    else if (out_bytes)
        sl_emu_stream_work(st, fn, acc + 1, 1);
}

extern "C" ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t st)
{
    const char *fn = "ncclAllReduce";
    TRY(check_call(fn, comm, t, count, count));
    TRY(check_op(fn, op));
    const size_t bytes = count * type_size(t);
    TRY(check_buf(fn, "sendbuff", sendbuff, bytes));
    TRY(check_buf(fn, "recvbuff", recvbuff, bytes));
    note(st, fn, sendbuff, bytes, recvbuff, bytes);
    std::vector<char> all(bytes * comm->size);
    if (comm->mpi == MPI_COMM_NULL)
        memcpy(all.data(), sendbuff, bytes);
    else
        TRY(mpi(fn, MPI_Allgather(sendbuff, (int)bytes, MPI_BYTE, all.data(), (int)bytes, MPI_BYTE,
                                  comm->mpi)));
    reduce(recvbuff, all.data(), bytes, count, comm->size, t, op);
    return ncclSuccess;
}

/* rank r gets the reduction of every rank's r-th block of recvcount elements; in place when
 * recvbuff = sendbuff + rank * recvcount */
extern "C" ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                          ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t st)
{
    const char *fn = "ncclReduceScatter";
    TRY(check_call(fn, comm, t, recvcount, recvcount));
    TRY(check_op(fn, op));
    const size_t bytes = recvcount * type_size(t);
    TRY(check_buf(fn, "sendbuff", sendbuff, bytes * comm->size));
    TRY(check_buf(fn, "recvbuff", recvbuff, bytes));
    note(st, fn, sendbuff, bytes * comm->size, recvbuff, bytes);
    std::vector<char> mine(bytes * comm->size); /* every rank's block for this rank */
    if (comm->mpi == MPI_COMM_NULL)
        memcpy(mine.data(), sendbuff, bytes);
    else
        TRY(mpi(fn, MPI_Alltoall(sendbuff, (int)bytes, MPI_BYTE, mine.data(), (int)bytes, MPI_BYTE,
                                 comm->mpi)));
    reduce(recvbuff, mine.data(), bytes, recvcount, comm->size, t, op);
    return ncclSuccess;
}

/* rank r's sendcount elements land at recvbuff + r * sendcount on every rank; in place when
 * sendbuff = recvbuff + rank * sendcount */
extern "C" ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                      ncclDataType_t t, ncclComm_t comm, cudaStream_t st)
{
    const char *fn = "ncclAllGather";
    TRY(check_call(fn, comm, t, sendcount, sendcount));
    const size_t bytes = sendcount * type_size(t);
    TRY(check_buf(fn, "sendbuff", sendbuff, bytes));
    TRY(check_buf(fn, "recvbuff", recvbuff, bytes * comm->size));
    note(st, fn, sendbuff, bytes, recvbuff, bytes * comm->size);
    std::vector<char> part(static_cast<const char *>(sendbuff),
                           static_cast<const char *>(sendbuff) + bytes);
    if (comm->mpi == MPI_COMM_NULL) {
        memcpy(recvbuff, part.data(), bytes);
        return ncclSuccess;
    }
    TRY(mpi(fn, MPI_Allgather(part.data(), (int)bytes, MPI_BYTE, recvbuff, (int)bytes, MPI_BYTE,
                              comm->mpi)));
    return ncclSuccess;
}

extern "C" ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                      ncclDataType_t t, int root, ncclComm_t comm, cudaStream_t st)
{
    const char *fn = "ncclBroadcast";
    TRY(check_call(fn, comm, t, count, count));
    if (root < 0 || root >= comm->size)
        return fail(ncclInvalidArgument, "%s: root %d of %d ranks", fn, root, comm->size);
    const size_t bytes = count * type_size(t);
    if (comm->rank == root)
        TRY(check_buf(fn, "sendbuff", sendbuff, bytes));
    TRY(check_buf(fn, "recvbuff", recvbuff, bytes));
    note(st, fn, comm->rank == root ? sendbuff : NULL, comm->rank == root ? bytes : 0, recvbuff,
         bytes);
    if (comm->rank == root && bytes && sendbuff != recvbuff)
        memmove(recvbuff, sendbuff, bytes);
    if (comm->mpi == MPI_COMM_NULL)
        return ncclSuccess;
    return mpi(fn, MPI_Bcast(recvbuff, (int)bytes, MPI_BYTE, root, comm->mpi));
}

extern "C" ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t t, int root,
                                  ncclComm_t comm, cudaStream_t st)
{
    return ncclBroadcast(buff, buff, count, t, root, comm, st);
}

/* ---- point to point and groups --------------------------------------------------------------- */

static ncclResult_t complete(const char *fn, std::vector<MPI_Request> &reqs)
{
    if (reqs.empty())
        return ncclSuccess;
    int rc = MPI_Waitall((int)reqs.size(), reqs.data(), MPI_STATUSES_IGNORE);
    reqs.clear();
    return mpi(fn, rc);
}

static ncclResult_t p2p(const char *fn, int send, void *buf, size_t count, ncclDataType_t t,
                        int peer, ncclComm_t comm)
{
    TRY(check_call(fn, comm, t, count, count));
    if (peer < 0 || peer >= comm->size)
        return fail(ncclInvalidArgument, "%s: peer %d of %d ranks", fn, peer, comm->size);
    const size_t bytes = count * type_size(t);
    TRY(check_buf(fn, send ? "sendbuff" : "recvbuff", buf, bytes));
    if (comm->mpi == MPI_COMM_NULL)
        return fail(ncclInvalidUsage, "%s: a rank's send to itself needs MPI here", fn);
    MPI_Request rq;
    int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, P2P_TAG, comm->mpi, &rq)
                  : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, P2P_TAG, comm->mpi, &rq);
    TRY(mpi(fn, rc));
    group_p2p.push_back(rq);
    return group_depth ? ncclSuccess : complete(fn, group_p2p);
}

extern "C" ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t t, int peer,
                                 ncclComm_t comm, cudaStream_t st)
{
    (void)st;
    return p2p("ncclSend", 1, const_cast<void *>(sendbuff), count, t, peer, comm);
}

extern "C" ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t t, int peer,
                                 ncclComm_t comm, cudaStream_t st)
{
    (void)st;
    return p2p("ncclRecv", 0, recvbuff, count, t, peer, comm);
}

extern "C" ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclGroupEnd(void)
{
    if (group_depth == 0)
        return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group_depth)
        return ncclSuccess;
    return complete("ncclGroupEnd", group_p2p);
}
