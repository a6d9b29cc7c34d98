/* Blending datasets by weights with Megatron's greedy rule (helpers.cpp
 * build_blending_indices): sample s comes from the dataset whose weight * max(s, 1) minus
 * the samples it already gave is largest (the lowest index wins ties). No randomness. */
#ifndef SL_DATASET_BLEND_H
#define SL_DATASET_BLEND_H

#include <stddef.h>
#include <stdint.h>

/* Fill dataset_index[size] and dataset_sample_index[size] for n datasets of weights w
 * (normalised). */
void blend_build(const double *w, int n, size_t size, int16_t *dataset_index,
                 int64_t *dataset_sample_index);
/* Samples to request from a component of (normalised) weight w for a blend of `size`
 * samples: ceil(ceil(size * w) * (1 + surplus)), surplus being Megatron's
 * mid_level_dataset_surplus (0.005 by default). */
uint64_t blend_component_size(uint64_t size, double w, double surplus);

/* Megatron's BlendedDataset cache: DIR/NAME-dataset_index.npy (int16) and
 * DIR/NAME-dataset_sample_index.npy (int64), `size` entries each, written atomically /
 * read back (fresh arrays the caller frees; SL_ERR_CORRUPT when they are not `size`
 * entries of those types). */
int blend_save(const char *dir, const char *name, uint64_t size, const int16_t *dataset_index,
               const int64_t *dataset_sample_index);
int blend_load(const char *dir, const char *name, uint64_t size, int16_t **dataset_index,
               int64_t **dataset_sample_index);

/* Parse Megatron's data-path syntax: "PREFIX", "W1 PREFIX1 W2 PREFIX2 ...", or the
 * unweighted "PREFIX1 PREFIX2 ..." (every weight 0 then, also for one PREFIX: the caller
 * weighs the prefixes by their sizes, as Megatron does). Weights are returned as given
 * (the caller normalises them as Megatron does, dataset/megatron_desc.h); with
 * normalize = 0 they must sum to 1 (within 1e-6).
 * On success *prefixes (strings inside *storage) and *weights are fresh arrays the
 * caller frees (free(*prefixes), free(*weights), free(*storage)). */
int blend_parse_prefix(const char *spec, int normalize, char ***prefixes, double **weights,
                       int *n, char **storage);

#endif
