/* The GPU trainer's collectives: all-reduce, reduce-scatter, all-gather, broadcast and
 * point-to-point transfers of device buffers over a group of ranks, ordered on a CUDA stream
 * as NCCL orders them. Two backends:
 *  - NCCL (GCOMM_NCCL): the GPUs talk directly; one rank per GPU (NCCL refuses two ranks on
 *    one device). Under the emulated GPUs of kernels/emu/ NCCL itself runs over MPI.
 *  - MPI (GCOMM_MPI): host-staged through pinned memory (train/gpu_comm_mpi.c): the calling
 *    thread waits for the stream to reach the operation, the data travels through MPI, and
 *    the result is copied back on the stream. No overlap with compute, but any number of
 *    ranks may share one GPU, and no NCCL is needed. Reductions run on the host, folding the
 *    ranks in order in fp32 (bf16 widened, and rounded once to nearest even at the end):
 *    every rank gets the same bits, those of the emulated NCCL; real NCCL's ring adds in
 *    another order and rounds bf16 at every hop, so the results can differ from NCCL's in
 *    the last bits (bf16), or by fp32 rounding (fp32 over three or more ranks).
 * A group of one rank needs neither: every operation is a device copy (or nothing, in place).
 *
 * Counts are in elements; buffers are device pointers. In place as NCCL allows it:
 * reduce-scatter with recv == send + rank * recvcount, all-gather with
 * send == recv + rank * sendcount, all-reduce and broadcast with send == recv. A failing
 * operation is fatal (sl_cuda_fatal): a step cannot go on with some ranks' data missing, and
 * the fatal hook stops the other ranks rather than let them wait.
 *
 * Every rank opens its communicators in the same order (the emulated NCCL and the MPI
 * backend split the world in order). Internal to the CUDA trainer (train/gpu_*.c).
 */
#ifndef SL_TRAIN_GPU_COMM_H
#define SL_TRAIN_GPU_COMM_H

#include <cuda_runtime_api.h>
#include <stddef.h>

struct sl_world;

enum gcomm_backend { GCOMM_NCCL, GCOMM_MPI };
enum gcomm_type { GCOMM_F32, GCOMM_BF16 };
enum gcomm_op { GCOMM_SUM, GCOMM_MAX };

struct gcomm;

/* A communicator over `group` (the world, or a group from sl_world_split, borrowed for the
 * communicator's life) with backend be. Collective over the group; the CUDA device of the
 * rank is set. SL_ERR_UNSUPPORTED for NCCL in a build without it. */
int gcomm_open(struct gcomm **out, enum gcomm_backend be, const struct sl_world *group);
void gcomm_close(struct gcomm *c); /* NULL: nothing */

int gcomm_rank(const struct gcomm *c);
int gcomm_size(const struct gcomm *c);
enum gcomm_backend gcomm_backend_of(const struct gcomm *c);
const char *gcomm_backend_name(enum gcomm_backend be); /* "nccl", "mpi" */

void gcomm_all_reduce(struct gcomm *c, const void *send, void *recv, size_t count,
                      enum gcomm_type t, enum gcomm_op op, cudaStream_t st);
/* the sum over ranks of send[size * recvcount], rank r receiving block r */
void gcomm_reduce_scatter(struct gcomm *c, const void *send, void *recv, size_t recvcount,
                          enum gcomm_type t, cudaStream_t st);
/* every rank's send[sendcount] into recv[size * sendcount] in rank order */
void gcomm_all_gather(struct gcomm *c, const void *send, void *recv, size_t sendcount,
                      enum gcomm_type t, cudaStream_t st);
void gcomm_broadcast(struct gcomm *c, const void *send, void *recv, size_t count,
                     enum gcomm_type t, int root, cudaStream_t st);
void gcomm_send(struct gcomm *c, const void *buf, size_t count, enum gcomm_type t, int peer,
                cudaStream_t st);
void gcomm_recv(struct gcomm *c, void *buf, size_t count, enum gcomm_type t, int peer,
                cudaStream_t st);
/* The operations between begin and end are issued together (an NCCL group; the MPI backend
 * starts them non-blocking and completes them at end): send/recv pairs that would otherwise
 * wait on each other, or many small collectives. Not nested. */
void gcomm_group_begin(struct gcomm *c);
void gcomm_group_end(struct gcomm *c);

#endif
