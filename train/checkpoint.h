/* Training checkpoints: DIR/step-NNNNNNNN/ with model.safetensors (the parameters under
 * the table names of train/model.h), optimizer.safetensors (AdamW moments) and
 * checkpoint.json (config, step, data position, RNG state). A step directory is written
 * under a temporary name and renamed when complete, so a directory under its final name is
 * always whole; checkpoint.json is the last file written into it. Layout:
 * docs/formats/checkpoint.md.
 */
#ifndef SL_TRAIN_CHECKPOINT_H
#define SL_TRAIN_CHECKPOINT_H

#include "train/model.h"

#include <stddef.h>
#include <stdint.h>

/* What is saved besides the tensors. */
struct ckpt_state {
    long step;              /* optimizer steps taken (including skipped ones) */
    long adam_step;         /* AdamW updates applied (bias-correction count) */
    long skipped;           /* steps skipped for a non-finite loss or gradient */
    uint64_t consumed_samples; /* train samples consumed: the data position */
    uint64_t rng[4];        /* the trainer's generator state */
    double loss;            /* last train loss */
};

/* Write DIR/step-NNNNNNNN. config_json is the full run configuration (an object), kept for
 * the record. m and v may be NULL (weights only). */
int ckpt_save(const char *dir, const struct model_config *c, const struct model_layout *l,
              const float *params, const float *m, const float *v, const struct ckpt_state *st,
              const char *config_json, const char *optim_json);

/* The newest complete checkpoint under dir (a step-* directory with a checkpoint.json);
 * *path is a fresh string, or NULL when there is none (returns 0 then). */
int ckpt_find_latest(const char *dir, char **path);

/* Read checkpoint.json of a step directory: the model config and the state. */
int ckpt_read_meta(const char *path, struct model_config *c, struct ckpt_state *st);
/* Load the parameters (and moments when m, v are not NULL) of a step directory into slabs
 * laid out by l. Every tensor must be present with its shape; errors name the file. */
int ckpt_load(const char *path, const struct model_layout *l, float *params, float *m, float *v);

/* Remove all but the newest keep step-* directories (keep <= 0: keep all). */
int ckpt_prune(const char *dir, int keep);

/* Write a Hugging Face transformers directory (config.json, model.safetensors) for the
 * checkpoint at path: GPT2LMHeadModel for learned positions + LayerNorm + GELU + biases,
 * LlamaForCausalLM for RoPE + RMSNorm + SwiGLU. SL_ERR_UNSUPPORTED for other mixes. */
int ckpt_export_hf(const char *path, const char *out_dir, const char **arch);

#endif
