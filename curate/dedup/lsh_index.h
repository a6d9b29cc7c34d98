/* The saved band index of a fuzzy dedup run (--index-out DIR, read back by --index-in DIR),
 * so that later documents are deduplicated against earlier ones without reading them
 * again. Layout (docs/formats/dedup-index.md):
 *
 *   DIR/meta.json             format, version, the MinHash settings, generation, parts
 *   DIR/bands-RRRRR.sldx.zst  band records (band u32, key u64, gid u64; little endian),
 *                             sorted by (band, key, gid); one file per writing rank
 *   DIR/ids-GGG-RRRRR.sldx.zst  ids of the documents of generation GGG written by rank
 *                             RRRRR: (gid u64, length u32, raw JSON id bytes)
 * Every file starts with an 8-byte magic and a u32 version; files are written atomically.
 */
#ifndef SL_DEDUP_LSH_INDEX_H
#define SL_DEDUP_LSH_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "curate/dedup/lsh.h"

struct sl_writer;

#define DD_INDEX_VERSION 1

/* Streaming writer of one rank's band records. */
struct dd_index_writer {
    struct sl_writer *w;
    uint64_t n;
};

int dd_index_writer_open(struct dd_index_writer *iw, const char *path, const char *magic);
int dd_index_write_recs(struct dd_index_writer *iw, const struct lsh_rec *r, size_t n);
int dd_index_write_id(struct dd_index_writer *iw, uint64_t gid, const char *id, size_t len);
int dd_index_writer_commit(struct dd_index_writer *iw);
void dd_index_writer_abort(struct dd_index_writer *iw);

#define DD_INDEX_MAGIC_BANDS "SLDXBND1"
#define DD_INDEX_MAGIC_IDS "SLDXIDS1"

/* Read band records of a file; keep those for which keep(band, key, ctx) is true (NULL:
 * all). Appends to *r (realloc'd; *n, *cap updated). Errors name the file and offset. */
int dd_index_read_recs(const char *path, int (*keep)(uint32_t band, uint64_t key, void *ctx),
                       void *ctx, struct lsh_rec **r, size_t *n, size_t *cap);

/* Read an ids file; for each record calls fn(gid, id, len, ctx) (fn returns 0 to go on). */
int dd_index_read_ids(const char *path,
                      int (*fn)(uint64_t gid, const char *id, size_t len, void *ctx), void *ctx);

/* meta.json: write (rank 0) and read. `settings` is a JSON object text. */
int dd_index_write_meta(const char *dir, const char *settings, uint64_t generation, int parts,
                        const char *backend, const char *redis_prefix);
/* Reads DIR/meta.json; *settings (caller frees) is the settings object re-serialised,
 * *generation, *parts, *backend ("memory" or "redis") and *redis_prefix (NULL for memory;
 * caller frees both strings) as stored. A missing or foreign file is an error with a hint. */
int dd_index_read_meta(const char *dir, char **settings, uint64_t *generation, int *parts,
                       char **backend, char **redis_prefix);

#endif
