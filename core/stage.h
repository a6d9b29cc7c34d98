/* struct sl_stage: what every curation stage shares — the output directory and its
 * manifest, resumable shards, counters reduced over ranks, and progress.
 *
 * Layout of an output directory:
 *   part-00000.jsonl.zst ...   the shards (written atomically: under a temporary name of
 *                              the writing process, .part-00000.jsonl.zst.PID-HOST.tmp,
 *                              renamed when complete)
 *   manifest.json              written by rank 0 when the stage completes
 *   .sluice/lock               held by the run that writes here (core/dirlock.h): a second
 *   .sluice/ranks.lock         run into the same directory is refused, naming the holder
 *                              (pid, host, start, command), or with --wait (cfg.wait)
 *                              waits for it; ranks of an earlier run that outlived their
 *                              launcher keep it out too
 *   .sluice/plan.json          the stage, its settings and inputs; a re-run with the same
 *                              plan resumes, a different plan is refused (or --force)
 *   .sluice/<shard>.json       one record per finished shard: its counts, size and hash; a
 *                              shard is done when its record exists and its file is still
 *                              whole, so a resumed run skips it and still reports full
 *                              counts
 * Only the run holding the lock writes in the directory; it removes the temporaries of
 * earlier runs (hidden *.tmp in OUT, OUT/.sluice and OUT's first level of folders, such as
 * filter's lang=xx/) before its first write: with the lock held, none can be in use.
 *
 * Inputs: a stage reads each input file up to the size its plan lists (what is appended
 * to an input during the run is not read; an input that became shorter is an error):
 * sl_input_source() and its readers (core/inputs.h) enforce it. A stage that reads its
 * inputs more than once says so (cfg.rereads_inputs): its inputs must then be regular
 * files, and a FIFO or device is refused with a message before anything is read.
 *
 * Per-file stages use sl_stage_run_files() below, which owns this loop (stages of JSONL
 * documents, sl_stage_run_docs in core/stage_docs.h, on top of it). Usage (every
 * rank, for stages whose units are not input files):
 *   sl_stage_begin(&st, &cfg)            inputs checked, the directory locked, mkdir,
 *                                        plan check, stale temporaries removed
 *   for each unit this rank owns:
 *       if (sl_stage_done(&st, name)) continue;
 *       ... write the shard, count into a struct sl_counters ...
 *       sl_stage_record(&st, name, &counters)
 *   sl_stage_finish(&st, names, n)        barrier; rank 0 sums the records, writes manifest
 *   sl_stage_release(&st)                 the lock is released (every rank)
 */
#ifndef SL_STAGE_H
#define SL_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/counters.h"
#include "core/inputs.h"
#include "core/manifest.h" /* sl_version */

struct sl_world;
struct sl_dirlock;
struct sl_stage_remote;
struct sl_writer;
struct sl_pq_write_opts;

struct sl_stage_cfg {
    const char *stage; /* "reshard" */
    const char *out_dir;
    int argc; /* the command line, for the manifest */
    const char **argv;
    const struct sl_inputs *inputs;
    const char *settings_json; /* the settings that define the output, as a JSON object */
    int force;                 /* discard earlier outputs with another plan */
    int wait;                  /* another run holds the directory: wait for it (--wait) */
    /* the stage reads each input more than once (reshard, dedup): only regular files */
    int rereads_inputs;
    /* records keep each output's size, not its hash: outputs that are checked by their own
     * checksums and can be many terabytes, which hashing again on every resume would read
     * whole (download) */
    int size_only_records;
};

struct sl_stage {
    struct sl_stage_cfg cfg;
    struct sl_world *world;
    char *meta_dir; /* OUT/.sluice */
    double t0;
    char started[32];
    int resumed;             /* the plan matched an earlier run */
    struct sl_dirlock *lock; /* the directory's lock (NULL where the file system has none) */
    /* --out s3://BUCKET/PREFIX: the store's side (core/stage_remote.h); out_dir is then
     * the local spool */
    struct sl_stage_remote *remote;
};

