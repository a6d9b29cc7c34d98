/* Model parallelism's layout, shared by the CPU and GPU trainers: the groups of a
 * (tensor, pipeline, data) parallel run, and which part of every tensor of the model a rank
 * holds (struct model_shard).
 *
 * Ranks are ordered as Megatron-Core orders them: tensor parallel varies fastest, then data
 * parallel, then pipeline (rank = tp + TP * (dp + DP * pp)), so that a tensor-parallel group
 * is made of consecutive ranks (one node). Tensor parallel splits a layer as Megatron does:
 * the fused qkv projection by heads (q, k and v rows of each rank's heads), the first MLP
 * projection by its rows (SwiGLU's gate and up rows alike), the attention and MLP output
 * projections by their columns, and the embedding / output layer by vocabulary rows. Pipeline
 * parallel gives each stage a contiguous run of layers, or with virtual stages (interleaved)
 * vp runs, stage s holding virtual stages s, s + pp, ... No code here knows about MPI: the one
 * collective (parallel_gather_full) goes through core/world.h.
 */
#ifndef SL_TRAIN_PARALLEL_H
#define SL_TRAIN_PARALLEL_H

#include "train/gpu_plan.h"
#include "train/model.h"

#include <stddef.h>
#include <stdint.h>

struct sl_cfg;
struct sl_world;

struct parallel_config {
    int tp, pp, dp; /* group sizes: world = tp * pp * dp */
    int sp;         /* sequence parallel (with tp > 1) */
    int world;
    int zero; /* ZeRO-1 on the CPU path (optim.zero): AdamW moments sharded over data parallel */
    int vp;   /* virtual pipeline stages per rank (interleaved 1F1B); 0 or 1: none */
};

#define PARALLEL_MAX_VP 64

struct parallel_coord {
    int tp, dp, pp;
};

/* Read parallel.tensor, parallel.pipeline (default 1), parallel.virtual_stages (default 1),
 * parallel.sequence (default false) and
 * parallel.data (optional: world / (tensor x pipeline), checked when given) for a world of
 * `world` ranks, and check them against the model (parallel_check). world <= 0: no world
 * (a dry run): it is tensor x pipeline x data. */
int parallel_config_load(struct parallel_config *p, struct sl_cfg *root, int world,
                         const struct model_config *mc);
/* The layout is possible: world divisible by tp * pp, heads, KV heads and d_ff divisible by
 * tp (KV heads are not replicated: tp may not exceed them), at least one layer per stage.
 * SL_ERR_CONFIG with a message naming the key and a hint otherwise. */
int parallel_check(const struct parallel_config *p, const struct model_config *mc);

void parallel_coord_of(const struct parallel_config *p, int rank, struct parallel_coord *c);
int parallel_rank_of(const struct parallel_config *p, const struct parallel_coord *c);

/* The layers of pipeline stage `stage`: [*first, *first + *n); earlier stages take the
 * remainder one layer each. With virtual stages (p->vp > 1) the layers of its first chunk. */
void parallel_stage_layers(const struct parallel_config *p, int n_layers, int stage, int *first,
                           int *n);
/* Interleaved pipeline: the layers of chunk `chunk` of stage `stage`, virtual stage
 * chunk x pp + stage of pp x vp, each a contiguous run (earlier virtual stages take the
 * remainder one layer each, as Megatron-Core's interleaved schedule splits them). */
void parallel_chunk_layers(const struct parallel_config *p, int n_layers, int stage, int chunk,
                           int *first, int *n);

/* Where one tensor of a rank's local layout comes from in the full model's layout. */
struct shard_rows {
    int64_t lrow, frow, nrows; /* local rows [lrow, lrow + nrows) = full rows [frow, ...) */
};

struct tensor_shard {
    int full;    /* index in the full layout; -1: not used on this rank (left zero) */
    int owner;   /* this rank's copy is the one that counts (gathers, gradient norm) */
    int split;   /* the tensor is split across the tensor-parallel group */
    int64_t col; /* column split: local columns = full columns [col, col + local cols); -1 */
    int nrows;   /* row pieces (row split or whole: one piece of every row) */
    struct shard_rows rows[3];
};

struct model_shard {
    struct parallel_config p;
    struct parallel_coord at;
    struct model_config local; /* heads, KV heads, d_ff, vocabulary rows and layers of this rank */
    struct model_layout l;     /* the rank's slab */
    int vocab_start;           /* first vocabulary row held (vocab-parallel) */
    int first_layer;           /* full index of local layer 0 */
    int first_stage, last_stage;
    /* the local layers chunk by chunk (one chunk without virtual stages): chunk c is local
     * layers [chunk_local[c], chunk_local[c] + chunk_n[c]) = full [chunk_full[c], ...) */
    int nchunks;
    int chunk_local[PARALLEL_MAX_VP], chunk_full[PARALLEL_MAX_VP], chunk_n[PARALLEL_MAX_VP];
    struct tensor_shard *t; /* l.n entries */
};

