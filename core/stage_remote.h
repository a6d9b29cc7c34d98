/* A stage whose --out is an S3 prefix (s3://BUCKET/PREFIX): the store's side of
 * core/stage.h, reached from sl_stage_begin, sl_stage_done, sl_stage_record_files,
 * sl_stage_finish and sl_stage_release when cfg.out_dir is an s3:// URL.
 *
 * The stage runs as on disk in a local mirror of the output, the spool
 * ($TMPDIR/sluice-out-HASH, HASH from the URL): shards are written there under temporary
 * names and renamed as always; when a unit is recorded, each of its files is uploaded
 * (one PUT up to SL_STAGE_PART bytes, else a multipart upload of parts of that size,
 * aborted on failure) with its XXH3 in the object's metadata (x-amz-meta-xxh3), then its
 * record (PREFIX/.sluice/<shard>.json); the local file is then replaced by a sparse file
 * of its size (no blocks: the spool holds records, not data). When the stage finishes,
 * the files it wrote beside its shards by itself (dedup's duplicates.jsonl, ...: the
 * spool's top-level files but part-*), then the manifest, last; the spool is removed.
 *
 * Resume: the plan is PREFIX/.sluice/plan.json; a unit counts as done when its record
 * exists and each of its objects exists with the recorded size and XXH3 (a HEAD).
 *
 * The lock: PREFIX/.sluice/lock, created with "If-None-Match: *" (a conditional write: the
 * store refuses, 412, when it exists), holding the run's host, pid, start and command;
 * deleted when the run ends. A second run is refused while it exists, naming the holder;
 * a lock left by a run of this host whose process is gone is taken over. What it
 * guarantees: two runs never write one prefix at once, on stores that honour conditional
 * writes (AWS S3 since 2024, MinIO, moto); on a store that ignores If-None-Match it
 * keeps nothing apart, and a lock left by a dead run of another host stays until it is
 * deleted by hand (the message says how). --wait does not apply to it.
 */
#ifndef SL_STAGE_REMOTE_H
#define SL_STAGE_REMOTE_H

#include <stddef.h>

struct sl_stage;

/* Uploads up to this size go in one PUT; larger files in parts of this size (S3 wants
 * parts of 5 MiB at least, and at most 10,000 of them: the part grows for files over
 * 80 GiB). SLUICE_S3_PART asks smaller parts, down to 5 MiB, for the tests. */
#define SL_STAGE_PART (8u << 20)

/* Collective. Take the store's lock (rank 0), point st->cfg.out_dir and st->meta_dir at
 * the spool, cleared, holding the store's plan when there is one. */
int sl_stage_remote_begin(struct sl_stage *st);
/* Rank 0, after the plan was checked in the spool: upload it (a new run). */
int sl_stage_remote_prepared(struct sl_stage *st);
/* sl_stage_done on the store. */
int sl_stage_remote_done(struct sl_stage *st, const char *name);
/* Upload unit name's files and then its record (the JSON just written to the spool). */
int sl_stage_remote_record(struct sl_stage *st, const char *name, const char *rec, size_t n);
/* Rank 0, before the manifest: the records of units other hosts wrote, into the spool. */
int sl_stage_remote_gather(struct sl_stage *st, char *const *names, size_t n);
/* Rank 0, after the manifest was written to the spool: upload it. */
int sl_stage_remote_finish(struct sl_stage *st);
/* Every rank: release the lock (rank 0), remove the spool when the stage finished. */
void sl_stage_remote_release(struct sl_stage *st);

#endif
