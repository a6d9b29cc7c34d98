/* The per-file stage loop (sl_stage_run_files): units given out to ranks by size, each
 * unit's shard opened, processed, committed and recorded, progress, a failure on one rank
 * stopping all, the manifest; and the commit of one shard (sl_stage_commit_shard). */
#include "core/stage.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/parquet_write.h"
#include "core/progress.h"
#include "core/stream.h"
#include "core/world.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int sl_stage_commit_file(struct sl_writer **w, const char *path, struct sl_counters *c)
{
    uint64_t unc = sl_writer_bytes_in(*w);
    int rc = sl_writer_commit(*w);
    *w = NULL;
    if (rc)
        return rc;
    struct stat sb;
    sl_counters_add(c, "bytes_out", stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
    sl_counters_add(c, "uncompressed_bytes_out", unc);
    return 0;
}

int sl_stage_commit_shard(struct sl_stage *st, const char *name, struct sl_writer **w,
                          struct sl_counters *c)
{
    char *path = sl_xasprintf("%s/%s", st->cfg.out_dir, name);
    int rc = sl_stage_commit_file(w, path, c);
    free(path);
    return rc ? rc : sl_stage_record(st, name, c);
}

struct files_run {
    const struct sl_stage_files *job;
    struct sl_stage *st; /* job->begun, or own */
    struct sl_stage own;
    struct sl_progress prog;
    uint64_t done_bytes, done_docs; /* of the units finished so far on this rank */
};

static size_t unit_first(const struct sl_stage_files *job, size_t u)
{
    return job->first ? job->first[u] : u;
}

static size_t unit_count(const struct sl_stage_files *job)
{
    return job->first ? job->nunits : job->stage.inputs->n;
}

void sl_stage_unit_progress(struct sl_stage_unit *u, uint64_t bytes, uint64_t docs)
{
    struct files_run *fr = u->priv;
    if (!fr) /* a unit read outside the runner (sl_stage_docs_read_unit) */
        return;
    sl_progress_update(&fr->prog, fr->done_bytes + bytes, fr->done_docs + docs);
}

/* A full disk needs space, not another try with other options: say so. */
static int disk_full_hint(int rc)
{
    const char *msg = sl_err_msg();
    if (strstr(msg, "hint:") || !strstr(msg, strerror(ENOSPC)))
        return rc;
    char copy[SL_ERR_MSG_MAX];
    snprintf(copy, sizeof(copy), "%s", msg);
    return sl_err_set(rc,
                      "%s\nhint: the output disk is full: free space (or use another --out) and "
                      "run the command again; it goes on from the finished shards",
                      copy);
}

/* Write one unit's shard: open, process, commit, count, record. A unit complete from an
 * earlier run (done; with read_done) is processed without a writer, and nothing of it is
 * committed or recorded. */
static int run_unit(struct files_run *fr, struct sl_stage_unit *u, int done)
{
    const struct sl_stage_files *job = fr->job;
    struct sl_counters c;
    sl_counters_init(&c);
    sl_counters_add(&c, "documents_in", 0);
    sl_counters_add(&c, "documents_out", 0);
    u->c = &c;
    u->w = NULL;
    u->files = NULL;
    u->nfiles = 0;
    struct sl_writer_opts wo = { .codec = SL_CODEC_ZSTD, .level = job->level };
    int rc = job->no_writer || done ? 0
             : job->parquet         ? sl_pq_writer_open(&u->w, u->path, NULL, job->parquet)
                                    : sl_writer_open(&u->w, u->path, &wo);
    char *what =
        sl_xasprintf("%s: processing '%s'%s", job->stage.stage,
                     u->ninputs ? u->inputs[0].path : u->name, u->ninputs > 1 ? " and more" : "");
    sl_oom_context(what); /* named by an out-of-memory stop */
    if (!rc)
        rc = job->process(job->ctx, u);
    sl_oom_context(NULL);
    free(what);
    if (rc || done) {
        sl_writer_abort(u->w);
        u->w = NULL;
    } else if (job->no_writer) {
        rc = sl_stage_record_files(fr->st, u->name, &c, u->files, u->nfiles);
    } else {
        rc = sl_stage_commit_shard(fr->st, u->name, &u->w, &c);
    }
    if (!done)
        fr->done_docs += sl_counters_get(&c, "documents_out");
    u->c = NULL;
    sl_counters_release(&c);
    return rc ? disk_full_hint(rc) : 0;
}

/* This rank's units, in order; stops at the first failure. */
static int run_units(struct files_run *fr, struct sl_world *w, char **names)
{
    const struct sl_stage_files *job = fr->job;
    const struct sl_inputs *in = job->stage.inputs;
    const char *ext = job->ext ? job->ext : job->parquet ? ".parquet" : ".jsonl.zst";
    size_t nu = unit_count(job);
    uint64_t *sizes = sl_xcalloc(nu ? nu : 1, sizeof(uint64_t));
    int *owner = sl_xcalloc(nu ? nu : 1, sizeof(int));
    uint64_t mine = 0;
    for (size_t u = 0; u < nu; u++)
        for (size_t i = unit_first(job, u); i < unit_first(job, u + 1); i++)
            sizes[u] += in->v[i].size;
    sl_assign_by_size(sizes, nu, w->size, owner);
    for (size_t u = 0; u < nu; u++)
        if (owner[u] == w->rank)
            mine += sizes[u];
    sl_progress_start(&fr->prog, job->label ? job->label : job->stage.stage, mine, 1, w->rank == 0);
    int rc = 0;
    for (size_t k = 0; k < nu && !rc; k++) {
        if (owner[k] != w->rank)
            continue;
        char *path = sl_stage_shard_path(fr->st, k, ext);
        size_t first = unit_first(job, k);
        struct sl_stage_unit u = { .index = k,
                                   .inputs = in->v + first,
                                   .ninputs = unit_first(job, k + 1) - first,
                                   .name = names[k],
                                   .path = path,
                                   .priv = fr };
        int done = sl_stage_done(fr->st, u.name);
        if (!done || job->read_done)
            rc = run_unit(fr, &u, done);
        if (!rc && job->done)
            job->done(job->ctx, &u);
        free(path);
        fr->done_bytes += sizes[k];
        sl_progress_update(&fr->prog, fr->done_bytes, fr->done_docs);
    }
    sl_progress_finish(&fr->prog);
    free(sizes);
    free(owner);
    return rc;
}

int sl_stage_run_files(struct sl_world *w, const struct sl_stage_files *job,
                       struct sl_stage_result *r)
{
    memset(r, 0, sizeof(*r));
    sl_counters_init(&r->totals);
    struct files_run fr = { .job = job, .st = job->begun ? job->begun : &fr.own };
    int rc = job->begun ? 0 : sl_stage_begin(fr.st, w, &job->stage);
    if (rc)
        return rc;
    r->resumed = fr.st->resumed;
    const char *ext = job->ext ? job->ext : job->parquet ? ".parquet" : ".jsonl.zst";
    size_t nu = unit_count(job);
    char **names = sl_xcalloc(nu ? nu : 1, sizeof(char *));
    for (size_t u = 0; u < nu; u++)
        names[u] = sl_stage_shard_name(u, ext);

    rc = run_units(&fr, w, names);
    /* a failed unit stops every rank; the failing rank keeps its message */
    char msg[SL_ERR_MSG_MAX] = "";
    if (rc)
        snprintf(msg, sizeof(msg), "%s", sl_err_msg());
    int64_t failed = rc ? 1 : 0;
    int arc = sl_world_allreduce_i64(w, &failed, 1, SL_MAX);
    if (rc) {
        rc = sl_err_set(rc, "%s", msg);
    } else if (arc) {
        rc = arc;
    } else if (failed) {
        r->peer_failed = 1;
        rc = sl_err_set(SL_ERR_PEER, "another rank failed");
    } else if (!job->begun) {
        rc = sl_stage_finish(fr.st, names, nu, NULL, &r->totals);
    }
    for (size_t u = 0; u < nu; u++)
        free(names[u]);
    free(names);
    if (!job->begun)
        sl_stage_release(fr.st);
    return rc;
}

void sl_stage_result_release(struct sl_stage_result *r)
{
    sl_counters_release(&r->totals);
}
