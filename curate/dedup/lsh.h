/* LSH band records and the candidate pairs they give.
 *
 * A document with global id `gid` (input order; see corpus.h) has one record per band:
 * (band, key = hash of the band's rows). Records with the same (band, key) form a bucket.
 * Within a bucket whose members in gid order are m1 < m2 < ... < mk, the candidate
 * pairs are (mi, mj) for i < j and i <= anchors: every member is paired with the first
 * `anchors` members before it. anchors = 1 gives the star around the first member (enough
 * for connected components); a large value gives every pair in the bucket. Both backends
 * (memory, Redis) produce exactly this set, so their answers agree.
 */
#ifndef SL_DEDUP_LSH_H
#define SL_DEDUP_LSH_H

#include <stddef.h>
#include <stdint.h>

struct lsh_rec {
    uint64_t key;
    uint64_t gid;
    uint32_t band;
    uint32_t pad; /* 0 */
};

/* A candidate (or verified) pair, u < v. */
struct dd_edge {
    uint64_t u, v;
};

/* A pair with its verified Jaccard similarity (negative: not verified). */
struct dd_pair {
    uint64_t u, v;
    double jaccard;
};

/* Sort by (band, key, gid). */
void lsh_sort(struct lsh_rec *r, size_t n);

/* Owner rank of a bucket (same for every record of it). */
int lsh_owner(uint32_t band, uint64_t key, int nranks);

/* Append the pairs of the sorted records r[0..n) to *e (grown with realloc; *ne, *cap
 * updated). Only pairs whose larger member is >= min_new are emitted (members below it
 * come from an earlier corpus whose own pairs are settled). Duplicate records are
 * ignored. Returns the number of pairs added. */
size_t lsh_pairs(const struct lsh_rec *r, size_t n, unsigned anchors, uint64_t min_new,
                 struct dd_edge **e, size_t *ne, size_t *cap);

/* Sort pairs by (u, v) and drop repeats. Returns the new count. */
size_t dd_edges_sort_unique(struct dd_edge *e, size_t n);

#endif
