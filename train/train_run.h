/* One training run, shared by the driver (train/driver.c) and its two backends: the CPU
 * reference path (train/cpu_train.c) and the CUDA trainer in the GPU library
 * (train/gpu_train.c). The driver reads the keys once (train/train_config.h), opens the
 * data, finds the checkpoint to resume from, prints the log lines and runs the loop; a
 * backend only holds the model and its state and implements the table below.
 */
#ifndef SL_TRAIN_TRAIN_RUN_H
#define SL_TRAIN_TRAIN_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "train/checkpoint.h"
#include "train/docmask.h"
#include "dataset/datainfo.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/parallel.h"

struct sl_world;
struct data_loader;

enum train_device { TRAIN_DEVICE_AUTO, TRAIN_DEVICE_CPU, TRAIN_DEVICE_CUDA };
enum gpu_attention { GPU_ATTN_AUTO, GPU_ATTN_CUDNN, GPU_ATTN_FLASH };
enum gpu_recompute { GPU_RECOMPUTE_NONE, GPU_RECOMPUTE_SELECTIVE, GPU_RECOMPUTE_FULL };
/* the dtype of the GPU gradient reduce-scatter (train.grad_reduce_dtype) */
enum gpu_grad_reduce { GPU_REDUCE_FP32, GPU_REDUCE_BF16 };
/* the GPU ranks' communication backend (train.comm; train/gpu_comm.h) */
enum gpu_comm_choice { GPU_COMM_AUTO, GPU_COMM_NCCL, GPU_COMM_MPI };
/* the linear layers' FP8 scaling (train.fp8; train/fp8.h) */
enum train_fp8 { TRAIN_FP8_NONE, TRAIN_FP8_DELAYED, TRAIN_FP8_CURRENT };

/* Every key of `sluice train` (docs/trainer.md), parsed and checked. */
struct train_opts {
    struct model_config mc;
    long seq_len, micro_batch, global_batch, steps, threads;
    long accum;                 /* global / (micro x data-parallel ranks) */
    struct parallel_config par; /* parallel.*: tensor, pipeline and data parallel sizes */
    uint64_t seed, data_seed;
    const char *resume;
    int on_nan_skip; /* train.on_nan=skip */
    struct lr_schedule lr;
    struct adamw adam;
    double clip;
    const char *prefix, *split, *cache_dir;
    char *prefix_list;     /* data.prefix given as a list, joined (owned) */
    char *split_prefix[3]; /* separate splits: data.prefix.{train,validation,test} or
                            * data.{train,valid,test}_data_path, joined (owned), or NULL */
    int normalize_weights, synthetic;
    /* what Megatron's index cache names hash (dataset/loader.h): data.megatron_tokenizer,
     * data.megatron_path_map, data.mid_level_dataset_surplus (< 0: Megatron's default) */
    const char *megatron_tokenizer, *megatron_path_map;
    double surplus;
    /* data.reset_position_ids, data.reset_attention_mask, data.eod_mask_loss; eod from the
     * data (train/docmask.h) */
    struct docmask docs;
    struct data_info data; /* the data's tokenizer and absolute paths (owned) */
    int vocab_from_data;   /* model.vocab_size was taken from the data */
    char *data_json;       /* data_info as JSON, for checkpoint.json (owned) */
    long eval_interval, eval_iters;
    char **eval_tasks; /* eval.tasks: task files (owned, NULL-terminated), or NULL */
    long eval_task_limit;
    const char *ckpt_dir;
    long ckpt_interval, keep_last;
    const char *log_file, *tb_dir;
    long log_interval;
    double peak_tflops;
    const char *dump_dir; /* debug.dump_dir (CPU path only) */
    long dump_steps;
    const char *dump_grads; /* train.dump_grads: the first step's gradient into this dir */
    int device;             /* enum train_device */
    int attention, recompute, grad_reduce; /* enum gpu_attention, gpu_recompute, gpu_grad_reduce */
    int deterministic;                     /* train.deterministic */
    int comm;                              /* enum gpu_comm_choice */
    int zero_off;                          /* optim.zero=0 given (the GPU shards anyway) */
    int fp8;                               /* enum train_fp8 */
    long fp8_history, fp8_margin;   /* delayed scaling: amax history length, margin (2^-margin) */
    char *config_json, *optim_json; /* for checkpoint.json (owned) */
};

