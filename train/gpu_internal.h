/* Internal to the CUDA trainer (train/gpu_train.c, gpu_model.c, gpu_zero.c, gpu_loader.c):
 * the trainer's state and the functions its files share. Not a public interface: the
 * backend table is in train/gpu_train.h.
 */
#ifndef SL_TRAIN_GPU_INTERNAL_H
#define SL_TRAIN_GPU_INTERNAL_H

#include "dataset/loader.h"
#include "kernels/attention.h"
#include "kernels/cuda_common.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "core/rng.h"
#include "train/checkpoint.h"
#include "train/gpu_comm.h"
#include "train/gpu_train.h"
#include "train/model.h"
#include "train/parallel.h"
#include "core/world.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

/* GEMM and attention launchers return -1 for a shape they cannot run: fatal here (the shapes
 * were all checked at start-up, so this is a bug, not bad input). */
#define GEMM_CHECK(call)                                                                           \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("cublaslt", gemm_error(), #call, __FILE__, __LINE__);                    \
    } while (0)
#define ATTN_CHECK(call)                                                                           \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            sl_cuda_fatal("attention", "shape not supported by the chosen backend", #call,         \
                          __FILE__, __LINE__);                                                     \
    } while (0)

/* ---- the pieces ---------------------------------------------------------------------- */

/* A bucket of the gradient: the tensors before the first layer (embeddings), one layer, or
 * those after the last one (final norm, output layer). Contiguous in the layout and on the
 * device; on the device padded so that every rank's slice has the same multiple of 64
 * elements. Rank r owns [dev + r len/W, dev + (r+1) len/W) of every bucket. */
struct gbucket {
    size_t la, lb;   /* layout range [la, lb) */
    size_t dev, len; /* device range [dev, dev + len) */
    size_t shard;    /* this rank's slice starts here in the master/m/v storage */
};

/* Activations of one layer (shared buffers where recomputation rebuilds them). */
struct gacts {
    sl_bf16 *res;   /* [N, D] layer input (residual stream) */
    sl_bf16 *ln1;   /* [N, D] attention norm output */
    float *m1, *r1; /* [N] its mean (LayerNorm) and rstd */
    sl_bf16 *qkv;   /* [N, QKV] after RoPE */
    sl_bf16 *atty;  /* [N, H d] attention output */
    float *lse;     /* [B, H, T] */
    sl_bf16 *mid;   /* [N, D] residual after attention */
    sl_bf16 *ln2;   /* [N, D] MLP norm output */
    float *m2, *r2; /* [N] */
    sl_bf16 *fc;    /* [N, FC] pre-activation */
    sl_bf16 *act;   /* [N, F] */
};

/* What the last virtual pipeline stage keeps of a micro-batch in flight: the gradient of its
 * last layer's output, computed by the forward (the loss's backward through the output
 * layer and final norm runs right after the loss, so that no set of logits waits). */
struct gslot {
    sl_bf16 *dhead; /* [N, D] */
};

/* The input pipeline: a thread fills pinned buffers (two steps deep) from the data loader. */
struct gloader {
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const struct data_loader *data;
    int dev;
    long B, T, accum, W, rank, global;
    int32_t *pinned[2]; /* per slot: accum x [tokens N | targets N] */
    cudaEvent_t copied[2];
    int pending[2]; /* a copy out of the slot was enqueued */
    int ready[2];
    long next, last;    /* steps the thread fills */
    long step0;         /* steps taken before the first one filled */
    uint64_t consumed0; /* samples consumed before step step0 + 1 */
    uint32_t *sample;
    int rc, stop;
    char err[1024];
};

enum { MEM_PARAMS, MEM_GRADS, MEM_OPTIM, MEM_ACTS, MEM_WORK, MEM_N };