/* Collective. Checks the inputs (sl_stage_check_inputs), locks the output directory
 * (creating it), writes or checks the plan, removes stale temporary files. Fails with a
 * message when an input is not readable as the stage reads it, another run holds the
 * directory (SL_ERR_BUSY, naming it; with cfg.wait it waits instead, saying once for
 * whom), the directory is not writable, or it holds another plan's outputs (hint: --force
 * or another --out). On a file system without locks it warns and goes on. */
int sl_stage_begin(struct sl_stage *st, struct sl_world *w, const struct sl_stage_cfg *cfg);

/* What sl_stage_begin checks of cfg's inputs before anything is read: with
 * rereads_inputs, that each is a regular file (SL_ERR_UNSUPPORTED naming the first FIFO,
 * device or socket, and the stage). A stage that reads its inputs before it begins
 * (reshard measures them) calls it first. Not collective: every rank sees the same list. */
int sl_stage_check_inputs(const struct sl_stage_cfg *cfg);

/* Collective. Lock `dir` as sl_stage_begin does (core/dirlock.h): the holder described by
 * "sluice ARGV...", waiting when `wait` (saying once, on rank 0, for whom), refused
 * otherwise (SL_ERR_BUSY with the holder). On a file system without locks rank 0 warns
 * and *out is NULL with 0. For commands that hold a directory longer than a stage does
 * (tokenize's parts folder until the outputs are written, `sluice run`'s directories);
 * sl_stage_begin inside them then shares the hold. Release with sl_dirlock_release. */
int sl_stage_lock(struct sl_world *w, const char *dir, int wait, int argc, const char **argv,
                  struct sl_dirlock **out);

/* "OUT/part-00007.jsonl.zst" for index 7 (caller frees). */
char *sl_stage_shard_path(const struct sl_stage *st, size_t index, const char *ext);
/* Base name of the same. */
char *sl_stage_shard_name(size_t index, const char *ext);

/* True when unit `name` (an output file name relative to OUT) finished in an earlier run
 * and its output files are still whole: the size and XXH3 hash its record gives (a file
 * cut or changed since, or missing, makes the unit run again; its new record then counts
 * "resume_redone_units"). */
int sl_stage_done(struct sl_stage *st, const char *name);

/* Record a finished unit with its counts, and the size and hash of its file OUT/name
 * (when there is one). Counter names the manifest knows: documents_in, documents_out,
 * bytes_in, bytes_out (compressed output bytes), uncompressed_bytes_out; anything else
 * goes under "counts". */
int sl_stage_record(struct sl_stage *st, const char *name, const struct sl_counters *c);

/* A unit whose outputs are other files than OUT/name (filter --split-by-language:
 * "lang=en/part-00003.jsonl.zst"): the manifest lists these files (paths relative to OUT,
 * with their document counts) in place of the unit's name; none when nfiles is 0. */
struct sl_stage_file {
    const char *path;
    uint64_t documents;
};
int sl_stage_record_files(struct sl_stage *st, const char *name, const struct sl_counters *c,
                          const struct sl_stage_file *files, size_t nfiles);

/* Commit an output shard written through *w (sl_writer_commit: under its final name now;
 * *w is NULL after, also on failure), add its bytes_out (the file's size) and
 * uncompressed_bytes_out to c, and record unit `name` (OUT/name) with c. On failure
 * nothing is under the final name and there is no record. */
int sl_stage_commit_shard(struct sl_stage *st, const char *name, struct sl_writer **w,
                          struct sl_counters *c);
/* The same for one of a unit's files (`path`, as opened), without the record: the unit
 * lists its files with sl_stage_record_files (filter's lang=xx/ shards). */
int sl_stage_commit_file(struct sl_writer **w, const char *path, struct sl_counters *c);

/* Collective. Rank 0 sums the records of the given units (in order; these are the
 * outputs) plus `extra` counters (may be NULL; already reduced by the caller), and writes
 * manifest.json. Fails if a unit has no record. `totals` (may be NULL) receives the sums
 * on rank 0. */
int sl_stage_finish(struct sl_stage *st, char *const *names, size_t n,
                    const struct sl_counters *extra, struct sl_counters *totals);

/* Every rank: releases the lock and what begin allocated. */
void sl_stage_release(struct sl_stage *st);

