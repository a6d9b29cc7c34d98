/* The CPU reference of the FP8 linear layers (train.fp8): the QKV, attention-out, MLP-up and
 * MLP-down products of every layer, forward and backward, with their inputs quantised
 * (train/fp8.h) and the product taken in fp32 over the quantised values, then scaled back,
 * as cuBLASLt's FP8 matmul defines it:
 *
 *   forward   y  = (qx . qW^T) / (sx sw) + b      qx = e4m3(x sx), qW = e4m3(W sw)
 *   backward  dx = (qg . qW) / (sg sw)            qg = e5m2(dy sg)
 *             dW += (qg^T . qx) / (sg sx),  db += sum of dy (unquantised)
 *
 * The backward uses the forward's quantised x and W (the same scales). One struct cpu_fp8
 * serves every model of a rank (they run one at a time): its scales, shared, and scratch for
 * the quantised operands.
 */
#ifndef SL_TRAIN_CPU_FP8_H
#define SL_TRAIN_CPU_FP8_H

#include "train/fp8.h"
#include "train/model.h"

struct sl_world;
struct train_opts;
struct parallel_config;

/* The four products of a layer, in the order of the scales (slot = layer * 4 + which). */
enum cpu_fp8_gemm { FP8_QKV, FP8_ATTN_PROJ, FP8_FC, FP8_MLP_PROJ };

struct cpu_fp8;

/* For c's layers and micro-batches of up to N token rows; recipe an enum fp8_recipe.
 * 0 or SL_ERR_NOMEM. */
int cpu_fp8_new(struct cpu_fp8 **out, const struct model_config *c, int N, int recipe, long history,
                long margin);
/* The run's (*out NULL with train.fp8=none), for micro-batches of o's shape; an FP8 run with
 * tensor or pipeline parallel is refused (SL_ERR_CONFIG). 0 or an error. */
int cpu_fp8_for_run(struct cpu_fp8 **out, const struct train_opts *o,
                    const struct parallel_config *par);
void cpu_fp8_free(struct cpu_fp8 *f);
/* Forward passes from now on record no amax (1: an evaluation) or do again (0). */
void cpu_fp8_freeze(struct cpu_fp8 *f, int frozen);

/* y[N,OC] = x[N,IC] . W[OC,IC]^T + b in FP8, for product `slot`. */
void cpu_fp8_linear_fwd(struct cpu_fp8 *f, int slot, float *y, const float *x, const float *W,
                        const float *b, int N, int IC, int OC);
/* Its backward: dx = dy . W (overwritten), dW += dy^T . x, db += sum dy (db may be NULL). */
void cpu_fp8_linear_bwd(struct cpu_fp8 *f, int slot, float *dx, float *dW, float *db,
                        const float *dy, const float *x, const float *W, int N, int IC, int OC);

/* The end of an optimizer step: delayed scaling's amaxes reduced (maximum) over dp (NULL:
 * none) and the new scales. 0 or the collective's error. */
int cpu_fp8_step(struct cpu_fp8 *f, const struct sl_world *dp);

#endif