/* The shard of the rank at coordinates `at` of the model with config full and layout fl
 * (borrowed for the shard's life). Release with model_shard_release. */
void model_shard_init(struct model_shard *s, const struct parallel_config *p,
                      const struct parallel_coord *at, const struct model_config *full,
                      const struct model_layout *fl);
void model_shard_release(struct model_shard *s);

/* Copy the rank's part of a full slab (laid out by fl) into its local slab, and back: place
 * writes only the tensors the shard owns (owner set) unless `all` is set. */
void model_shard_slice(const struct model_shard *s, const struct model_layout *fl,
                       const float *full, float *local);
void model_shard_place(const struct model_shard *s, const struct model_layout *fl,
                       const float *local, float *full, int all);

/* The full model (laid out by fl) on rank 0 of `group`, the model-parallel ranks of one
 * replica in Megatron order (group rank k at tensor rank k % tp, pipeline stage k / tp), from
 * each rank's local slab (its shard's l.total floats); full may be NULL off rank 0. Checks
 * that every rank sent its shard's size. Collective over group. */
int parallel_gather_full(const struct sl_world *group, const struct parallel_config *p,
                         const struct model_config *mc, const struct model_layout *fl,
                         const float *local, size_t local_n, float *full);

/* Activation sets the CPU path allocates per model chunk: min(pp, accum) micro-batches in
 * flight with 1F1B; with virtual stages the most micro-batches a chunk of any stage has in
 * flight in the interleaved schedule (counted by running it), at most accum. */
long parallel_cpu_slots(const struct parallel_config *p, long accum);

/* Memory per rank, in bytes, of the rank with the most: parameters (of the tensors its
 * stage uses: model_shard_init gives the others no room); weights + gradients + optimizer
 * state at 16 bytes a parameter on the CPU path (fp32 weights, gradients, two AdamW moments;
 * 8 + 8 / DP with p->zero, the moments of 1 / DP of every tensor); activations of the
 * micro-batches a stage keeps (the CPU path allocates min(pp, accum) sets): the fp32 slab of
 * train/cpu_model.c (which keeps the s x s attention probabilities). With gpu set, the GPU
 * trainer's arena (parallel_gpu_estimate, no recomputation): weights_bytes its parameters,
 * gradients and optimizer state, act_bytes its activations.
 * stage >= 0: that pipeline stage's ranks only; -1: the largest of every stage. */
struct parallel_memory {
    uint64_t params;      /* local parameters of the largest shard */
    double weights_bytes; /* parameters + gradients + optimizer state */
    double act_bytes;     /* activations */
};
void parallel_memory_estimate(const struct parallel_config *p, const struct model_config *mc,
                              long micro_batch, long seq_len, long accum, int gpu, int stage,
                              struct parallel_memory *m);

/* The GPU trainer's memory per rank: the arena of train/gpu_plan.h (what the trainer
 * allocates, buffer for buffer) for the rank of every pipeline stage that holds the most
 * (tensor-parallel rank 0: the first vocabulary rows), with the own kernels' workspace sizes
 * (gpu_plan_own_kernels; cuDNN's may differ, said there). Activation sets a stage keeps:
 * 1 without pipeline parallelism; with 1F1B stage s keeps min(pp - s, accum); interleaved,
 * every chunk keeps parallel_cpu_slots sets. Only the last stage holds the logits. */
struct parallel_gpu_opts {
    long micro_batch, seq_len, accum, eval_iters;
    int recompute; /* enum gpu_recompute */
    int zero;      /* ZeRO stage (0 counts as 1: the GPU trainer always shards the optimizer) */
    int docs;      /* document positions and starts travel with the tokens (train/docmask.h) */
};
struct parallel_gpu_rank {
    int stage;                 /* pipeline stage */
    long sets;                 /* activation sets kept */
    uint64_t params;           /* parameters the rank holds (model_shard's local layout) */
    size_t cat[GPU_PLAN_NCAT]; /* bytes per category (enum gpu_plan_cat) */
    size_t total;              /* the arena's bytes */
};
/* One entry per pipeline stage into out[p->pp] (caller's array); returns the index of the
 * largest (the first of equals), or a negative enum sl_err (gpu_plan_build's). */
int parallel_gpu_estimate(const struct parallel_config *p, const struct model_config *mc,
                          const struct parallel_gpu_opts *o, struct parallel_gpu_rank *out);

#endif