struct gt {
    const struct train_opts *a;
    struct sl_world *w;
    int rank, W, dev;
    /* model parallelism (train/parallel.h): the layout, this rank's place in it and its shard
     * of the model (t->l is sh.l, the local layout; fl the full model's); dW, drank: the
     * data-parallel group's size and this rank's place in it (W, rank without model
     * parallelism) */
    struct parallel_config par;
    struct parallel_coord at;
    struct model_layout fl;
    struct model_shard sh;
    int dW, drank;
    int nchunks, nslots; /* model chunks (virtual stages); activation sets per chunk */
    /* groups: data parallel (same tensor and pipeline coordinates), the pipeline's stages,
     * the two pipeline ends holding a tied embedding */
    struct sl_world dpg, ppg, embg;
    struct gcomm *ppc, *embc;     /* over ppg and embg (NULL: no pipeline / nothing tied) */
    sl_bf16 *xout, *dxout, *dxin; /* [N, D] activation and gradient out, gradient in */
    struct gslot *slot;           /* [nslots] (a pipeline's last stage) */
    struct cudaDeviceProp prop;
    struct model_layout l;
    int B, T, N, D, H, Hkv, hd, QKV, QD, F, FC, V, Vp, L;
    float attn_scale;
    /* device layout */
    size_t *doff; /* device offset of each tensor */
    struct gbucket *bk;
    int nbk;
    size_t dtotal, shard_n;
    /* the arena */
    void *arena;
    size_t mem[MEM_N];
    sl_bf16 *params;
    sl_bf16 *grads;   /* [dtotal] one micro-batch's gradient (bf16, zeroed per micro-batch) */
    float *main_grad; /* [dtotal] the step's gradient, summed over micro-batches in fp32;
                       * after the reduce-scatter each rank's slices hold the sum over ranks */
    float *master, *m, *v;
    struct adamw_tensor *d_tensors;
    int ntensors;
    struct gacts *per, shared; /* per: [nslots x L] */
    sl_bf16 *res_final, *nf, *tmp, *logits;
    float *nfm, *nfr, *losses;
    sl_bf16 *dres, *dn, *dqkv, *datty, *dfc, *dact;
    float *rope_cos, *rope_sin;
    void *gemm_ws, *attn_ws, *norm_scratch, *emb_scratch, *gn_scratch;
    size_t attn_ws_bytes, emb_scratch_bytes;
    int32_t *d_tok[2], *d_tok_eval;
    float *d_stats;  /* [0] grad norm squared, [1 + a] mean loss of micro-step a */
    float *d_eval;   /* eval_iters x accum mean losses */
    float *h_stats;  /* pinned: d_stats then d_eval */
    int32_t *h_eval; /* pinned: one validation micro-batch, tokens then targets */
    uint32_t *eval_sample;
    /* libraries and streams */
    struct gemm *gemm;
    struct attention *attn;
    cudaStream_t st, comm, copy;
    cudaEvent_t ev_grad, ev_comm, ev_stats, step_done[2];
    struct gcomm *dpc;          /* data parallel: over dpg (train/gpu_comm.h) */
    enum gcomm_backend comm_be; /* the backend of train.comm (gpu_train.c setup_device) */
    int reduce;                 /* the gradient goes through dpc (more than one rank, or a build
                                 * with NCCL, where one rank reduces too, as it always has) */
    struct data_loader *data;   /* borrowed from the driver */
    struct gloader ld;
    float *dump_host; /* [fl.total] train.dump_grads staging (allocated when dumping) */
};

/* gpu_train.c */
int gpu_all_ok(struct gt *t, int rc); /* collective: the first error of any rank, or 0 */

/* gpu_model.c: device layout, the arena, forward and backward */
int gpu_local_layout(struct gt *t); /* par, at, fl, sh, t->l, dW, drank from the options */
int gpu_setup_model(struct gt *t);  /* layout, buckets, attention, arena, streams, tables */
void gpu_slice_of(const struct gt *t, int k, size_t *dev0, size_t *count, size_t *lay0,
                  size_t *n_layout);
/* chunk c is the first / last virtual pipeline stage */
int gpu_first_virtual(const struct gt *t, int c);
int gpu_last_virtual(const struct gt *t, int c);
/* the activation buffer a received forward input of chunk c, slot s goes to */
sl_bf16 *gpu_chunk_input(struct gt *t, int c, int s);
/* Forward of tokens tok[N] (targets at tok + N) through chunk c in activation slot s: from
 * the embedding (first virtual stage) or the input received in gpu_chunk_input, to the
 * logits in t->logits (last virtual stage) or the output in t->xout. */
void gpu_chunk_fwd(struct gt *t, int c, int s, const int32_t *tok);
/* After the classifier turned the logits of micro-step m (slot s) into their gradient: the
 * backward through the output layer and the final norm, their buckets' gradients summed
 * (gpu_bucket_done), the gradient of the last layer's output kept for the chunk's backward
 * (t->slot[s].dhead; t->dres without a pipeline, whose backward follows at once). */
void gpu_head_bwd(struct gt *t, int s, long m);
/* Backward of micro-step m (of accum) through chunk c, slot s, from the gradient
 * gpu_head_bwd kept (last virtual stage) or the output's gradient received in t->dxin: the
 * chunk's gradients of the micro-batch into t->grads (bf16), each bucket
 * then summed into t->main_grad (fp32) and, on the last micro-step, reduce-scattered; the
 * input's gradient in t->dxout (not on the first virtual stage). */
void gpu_chunk_bwd(struct gt *t, int c, int s, const int32_t *tok, long m);

/* gpu_zero.c: the data-parallel communicator, ZeRO-1 optimizer step, state in and out */
int gpu_setup_comm(struct gt *t);
void gpu_bucket_done(struct gt *t, int k, long m);
/* After the step's backward, with a tied embedding on two pipeline ends: their gradients
 * summed over embc, then the embedding's bucket reduce-scattered (gpu_bucket_done leaves it) */
void gpu_tied_reduce(struct gt *t);
void gpu_reduce_stats(struct gt *t);
void gpu_optimizer_step(struct gt *t, double lr, long adam_step, uint64_t seed);
int gpu_load_state(struct gt *t, const char *from, uint64_t init_seed);
int gpu_save_checkpoint(struct gt *t, const struct ckpt_state *st);
/* The bf16 working weights (whole on every rank) widened exactly to fp32 into dst, laid
 * out by t->l (the backend's params_host). */
int gpu_params_host(struct gt *t, float *dst);
int gpu_gather_grads(struct gt *t, float *host); /* collective: the full fp32 gradient */

/* gpu_loader.c: the input pipeline */
void gpu_fill_tokens(int32_t *dst, const uint32_t *sample, long b, long T, long N);
int gpu_loader_start(struct gt *t, long step0, uint64_t consumed0);
int gpu_loader_take(struct gt *t, long s);
void gpu_loader_stop(struct gt *t);

#endif
