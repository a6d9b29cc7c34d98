/* Exact duplicates over a dedup corpus (curate/dedup/corpus.h), the engine of `sluice dedup
 * exact` (curate/dedup/cmd_dedup_exact.c), which knows nothing of argv or manifests. Each
 * document's value (its text, or the member cfg->key) is normalised (DD_NORM_* flags,
 * curate/dedup/normalize.h) and hashed to 128 bits (XXH3); the hashes are partitioned by
 * value over the ranks, so that equal hashes meet on one rank whatever the number of ranks;
 * each group of equal hashes keeps its first document in input order, or its longest text
 * (the first of equal lengths) with cfg->longest.
 */
#ifndef SL_DEDUP_EXACT_H
#define SL_DEDUP_EXACT_H

#include <stddef.h>
#include <stdint.h>

struct dd_corpus;
struct dd_fate;

struct dd_exact_cfg {
    const char *key; /* the member compared instead of the text (a.b: into objects), or NULL */
    unsigned norm;   /* DD_NORM_* flags applied first */
    int longest;     /* keep a group's longest document, not its first */
};

/* Collective: every document of c hashed (progress "dedup exact: hashing"), equal hashes
 * grouped, and each document of a group of two or more given its fate (the document its
 * group keeps), in *fates on the rank that reads it, sorted by gid (dd_fates_to_owners):
 * what dd_corpus_apply takes. *missing_key: this rank's documents without cfg->key (kept,
 * not compared). 0, or a negative enum sl_err with its message; *fates is then NULL. */
int dd_exact_find(struct dd_corpus *c, const struct dd_exact_cfg *cfg, struct dd_fate **fates,
                  size_t *nf, uint64_t *missing_key);

#endif
