/* sluice reshard: its options, the stage's plan and manifest, and what the run reports; the
 * work is the engine's (curate/reshard/reshard.h: any mix of JSONL inputs cut into
 * part-NNNNN.jsonl.zst shards of balanced size, the same for any number of ranks). */
#include "curate/commands.h"
#include "curate/reshard/reshard.h"

#include "core/alloc.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/progress.h"
#include "core/remote.h"
#include "core/stage.h"
#include "core/world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_reshard_usage[] = {
    "sluice reshard --out DIR [--shards N | --shard-size SIZE] [options] IN...",
    "",
    "Rewrite JSONL inputs (.jsonl, .jsonl.zst, .jsonl.gz, .json.gz, .jsonl.bz2) or Parquet",
    "files (.parquet, one document a row; files or directories) as part-NNNNN.jsonl.zst",
    "shards of balanced size, keeping the input order.",
    "Documents without an id get \"<input path>:<line>\". Lines that are not JSON objects",
    "with a string text are reported and skipped; a damaged compressed file stops the run",
    "unless --skip-corrupt is given. The output is the same for any number of MPI ranks.",
    NULL,
};

struct opts {
    const char *out, *s3_endpoint, *cache_dir;
    uint64_t shards;
    uint64_t shard_size;
    const char *text_key;
    uint64_t max_line;
    long level;
    int force, wait, repair_utf8, skip_corrupt;
    struct sl_docid_opts ids; /* --id-prefix, --reassign-ids */
    const char *out_format;   /* --out-format */
    uint64_t row_group_size;
    uint64_t nshards; /* the shards written (for the settings) */
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT) and the pipeline's reshard keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_reshard_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_UINT64('n', "shards", shards, "N", "number of shards"),
    SL_SETTING(SL_OPT_U64, "shards", nshards),
    SL_OPT_SIZE('s', "shard-size", shard_size, "SIZE",
                "target uncompressed bytes per shard (default 256M)", .flags = SL_OPTF_OUTPUT),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_MAX_LINE(max_line),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_FLAG_(0, "skip-corrupt", skip_corrupt,
                 "keep the readable part of damaged compressed files and go on",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOCIDS(ids),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_S3_ENDPOINT(s3_endpoint),
    SL_OPT_CACHE_DIR(cache_dir),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The number of shards (reshard_plan), and rank 0 says so when the input has fewer lines
 * than the shards asked for. */
static uint64_t plan(const struct sl_world *w, const struct reshard_cfg *cfg,
                     const struct reshard_measures *m)
{
    uint64_t asked, nshards = reshard_plan(cfg, m, &asked);
    if (nshards < asked && w->rank == 0 && m->nlines)
        sl_info("reshard: %llu shards asked for, the input has %llu lines: writing at most %llu",
                (unsigned long long)asked, (unsigned long long)m->nlines,
                (unsigned long long)m->nlines);
    return nshards;
}

/* The summary lines of rank 0, from the manifest's totals. */
static void report(const struct opts *o, const struct sl_stage *st, const struct sl_counters *t,
                   size_t nfiles, uint64_t nshards)
{
    char a[32], b[32];
    sl_info("reshard: %llu documents (%s) from %zu files into %llu shards (%s) in '%s'%s",
            (unsigned long long)sl_counters_get(t, "documents_out"),
            sl_human_bytes((double)sl_counters_get(t, "bytes_in"), a, sizeof(a)), nfiles,
            (unsigned long long)nshards,
            sl_human_bytes((double)sl_counters_get(t, "bytes_out"), b, sizeof(b)), o->out,
            st->resumed ? " (resumed)" : "");
    uint64_t skipped = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!strncmp(t->names[i], "skipped_", 8))
            skipped += t->values[i];
    if (skipped)
        sl_warn("%llu lines skipped (counts by reason in '%s/manifest.json')",
                (unsigned long long)skipped, o->out);
    if (!nshards)
        sl_warn("no documents in the input: no shards written");
}

/* The manifest: every shard, with pass 1's damaged files and their dropped lines added to
 * the totals; then the summary. 0, or an error. */
static int finish(struct sl_stage *st, const struct sl_world *w, const struct opts *o,
                  const struct sl_inputs *in, const struct reshard_measures *m, uint64_t nshards,
                  const char *ext)
{
    char **names = sl_xcalloc(nshards ? nshards : 1, sizeof(char *));
    for (uint64_t k = 0; k < nshards; k++)
        names[k] = sl_stage_shard_name(k, ext);
    struct sl_counters extra, totals;
    sl_counters_init(&extra);
    sl_counters_init(&totals);
    if (m->ncorrupt)
        sl_counters_add(&extra, "corrupt_files", m->ncorrupt);
    if (m->ndropped) {
        /* lines of damaged zstd frames: read, not kept */
        sl_counters_add(&extra, "skipped_corrupt", m->ndropped);
        sl_counters_add(&extra, "documents_in", m->ndropped);
    }
    int rc = sl_stage_finish(st, names, nshards, &extra, &totals);
    if (!rc && w->rank == 0)
        report(o, st, &totals, in->n, nshards);
    sl_counters_release(&extra);
    sl_counters_release(&totals);
    for (uint64_t k = 0; k < nshards; k++)
        free(names[k]);
    free(names);
    return rc;
}

