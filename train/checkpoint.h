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
#include "train/safetensors.h"

#include <stddef.h>
#include <stdint.h>

/* What is saved besides the tensors. */
struct ckpt_state {
    long step;                 /* optimizer steps taken (including skipped ones) */
    long adam_step;            /* AdamW updates applied (bias-correction count) */
    long skipped;              /* steps skipped for a non-finite loss or gradient */
    uint64_t consumed_samples; /* train samples consumed: the data position */
    uint64_t rng[4];           /* the trainer's generator state */
    double loss;               /* last train loss */
    /* members added to checkpoint.json's "data" object: a JSON object (dataset/datainfo.h:
     * prefix, tokenizer, vocab_size, eod_id), or NULL; borrowed; ckpt_read_meta leaves it NULL */
    const char *data_json;
    /* the tokenizer spec of the data (absolute), whose files are copied into the step
     * directory (checkpoint.json: data.tokenizer_copy); borrowed; may be NULL */
    const char *tokenizer;
};

/* "DIR/step-NNNNNNNN", the step directory of step (fresh string). */
char *ckpt_step_dir(const char *dir, long step);

/* Write DIR/step-NNNNNNNN. config_json is the full run configuration (an object), kept for
 * the record. m and v may be NULL (weights only). */
int ckpt_save(const char *dir, const struct model_config *c, const struct model_layout *l,
              const float *params, const float *m, const float *v, const struct ckpt_state *st,
              const char *config_json, const char *optim_json);

/* The steps of ckpt_save, for writers that hold the state in pieces (the GPU trainer: every
 * rank writes its optimizer shard into the same directory, on a shared file system).
 * ckpt_begin (one rank) makes a fresh DIR/.step-NNNNNNNN.tmp; ckpt_write_model and
 * ckpt_write_shard write into it; ckpt_commit (one rank, after all writers are done) adds
 * checkpoint.json and renames the directory to DIR/step-NNNNNNNN; ckpt_abort removes it.
 * ckpt_tmp_path returns a fresh string. */
char *ckpt_tmp_path(const char *dir, long step);
int ckpt_begin(const char *dir, long step);
void ckpt_abort(const char *dir, long step);
int ckpt_write_model(const char *dir, long step, const struct model_layout *l, const float *params);

/* A range of the flat parameter index space of the layout (elements [first, first + n)) and
 * the fp32 master weights and AdamW moments over it. */
struct ckpt_range {
    size_t first, n;
    const float *master, *m, *v;
};
/* DIR/.step-N.tmp/optimizer-RRRRR-of-WWWWW.safetensors: 1-D F32 tensors master@<first>,
 * exp_avg@<first>, exp_avg_sq@<first> for each range (ranges may have any size; empty ones
 * are left out). Together the shards of all ranks must cover [0, l->total). */
int ckpt_write_shard(const char *dir, long step, int rank, int nranks, const struct ckpt_range *r,
                     size_t nr);
/* The same two with the data produced tensor by tensor by fill (train/safetensors.h
 * st_write_fill), so that the writer never holds more than one tensor in host memory.
 * Model: tensor i is layout tensor i (numel floats). Shard: the file's tensors are, for
 * each non-empty range in order, its master, exp_avg and exp_avg_sq (r[].master/m/v are
 * ignored). */
int ckpt_write_model_fill(const char *dir, long step, const struct model_layout *l, st_fill_fn fill,
                          void *arg);
int ckpt_write_shard_fill(const char *dir, long step, int rank, int nranks,
                          const struct ckpt_range *r, size_t nr, st_fill_fn fill, void *arg);
/* shards > 0: the optimizer state is in that many shard files (and model.safetensors holds
 * the bf16 working weights widened to fp32); shards == 0: optimizer says whether
 * optimizer.safetensors was written. */
int ckpt_commit(const char *dir, const struct model_config *c, const struct ckpt_state *st,
                const char *config_json, const char *optim_json, int optimizer, int shards);

/* The newest complete checkpoint under dir (a step-* directory with a checkpoint.json);
 * *path is a fresh string, or NULL when there is none (returns 0 then). */
int ckpt_find_latest(const char *dir, char **path);
/* The step directory a checkpoint operand names: path itself when it holds checkpoint.json
 * (a step directory), else the newest complete step under it (a checkpoint directory,
 * ckpt_find_latest). *step is a fresh string, or NULL on error: SL_ERR_NOTFOUND when path
 * is not there or holds no complete step, SL_ERR_FORMAT when it is not a directory,
 * SL_ERR_IO when it cannot be listed; the message names path. */
int ckpt_resolve(const char *path, char **step);

/* The settings a resumed run changes against those its step directory was written with:
 * train.steps (checkpoint.json config.train.steps) and the optimizer's settings
 * (optimizer.settings, compared with optim_json, an object of the same members), as a fresh
 * "train.steps 2 -> 4, optim.decay_steps 2 -> 4", or NULL when none changed or the
 * checkpoint does not say. */
char *ckpt_changed_settings(const char *step_dir, long steps, const char *optim_json);

/* Read checkpoint.json of a step directory: the model config and the state. */
int ckpt_read_meta(const char *path, struct model_config *c, struct ckpt_state *st);
/* Load the parameters (and moments when m, v are not NULL) of a step directory into slabs
 * laid out by l. A checkpoint of weights only with no AdamW update (sluice import hf) gives
 * zero moments. Every tensor must be present with its shape; errors name the file. A
 * sharded (GPU) checkpoint gives the fp32 master weights from its shards. */
int ckpt_load(const char *path, const struct model_layout *l, float *params, float *m, float *v);

/* 1 when the step directory holds optimizer shards (written by the GPU trainer). */
int ckpt_is_sharded(const char *path);

enum ckpt_part { CKPT_PARAMS, CKPT_EXP_AVG, CKPT_EXP_AVG_SQ };
/* Read one part over nr ranges of the flat index space into dst[i] (r[i].n floats each; the
 * master/m/v pointers of r are ignored), from either kind of checkpoint: the shards
 * (masters for CKPT_PARAMS) or the per-tensor files. Alignment gaps read as 0. Any number of
 * ranks can read what any number wrote. */
int ckpt_read_ranges(const char *path, const struct model_layout *l, enum ckpt_part part,
                     const struct ckpt_range *r, size_t nr, float *const *dst);

/* Remove all but the newest keep step-* directories (keep <= 0: keep all). */
int ckpt_prune(const char *dir, int keep);

/* Write a Hugging Face transformers directory (config.json, generation_config.json,
 * model.safetensors) for the checkpoint at path: GPT2LMHeadModel for learned positions +
 * LayerNorm + GELU + biases, LlamaForCausalLM for RoPE + RMSNorm + SwiGLU.
 * SL_ERR_UNSUPPORTED for other mixes. bos_id, eos_id: the tokenizer's special ids (written
 * as null when negative or outside the vocabulary). Tokenizer files are the caller's. */
int ckpt_export_hf(const char *path, const char *out_dir, long bos_id, long eos_id,
                   const char **arch);

#endif