/* The per-file stage loop (extract, tokenize's parts; clean, filter, decontaminate and
 * dedup's output through sl_stage_run_docs): one output shard per unit of input (one
 * file, or a run of consecutive files), so the outputs are the same for any number of
 * ranks. sl_stage_run_files() does, on every rank:
 *   sl_stage_begin; units owned by size across ranks (sl_assign_by_size); for each owned
 *   unit not complete from an earlier run: open the shard's writer (OUT/part-NNNNN<ext>,
 *   atomic), call process(), commit it (abort on failure), add bytes_out and
 *   uncompressed_bytes_out, record the unit; progress over the owned bytes; a failure
 *   on any rank stops every rank; sl_stage_finish (the manifest).
 * A stage supplies only process(): read the unit's inputs, write documents to u->w,
 * count into u->c. A stage of JSONL documents supplies less: what to do with one
 * document (sl_stage_run_docs, core/stage_docs.h). */
struct sl_stage_unit {
    size_t index;                  /* the unit's number: its shard is part-<index> */
    const struct sl_input *inputs; /* the unit's input files (ninputs of them, in order) */
    size_t ninputs;
    const char *name;      /* the shard's name, "part-00007.jsonl.zst" */
    const char *path;      /* OUT/name */
    struct sl_writer *w;   /* the shard, open (NULL: no_writer, or a unit read again) */
    struct sl_counters *c; /* the unit's counts; documents_in and documents_out present */
    /* a unit whose outputs are other files (no_writer): process() sets them, and adds
     * bytes_out and uncompressed_bytes_out itself (sl_stage_commit_file); see
     * sl_stage_record_files */
    const struct sl_stage_file *files;
    size_t nfiles;
    void *priv; /* the runner's */
};

struct sl_stage_files {
    struct sl_stage_cfg stage; /* stage name, --out, command line, inputs, settings, --force */
    const char *label;         /* progress label (default: the stage name) */
    const char *ext;           /* shard extension (default ".jsonl.zst", or ".parquet") */
    int level;                 /* zstd level of the shards (0: default) */
    /* the shards as Parquet (core/parquet_write.h: sl_pq_out_opts); NULL: JSONL, zstd */
    const struct sl_pq_write_opts *parquet;
    int no_writer; /* process() writes its own files (u->files) */
    /* units of consecutive inputs: unit k is inputs first[k] .. first[k+1]-1 (nunits+1
     * entries); NULL: one unit per input file */
    const size_t *first;
    size_t nunits;
    /* process one unit: 0, or <0 with a message (the shard is then not kept) */
    int (*process)(void *ctx, struct sl_stage_unit *u);
    /* optional: a unit is complete (now, or in an earlier run) */
    void (*done)(void *ctx, const struct sl_stage_unit *u);
    void *ctx;
    /* a stage the caller has begun and finishes itself (dedup writes its shards after
     * building its index): the runner writes and records the units only, and `stage`
     * gives just their inputs and the stage's name; NULL: the runner begins and finishes */
    struct sl_stage *begun;
    /* process() is called for units complete from an earlier run too, with u->w NULL; of
     * these nothing is committed or recorded (dedup reads them for duplicates.jsonl) */
    int read_done;
};

struct sl_stage_result {
    struct sl_counters totals; /* rank 0: the sums the manifest gives */
    int resumed;               /* an earlier run's outputs were kept */
    int peer_failed; /* the error is another rank's (which reported it), not this rank's */
};

/* Collective. 0 with r filled (release with sl_stage_result_release), or <0 with a
 * message: the stage could not begin, a unit failed on this rank (its message), another
 * rank failed (SL_ERR_PEER, r->peer_failed), or the manifest could not be written. */
int sl_stage_run_files(struct sl_world *w, const struct sl_stage_files *job,
                       struct sl_stage_result *r);
void sl_stage_result_release(struct sl_stage_result *r);

/* Progress inside a unit: `bytes` of the unit's input read and `docs` documents so far. */
void sl_stage_unit_progress(struct sl_stage_unit *u, uint64_t bytes, uint64_t docs);

#endif