/* The stage: reshard reads each input twice (measured, then cut into shards). */
static struct sl_stage_cfg stage_cfg(const struct opts *o, const struct sl_inputs *in, int argc,
                                     const char **argv, const struct sl_buf *settings)
{
    struct sl_stage_cfg cfg = { .stage = "reshard",
                                .out_dir = o->out,
                                .argc = argc,
                                .argv = argv,
                                .inputs = in,
                                .settings_json = settings->data,
                                .force = o->force,
                                .wait = o->wait,
                                .rereads_inputs = 1 };
    return cfg;
}

/* The stage directory (plan, resume, --force) for nshards shards of the inputs. */
static int begin(struct sl_stage *st, struct sl_world *w, struct opts *o,
                 const struct sl_inputs *in, int argc, const char **argv, struct sl_buf *settings)
{
    sl_options_settings_json(cmd_reshard_options, o, settings);
    struct sl_stage_cfg cfg = stage_cfg(o, in, argc, argv, settings);
    return sl_stage_begin(st, w, &cfg);
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    struct opts so = *(const struct opts *)opts, *o = &so; /* with the shards planned */
    struct sl_world *w = sl_world_get();
    struct sl_inputs in;
    if (o->s3_endpoint)
        sl_remote_set_s3_endpoint(o->s3_endpoint);
    sl_remote_set_cache_dir(o->cache_dir);
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, sl_jsonl_exts);
    if (rc)
        return rc;
    struct reshard_measures m;
    memset(&m, 0, sizeof(m));
    struct sl_buf settings = SL_BUF_INIT;
    struct sl_stage st;
    /* measuring is the first reading: the inputs must allow the second before it */
    struct sl_stage_cfg cfg = stage_cfg(o, &in, argc, argv, &settings);
    rc = sl_stage_check_inputs(&cfg);
    if (rc)
        goto out;
    struct reshard_cfg rc_cfg = { .shards = o->shards,
                                  .shard_size = o->shard_size,
                                  .text_key = o->text_key,
                                  .max_line = o->max_line,
                                  .level = o->level,
                                  .repair_utf8 = o->repair_utf8,
                                  .skip_corrupt = o->skip_corrupt,
                                  .ids = o->ids };
    struct sl_pq_write_opts pq = { .level = (int)o->level,
                                   .row_group_rows = o->row_group_size,
                                   .text_key = o->text_key };
    if (!strcmp(o->out_format, "parquet"))
        rc_cfg.parquet = &pq;
    rc = reshard_measure(w, &in, &rc_cfg, &m);
    /* --skip-corrupt helps with damaged data, not with a file that cannot be read */
    if (rc == SL_ERR_CORRUPT || rc == SL_ERR_TOOBIG) {
        sl_error("%s\nhint: use --skip-corrupt to keep what can be read and go on", sl_err_msg());
        rc = 1;
    }
    if (rc)
        goto out;
    o->nshards = plan(w, &rc_cfg, &m); /* in the settings */
    rc = begin(&st, w, o, &in, argc, argv, &settings);
    if (rc)
        goto out;
    /* a failed rank makes the dispatcher abort the whole job */
    rc = reshard_write(&st, w, &rc_cfg, &in, &m, o->nshards);
    if (rc) {
        sl_error("%s", sl_err_msg());
        rc = 1;
    }
    sl_warn_limited_summary();
    if (!rc)
        rc = finish(&st, w, o, &in, &m, o->nshards, reshard_shard_ext(&rc_cfg));
    sl_stage_release(&st);
out:
    sl_buf_release(&settings);
    reshard_measures_release(&m);
    sl_inputs_release(&in);
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    if (operands->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (o->shards && o->shard_size)
        return sl_err_set(SL_ERR_USAGE, "--shards and --shard-size cannot be used together");
    if (o->max_line < 16)
        return sl_err_set(SL_ERR_USAGE, "--max-line is too small");
    if (!o->shards && !o->shard_size)
        o->shard_size = 256u << 20; /* the default (the help says so) of --shard-size alone */
    return 0;
}

const struct sl_cmd cmd_reshard =
    SL_CMD(cmd_reshard_usage, cmd_reshard_options, struct opts, check, run);
