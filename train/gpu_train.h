/* The CUDA trainer behind `sluice train train.device=cuda` (or auto with a GPU): the same
 * model (train/model.h), data, schedule, checkpoints and log lines as the CPU path, with
 * bf16 activations and working weights, fp32 master weights and AdamW state, cuBLASLt
 * GEMMs, fused attention, activation recomputation, and data parallelism over NCCL with
 * ZeRO-1 (gradients reduce-scattered per layer while the backward runs, each rank updating
 * its shard, parameters all-gathered). One rank per GPU. docs/trainer.md describes it.
 *
 * gpu_train_available and gpu_train_run are in every build (train/gpu_plugin.c): they load
 * the GPU library (libsluice-gpu.so, next to the sluice binary, built where nvcc is found)
 * on first use and call its sl_gpu_plugin_* functions; without it they say why and fail.
 */
#ifndef SL_TRAIN_GPU_TRAIN_H
#define SL_TRAIN_GPU_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "train/model.h"
#include "train/optim.h"

struct sl_world;

enum gpu_attention { GPU_ATTN_AUTO, GPU_ATTN_CUDNN, GPU_ATTN_FLASH };
enum gpu_recompute { GPU_RECOMPUTE_NONE, GPU_RECOMPUTE_SELECTIVE, GPU_RECOMPUTE_FULL };

/* The run, as `sluice train` parsed it (docs/trainer.md has every key). The pointers are
 * borrowed for the duration of gpu_train_run. */
struct gpu_train_args {
    struct model_config mc;
    long seq_len, micro_batch, global_batch, steps, accum;
    uint64_t seed, data_seed;
    const char *resume; /* "auto", "none" or a step directory */
    int on_nan_skip;
    struct lr_schedule lr;
    struct adamw adam;
    double clip;
    const char *prefix, *split, *cache_dir; /* prefix NULL: synthetic data */
    int normalize_weights;
    long eval_interval, eval_iters;
    const char *ckpt_dir;
    long ckpt_interval, keep_last;
    const char *log_file;
    const char *tb_dir; /* log.tensorboard_dir as set (NULL: unset; see train/trainlog.h) */
    long log_interval;
    double peak_tflops;
    const char *config_json, *optim_json;
    enum gpu_attention attention;
    enum gpu_recompute recompute;
};

/* 1 when this build has CUDA and this process sees at least one GPU; otherwise 0 with the
 * reason in why ("built without CUDA", "no CUDA device: ..."). */
int gpu_train_available(char *why, size_t n);

/* Train. Collective over the world: every rank calls it. Errors are printed here; returns
 * 0, or 1 on failure (fatal CUDA/NCCL errors abort all ranks). */
int gpu_train_run(const struct gpu_train_args *a, struct sl_world *w);

/* The GPU library's entry points (the same contracts as above), found with dlsym. */
int sl_gpu_plugin_available(char *why, size_t n);
int sl_gpu_plugin_run(const struct gpu_train_args *a, struct sl_world *w);

#endif
