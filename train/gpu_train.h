/* The CUDA trainer behind `sluice train train.device=cuda` (or auto with a GPU): a backend of
 * the trainer's driver (train/train_run.h) with the same model (train/model.h), data,
 * schedule and checkpoints as the CPU path, bf16 activations and working weights, fp32
 * gradient accumulation, fp32 master weights and AdamW state, cuBLASLt GEMMs, fused
 * attention, activation recomputation, and data parallelism over NCCL with ZeRO-1
 * (gradients reduce-scattered per layer while the backward runs, each rank updating its
 * shard, parameters all-gathered). One rank per GPU. docs/trainer.md describes it.
 *
 * gpu_train_backend is in every build (train/gpu_plugin.c): it loads the GPU library
 * (libsluice-gpu.so, next to the sluice binary, built where nvcc is found) on first use and
 * asks its sl_gpu_plugin_backend for the table; without it, it says why.
 */
#ifndef SL_TRAIN_GPU_TRAIN_H
#define SL_TRAIN_GPU_TRAIN_H

#include <stddef.h>

#include "train/train_run.h"

/* The GPU backend when this build has CUDA, its library loads and this process sees a CUDA
 * device; otherwise NULL with the reason in why. The reason starts with exactly
 * "no CUDA device" when the machine has none (no device node, and CUDA finds none), so that
 * callers can tell "no GPU here" from a GPU that does not work. */
const struct train_backend *gpu_train_backend(char *why, size_t n);

/* The GPU library's entry point (the same contract), found with dlsym. */
const struct train_backend *sl_gpu_plugin_backend(char *why, size_t n);

#endif
