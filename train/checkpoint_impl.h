/* What the checkpoint writer (train/checkpoint.c) and its readers (checkpoint_read.c,
 * hf_export.c) share of the on-disk format; not part of the API (train/checkpoint.h). */
#ifndef SL_TRAIN_CHECKPOINT_IMPL_H
#define SL_TRAIN_CHECKPOINT_IMPL_H

#define CKPT_FORMAT  "sluice-checkpoint"
#define CKPT_VERSION 1

/* The tensors of a sharded optimizer file are named PART@FIRST, PART one of these by
 * enum ckpt_part: the fp32 master weights and the two AdamW moments. */
extern const char *const ckpt_part_names[3];

#endif
