/* What the files of the fuzzy dedup engine (curate/dedup/fuzzy.h) tell each other: each
 * step's function, for fuzzy.c, which runs them in order. Not for callers of the engine. */
#ifndef SL_DEDUP_FUZZY_IMPL_H
#define SL_DEDUP_FUZZY_IMPL_H

#include "curate/dedup/fuzzy.h"

struct sl_doc;
struct sl_world;

/* fuzzy_pairs.c: the shingles of a document, normalised first (f->norm), into sh (its old
 * contents dropped); *whole is set when the text is shorter than one shingle and was hashed
 * whole. Returns the number of shingles (0: no text to compare). nbuf is scratch. */
size_t dd_fuzzy_shingles(const struct dd_fuzzy_params *f, struct sl_doc *d, struct sl_buf *nbuf,
                         struct dd_u64s *sh, int *whole);

/* fuzzy_pairs.c: rc on every rank, this rank's error or `peer` when another rank failed. */
int dd_fuzzy_all_ok(const struct sl_world *w, int rc, const char *peer);
/* fuzzy_pairs.c: the Redis connection and this run's prefix claimed (collective). */
int dd_fuzzy_redis_open(struct dd_fuzzy *z);
/* fuzzy_pairs.c: pass 1 into z->sig (ids into --index-out's file). */
int dd_fuzzy_sign(struct dd_fuzzy *z);
/* fuzzy_pairs.c: the candidate pairs, on the rank of their first document, sorted and
 * unique; counts[0] set. Frees the index's band records. */
int dd_fuzzy_candidates(struct dd_fuzzy *z, struct dd_edge **e, size_t *ne);

/* fuzzy_verify.c: the pairs of e (taken, freed) whose shingle sets have Jaccard >=
 * f->threshold, with it, on the rank of their first document; *checked: pairs checked. */
int dd_fuzzy_verify(struct dd_corpus *c, const struct dd_fuzzy_params *f, struct dd_edge *e,
                    size_t ne, struct dd_pair **out, size_t *nout, uint64_t *checked);

/* fuzzy_index.c: this rank's --index-out files opened (rank 0 creates the directory). */
int dd_fuzzy_index_open(struct dd_fuzzy *z);
/* fuzzy_index.c: rank 0 reads the ids of the index's documents that the fates and pairs
 * name; every rank learns whether that worked (rc: the run's error so far). */
int dd_fuzzy_old_ids(struct dd_fuzzy *z, int rc);
/* fuzzy_index.c: the id of an index document for the reports (dd_apply_opts.old_id). */
int dd_fuzzy_old_id(void *oid, uint64_t gid, struct sl_buf *out);
/* fuzzy_index.c: commit (rc 0) or abort this rank's --index-out files; rank 0 then copies
 * the ids of the earlier generations and writes the meta. */
int dd_fuzzy_index_commit(struct dd_fuzzy *z, int rc);
/* fuzzy_index.c: what the old ids hold. */
void dd_old_ids_release(struct dd_old_ids *o);

#endif
