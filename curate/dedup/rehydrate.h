/* Rehydration weights: how many times a document kept by fuzzy dedup is written, as a
 * function of the size of its duplicate cluster (the number of documents in it, itself
 * included), as FineWeb-2 upsamples its deduplicated data.
 *
 * A table is a list of steps "SIZE:WEIGHT,...": a document whose cluster has n members is
 * written the WEIGHT of the largest SIZE <= n (sizes below the smallest SIZE: once). The
 * default is FineWeb-2's ("1:1,2:2,3:3,5:5,100:8,1000:1": sizes 2 and 3 n times, 4 three
 * times, 5..99 five times, 100..999 eight times, 1000 and more once; README.md of
 * github.com/huggingface/fineweb-2, section "Deduplication").
 */
#ifndef SL_DEDUP_REHYDRATE_H
#define SL_DEDUP_REHYDRATE_H

#include <stddef.h>
#include <stdint.h>

/* steps a table may hold: FineWeb-2's has 6; a hand-tuned table per size fits in 64 */
#define DD_REHYDRATE_MAX 64
/* a weight above this is a typo, not an upsampling (FineWeb-2's largest is 8) */
#define DD_REHYDRATE_MAX_WEIGHT 1000

#define DD_REHYDRATE_FINEWEB2 "1:1,2:2,3:3,5:5,100:8,1000:1"

struct dd_rehydrate {
    size_t n;
    uint64_t size[DD_REHYDRATE_MAX]; /* ascending */
    uint64_t weight[DD_REHYDRATE_MAX];
};

/* Parse spec (the table, or "@PATH" or a path: a file holding it, steps separated by commas,
 * spaces or newlines; '#' starts a comment). 0 or SL_ERR_USAGE with a message naming the
 * step. */
int dd_rehydrate_parse(struct dd_rehydrate *t, const char *spec);

/* The table as "SIZE:WEIGHT,..." into out (n bytes), for the settings. */
void dd_rehydrate_name(const struct dd_rehydrate *t, char *out, size_t n);

/* Times a document of a cluster of `size` members is written (>= 1). */
uint64_t dd_rehydrate_weight(const struct dd_rehydrate *t, uint64_t size);

#endif