/* One optimizer step, as the driver asks for it and the backend reports it. */
struct train_step {
    long step; /* 1-based */
    double lr;
    long adam_step;            /* the AdamW step count if this update is applied */
    uint64_t consumed_samples; /* the data position before this step */
    int want_stats;            /* loss and norm are needed now (logged, saved, evaluated) */
    const char *dump_grads;    /* write the gradient (before clipping) to this file */
    /* out */
    double loss, norm; /* mean loss over the global batch, global gradient norm */
    int have_stats;    /* loss and norm are set (always when want_stats or on_nan=skip) */
    int applied;       /* the update was applied (0: skipped for a non-finite loss/norm) */
};

/* A backend. Every function is collective over the world (every rank calls it) and returns
 * 0 or a negative enum sl_err with a message (sl_err_msg); fatal device errors abort all
 * ranks. ctx is the backend's own state. */
struct train_backend {
    const char *name; /* "cpu", "cuda" */
    /* Build the model and allocate everything for the run over `data` (borrowed until
     * release). *act_bytes: the activation memory, for the model log line. */
    int (*setup)(void **ctx, const struct train_opts *o, struct sl_world *w,
                 struct data_loader *data, size_t *act_bytes);
    /* Fresh weights (from == NULL; model_init_params with init_seed) or a checkpoint's
     * parameters and AdamW moments. */
    int (*load)(void *ctx, const char *from, uint64_t init_seed);
    /* Forward and backward over the step's global batch, then the AdamW update (skipped
     * when on_nan=skip and the loss or norm is not finite). */
    int (*step)(void *ctx, struct train_step *s);
    /* Mean loss over eval.iters global batches of the valid split. */
    int (*evaluate)(void *ctx, double *loss);
    /* The current weights as fp32 into dst on rank 0 (laid out by the model's layout,
     * l.total floats; gaps untouched), for eval.tasks: the tasks are scored by the CPU code
     * of train/eval.h over them. Collective (a model-parallel backend gathers the model);
     * dst is NULL on the other ranks. */
    int (*params_host)(void *ctx, float *dst);
    /* What this rank allocated for weights, gradients and optimizer state (*bytes), the
     * parameters whose AdamW moments it keeps (*moments: all of its *params, or under
     * ZeRO-1 its pieces), for the memory log line. Optional (NULL); not collective. */
    void (*state)(void *ctx, size_t *bytes, uint64_t *moments, uint64_t *params);
    /* Write checkpoint.dir/step-N for state st (rank 0 commits it). */
    int (*save)(void *ctx, const struct ckpt_state *st);
    void (*release)(void *ctx); /* NULL ctx is a no-op */
};

extern const struct train_backend train_backend_cpu;

struct sl_cfg;

/* Train as root (the config and its overrides) says, on every rank of the world; with
 * print_only, print the resolved keys (--print-config) on rank 0 instead. Prints its errors;
 * returns the exit status: 0, 1 (the run failed) or 2 (the config is wrong). */
int train_run(struct sl_cfg *root, int print_only);

/* Write a gradient, laid out by l (fp32, the whole slab), to path as safetensors: one F32
 * tensor per parameter under its checkpoint name, and the model's shape in the metadata
 * (n_heads, n_kv_heads, head_dim, d_ff, activation) so that tools can split fused tensors.
 * Used by both backends for train.dump_grads. */
int train_dump_grads(const char *path, const struct model_config *mc, const struct model_layout *l,
                     const float *grads);

#endif
