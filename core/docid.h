/* Document ids for merged corpora (NeMo Curator's AddId): a prefix before every id, or new
 * ids from the output position, so that corpora whose ids repeat ("part-00000:12" in two
 * directories) can be deduplicated together. */
#ifndef SL_DOCID_H
#define SL_DOCID_H

#include <stdint.h>

struct sl_doc;

struct sl_docid_opts {
    const char *prefix; /* non-NULL: the id becomes "PREFIX:" + id */
    int reassign;       /* the id becomes "<shard stem>:<index>" (before the prefix) */
};

/* Whether the options change anything. */
int sl_docid_active(const struct sl_docid_opts *o);

/* Set the "id" member of doc. shard is the output shard's file name
 * ("part-00003.jsonl.zst"), index the document's 0-based position in it; a document
 * without an id (or with reassign) gets "part-00003:index". 0 or an error. */
int sl_docid_apply(const struct sl_docid_opts *o, struct sl_doc *doc, const char *shard,
                   uint64_t index);

#endif
