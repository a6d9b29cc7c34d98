/* sluice dedup fuzzy: its options (the --preset applied), the stage's plan and manifest, and
 * what the run reports; the work is the engine's (curate/dedup/fuzzy.h: MinHash signatures
 * and LSH bands per document, candidate pairs from shared buckets, optional verification by
 * the true Jaccard similarity of the shingle sets, connected components across ranks, and
 * the first document of each component kept). */
#include "curate/commands.h"
#include "curate/dedup/fuzzy.h"
#include "curate/dedup/fuzzy_plan.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parquet_write.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"
#include "curate/dedup/corpus.h"
#include "curate/dedup/minhash.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/rehydrate.h"
#include "curate/dedup/shingle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

const char *const cmd_dedup_fuzzy_usage[] = {
    "sluice dedup fuzzy --out DIR [--preset datatrove|nemo] [options] IN...",
    "",
    "Remove near-duplicates. Each text is normalised (--norm), cut into shingles (--ngram",
    "words:N or chars:N; a text shorter than one shingle is hashed whole), and MinHashed",
    "with --bands x --rows permutations of its 64-bit shingle hashes. Documents that share",
    "a band are candidate pairs; --verify keeps only pairs whose true Jaccard similarity",
    "of shingles is at least --threshold. Connected documents form a cluster, of which the",
    "first in input order is kept. Buckets live in memory (shuffled to owner ranks under",
    "mpirun) or in a Redis Cluster (--backend redis); the answer is the same either way",
    "and for any number of ranks. Writes part-NNNNN.jsonl.zst per input file,",
    "duplicates.jsonl, clusters.jsonl (and pairs.jsonl with --pairs) and manifest.json.",
    "Presets: datatrove = words:5, 14x8, --norm all (the default); nemo = chars:24, 20x13,",
    "--norm none. --plan prints, without doing the work, the peak memory per rank and per",
    "Redis master that the run will need (docs/dedup.md, \"Planning memory\").",
    NULL,
};

struct opts {
    const char *out, *preset, *ngram, *norm, *family, *backend, *redis, *redis_prefix;
    const char *index_in, *index_out, *text_key, *id_key, *rehydrate_weights;
    long bands, rows, anchors, level, redis_batch;
    double redis_timeout;
    uint64_t seed, max_line;
    double threshold;
    int verify, pairs, force, wait, repair_utf8, cluster_size, rehydrate;
    int plan;               /* --plan */
    long ranks;             /* --ranks: of the plan (0: this run's) */
    const char *out_format; /* --out-format */
    uint64_t row_group_size;
    /* for the settings: "fuzzy", the MinHash settings (JSON), --index-in's generation */
    const char *mode, *minhash, *rehydrate_table;
    uint64_t gen;
    struct dd_rehydrate rt;              /* --rehydrate's table */
    char rt_name[DD_REHYDRATE_MAX * 48]; /* it as SIZE:WEIGHT,... (two 20-digit numbers) */
    struct dd_fuzzy_params f; /* what the options resolve to (the preset's defaults applied) */
    enum dd_mh_family fam;
};

/* The options' table: the dispatcher's parser and -h, the settings of the plan (rows marked
 * SL_OPTF_OUTPUT; the MinHash options through "minhash") and the pipeline's dedup_fuzzy
 * keys. */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_dedup_fuzzy_options[] = {
    SL_SETTING(SL_OPT_STR, "mode", mode, .def = "fuzzy"),
    SL_OPT_STRING('o', "out", out, "DIR", "output directory (created)", .required = 1),
    SL_OPT_GROUP_("MinHash and LSH"),
    SL_OPT_CHOICE(0, "preset", preset, "datatrove|nemo", "defaults for the four settings below",
                  .def = "datatrove"),
    SL_OPT_STRING(0, "ngram", ngram, "SPEC", "shingles: words:N or chars:N"),
    /* -1: the preset's */
    SL_OPT_INTEGER(0, "bands", bands, "B", "LSH bands", .def = "-1", .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_INTEGER(0, "rows", rows, "R", "rows (permutations) per band", .def = "-1",
                   .flags = SL_OPTF_DEF_UNSAID),
    SL_OPT_STRING(0, "norm", norm, "LIST",
                  "normalise first: lower,punct,space,digits,accents | all | none",
                  .flags = SL_OPTF_LIST),
    SL_OPT_UINT64(0, "seed", seed, "N", "seed of the hash functions", .def = "1"),
    SL_OPT_CHOICE(0, "hash", family, "multiply|multiply32|mersenne",
                  "permutations: (a*h+b) mod 2^64, 32-bit mod 2^32, or mod 2^61-1",
                  .def = "multiply"),
    SL_SETTING(SL_OPT_JSON_, "minhash", minhash),
    SL_OPT_GROUP_("Pairs"),
    SL_OPT_FLAG_(0, "verify", verify,
                 "keep only candidate pairs whose true Jaccard is >= --threshold",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_DOUBLE(0, "threshold", threshold, "J", "Jaccard threshold of --verify", .def = "0.8",
                  .flags = SL_OPTF_OUTPUT),
    /* -1: 1, or 8 with --verify */
    SL_OPT_INTEGER(0, "anchors", anchors, "N",
                   "pair each bucket member with up to N earlier ones (default 1; 8 with --verify)",
                   .def = "-1", .flags = SL_OPTF_OUTPUT | SL_OPTF_DEF_UNSAID),
    SL_OPT_GROUP_("Index"),
    SL_OPT_CHOICE(0, "backend", backend, "memory|redis", "where buckets live", .def = "memory"),
    SL_OPT_STRING(0, "redis", redis, "HOST:PORT,...", "Redis Cluster seed nodes (--backend redis)",
                  .flags = SL_OPTF_LIST),
    SL_OPT_STRING(0, "redis-prefix", redis_prefix, "P",
                  "key prefix in Redis (default sluice:run:<hash of the run>)"),
    SL_OPT_INTEGER(0, "redis-batch", redis_batch, "N", "commands per pipelined batch to one node",
                   .def = "10000"),
    SL_OPT_DOUBLE(0, "redis-timeout", redis_timeout, "SECONDS",
                  "how long to wait for a failed node or a failover", .def = "60"),
    SL_OPT_STRING(0, "index-out", index_out, "DIR", "save the band index for later runs"),
    SL_OPT_STRING(0, "index-in", index_in, "DIR",
                  "also dedup against the documents of this saved index",
                  .flags = SL_OPTF_OUTPUT | SL_OPTF_PATH),
    SL_SETTING(SL_OPT_U64, "index_generation", gen),
    SL_OPT_GROUP_("Cluster sizes and rehydration"),
    SL_OPT_FLAG_(0, "cluster-size", cluster_size,
                 "record each kept document's cluster size in minhash_cluster_size",
                 .flags = SL_OPTF_OUTPUT, .omit = "false"),
    SL_OPT_FLAG_(0, "rehydrate", rehydrate,
                 "write each kept document as many times as FineWeb-2's weights say for "
                 "its cluster size (" DD_REHYDRATE_FINEWEB2 "; implies --cluster-size)",
                 .flags = SL_OPTF_OUTPUT, .omit = "false"),
    SL_OPT_STRING(0, "rehydrate-weights", rehydrate_weights, "SPEC|FILE",
                  "--rehydrate with these weights: SIZE:WEIGHT,... (the weight of the "
                  "largest SIZE <= the cluster's)"),
    SL_SETTING(SL_OPT_STR, "rehydrate_table", rehydrate_table, .omit = "null"),
    SL_OPT_GROUP_("Input and output"),
    SL_OPT_TEXT_KEY(text_key),
    SL_OPT_ID_KEY(id_key),
    SL_OPT_FLAG_(0, "pairs", pairs, "also write the pairs found to OUT/pairs.jsonl",
                 .flags = SL_OPTF_OUTPUT),
    SL_OPT_MAX_LINE(max_line, .omit = SL_OMIT_DEF),
    SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT),
    SL_OPT_OUT_FORMAT(out_format, row_group_size),
    SL_OPT_REPAIR_UTF8(repair_utf8),
    SL_OPT_FORCE(force),
    SL_OPT_WAIT(wait),
    SL_OPT_GROUP_("Planning"),
    SL_OPT_FLAG_(0, "plan", plan,
                 "print the peak memory per rank and per Redis master, and exit without "
                 "doing the work",
                 .flags = SL_OPTF_NO_KEY | SL_OPTF_ALONE),
    SL_OPT_INTEGER(0, "ranks", ranks, "N",
                   "ranks that --plan plans for (default: the ranks it runs on)", .def = "0",
                   .flags = SL_OPTF_NO_KEY | SL_OPTF_DEF_UNSAID),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static void print_stats(double t_lsh, unsigned rounds, uint64_t rss_max_kb, uint64_t rss_mean_kb)
{
    sl_debug("lsh stage %.3f s (slowest rank), %u component rounds", t_lsh, rounds);
    sl_debug("peak memory per rank: max %.1f MB, mean %.1f MB", rss_max_kb / 1024.0,
             rss_mean_kb / 1024.0);
}

static int fail(int rc)
{
    sl_error("%s", sl_err_msg());
    return rc;
}

/* One run: the corpus, the engine, the stage and its manifest's sums. */
struct fuzzy_run {
    const struct opts *o;
    struct sl_world *w;
    struct dd_corpus c;
    struct dd_fuzzy_cfg cfg;
    struct dd_fuzzy z;
    struct sl_buf settings;
    struct sl_stage st;
    struct sl_counters extra, totals;
    int begun; /* the stage began */
    /* what cfg.parquet points to, with --out-format parquet */
    struct sl_pq_write_opts pq;
};

/* The settings that make a run's outputs what they are (for resuming and the plan): the
 * table's, with the values the options resolved to. */
static void fuzzy_settings(struct fuzzy_run *r)
{
    struct opts o = *r->o;
    o.minhash = r->o->f.minhash_json;
    o.anchors = (long)r->o->f.anchors;
    o.gen = r->c.gen;
    o.rehydrate_table = r->o->rehydrate ? r->o->rt_name : NULL;
    sl_options_settings_json(cmd_dedup_fuzzy_options, &o, &r->settings);
}

/* The run's counts into the manifest, and the stage finished. */
static int finish(struct fuzzy_run *r)
{
    int rc = dd_fuzzy_counts(&r->z, &r->extra);
    if (!rc) {
        size_t n = r->c.in.n;
        char **names = sl_xcalloc(n + 1, sizeof(char *));
        for (size_t i = 0; i < n; i++)
            names[i] = sl_stage_shard_name(i, r->cfg.parquet ? ".parquet" : ".jsonl.zst");
        rc = sl_stage_finish(&r->st, names, n, &r->extra, &r->totals);
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    return rc;
}

/* The error, or (rank 0) what the run did; peak memory of the ranks for -v. */
static void report(struct fuzzy_run *r, int rc)
{
    struct sl_world *w = r->w;
    const struct dd_fuzzy *z = &r->z;
    const struct sl_counters *totals = &r->totals;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t rss[2] = { (uint64_t)ru.ru_maxrss, (uint64_t)ru.ru_maxrss };
    double tl[1] = { z->t_lsh };
    if (!rc) {
        sl_world_allreduce_u64(w, rss, 1, SL_MAX);
        sl_world_allreduce_u64(w, rss + 1, 1, SL_SUM);
        sl_world_allreduce_f64(w, tl, 1, SL_MAX);
    }
    if (rc) {
        if (z->redis)
            sl_error("%s\nhint: the outputs in '%s' are resumable: run the same command again "
                     "once the cluster is healthy",
                     sl_err_msg(), r->o->out);
        else
            sl_error("%s", sl_err_msg());
        return;
    }
    if (w->rank != 0)
        return;
    char sn[32];
    char vp[64] = "";
    if (r->o->f.verify)
        snprintf(vp, sizeof(vp), ", %llu verified", (unsigned long long)z->counts[1]);
    sl_info("dedup fuzzy: %llu of %llu documents removed as near-duplicates (%llu clusters; "
            "%llu candidate pairs%s); %llu kept in '%s'%s",
            (unsigned long long)sl_counters_get(totals, "duplicates_removed"),
            (unsigned long long)sl_counters_get(totals, "documents_in"),
            (unsigned long long)z->groups, (unsigned long long)z->counts[0], vp,
            (unsigned long long)sl_counters_get(totals, "documents_out"), r->o->out,
            r->st.resumed ? " (resumed)" : "");
    print_stats(tl[0], z->rounds, rss[0], rss[1] / (uint64_t)w->size);
    uint64_t whole = sl_counters_get(totals, "short_documents_hashed_whole");
    uint64_t empty = sl_counters_get(totals, "empty_documents");
    if (whole)
        sl_info("%llu documents are shorter than one shingle (%s) and were hashed whole",
                (unsigned long long)whole, dd_shingler_name(&r->o->f.sh, sn, sizeof(sn)));
    if (empty)
        sl_warn("%llu documents have no text to compare (empty after normalisation) and "
                "were kept",
                (unsigned long long)empty);
}

/* Open the inputs, read --index-in and begin the stage; on failure print it and return 1. */
static int run_begin(struct fuzzy_run *r, const struct sl_strlist *operands, int argc,
                     const char **argv)
{
    const struct opts *o = r->o;
    int rc = dd_corpus_init(&r->c, r->w, (const char *const *)operands->v, operands->n);
    if (rc)
        return fail(1);
    r->c.text_key = o->text_key;
    r->c.id_key = o->id_key;
    r->c.max_line = o->max_line;
    r->c.repair_utf8 = o->repair_utf8;
    dd_fuzzy_init(&r->z, &r->cfg, &r->c);
    if (o->index_in && dd_fuzzy_read_index(&r->z))
        return fail(1);
    fuzzy_settings(r);
    if (dd_corpus_stage_begin(&r->c, &r->st, r->w, "dedup-fuzzy", o->out, argc, argv,
                              r->settings.data, o->force, o->wait))
        return fail(1);
    r->begun = 1;
    return 0;
}

static int fuzzy(const struct opts *o, const struct dd_fuzzy_params *f,
                 const struct sl_strlist *operands, int argc, const char **argv)
{
    struct fuzzy_run r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.w = sl_world_get();
    r.cfg = (struct dd_fuzzy_cfg){ .f = f,
                                   .backend = o->backend,
                                   .redis = o->redis,
                                   .redis_prefix = o->redis_prefix,
                                   .redis_batch = (unsigned)o->redis_batch,
                                   .redis_timeout = o->redis_timeout,
                                   .index_in = o->index_in,
                                   .index_out = o->index_out,
                                   .pairs = o->pairs,
                                   .level = o->level,
                                   .id_key = o->id_key,
                                   .size_key = o->cluster_size ? "minhash_cluster_size" : NULL,
                                   .rehydrate = o->rehydrate ? &o->rt : NULL,
                                   .sizes = o->cluster_size };
    r.cfg.parquet = sl_pq_out_opts(&r.pq, o->out_format, o->row_group_size, o->level, o->text_key);
    sl_counters_init(&r.extra);
    sl_counters_init(&r.totals);
    int rc = run_begin(&r, operands, argc, argv);
    if (rc)
        goto out;
    dd_fuzzy_connect(&r.z, r.settings.data);
    for (size_t i = 0; i < r.z.warnings.len; i += strlen(r.z.warnings.data + i) + 1)
        sl_warn("%s", r.z.warnings.data + i);
    rc = dd_fuzzy_run(&r.z, &r.st);
    if (!rc)
        rc = finish(&r);
    report(&r, rc);
    rc = rc ? 1 : 0;
out:
    sl_counters_release(&r.extra);
    sl_counters_release(&r.totals);
    dd_fuzzy_release(&r.z);
    if (r.begun)
        sl_stage_release(&r.st);
    sl_buf_release(&r.settings);
    dd_corpus_release(&r.c);
    return rc;
}

static double mib(uint64_t b)
{
    return b / 1048576.0;
}

/* The documents of each input counted and the rank that reads the most under P ranks
 * (files assigned as dd_corpus_init assigns them): in->docs, in->docs_rank. */
static int plan_docs(const struct dd_corpus *c, int P, struct dd_plan_in *in)
{
    size_t n = c->in.n;
    uint64_t *docs = sl_xcalloc(n + 1, sizeof(*docs));
    uint64_t *bytes = sl_xcalloc(n + 1, sizeof(*bytes));
    uint64_t *sizes = sl_xcalloc(n + 1, sizeof(*sizes));
    uint64_t *per = sl_xcalloc((size_t)P, sizeof(*per));
    int *owner = sl_xcalloc(n + 1, sizeof(*owner));
    int rc = dd_plan_count_docs(&c->in, docs, bytes);
    for (size_t i = 0; i < n; i++)
        sizes[i] = c->in.v[i].size;
    sl_assign_by_size(sizes, n, P, owner);
    for (size_t i = 0; !rc && i < n; i++) {
        in->docs += docs[i];
        per[owner[i]] += docs[i];
        if (sl_codec_from_name(c->in.v[i].path) == SL_CODEC_ZSTD && bytes[i] > in->zstd_frame)
            in->zstd_frame = bytes[i];
    }
    for (int r = 0; r < P; r++)
        if (per[r] > in->docs_rank)
            in->docs_rank = per[r];
    free(docs);
    free(bytes);
    free(sizes);
    free(per);
    free(owner);
    return rc;
}

/* --plan: the inputs' documents counted, the Redis Cluster asked for its masters and
 * memory, and the model's figures printed (rank 0); nothing written. */
static int plan(const struct opts *o, const struct dd_fuzzy_params *f,
                const struct sl_strlist *operands)
{
    struct sl_world *w = sl_world_get();
    struct dd_corpus c;
    memset(&c, 0, sizeof(c));
    int P = o->ranks > 0 ? (int)o->ranks : w->size;
    struct dd_plan_in in = { .bands = f->bands, .ranks = (unsigned)P };
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* what this process holds now: its binary, libraries and (under mpirun) MPI's */
    in.base_bytes = (uint64_t)ru.ru_maxrss * 1024;
    if (P > 1 && w->size == 1)
        in.base_bytes += DD_PLAN_MPI_BYTES;
    int rc = dd_corpus_init(&c, w, (const char *const *)operands->v, operands->n);
    if (!rc)
        rc = plan_docs(&c, P, &in);
    in.redis = !strcmp(o->backend, "redis");
    if (!rc && in.redis) {
        const char *pw = getenv("SLUICE_REDIS_PASSWORD");
        in.prefix_len = o->redis_prefix ? strlen(o->redis_prefix) : strlen("sluice:run:") + 16;
        rc = dd_plan_redis(o->redis, pw && *pw ? pw : NULL, o->redis_timeout, &in.masters,
                           &in.node_base);
    }
    if (rc) {
        dd_corpus_release(&c);
        return fail(1);
    }
    struct dd_plan p;
    dd_plan_memory(&in, &p);
    if (w->rank == 0) {
        printf("plan: %llu documents (counted) in %zu files, %.1f MB; %d ranks; %u bands x %u "
               "rows; %s backend\n",
               (unsigned long long)in.docs, c.in.n, mib(sl_inputs_total_size(&c.in)), P, f->bands,
               f->rows, o->backend);
        printf("peak per rank: %.1f MB (the rank with the most documents: %llu)\n",
               mib(p.rank_peak), (unsigned long long)in.docs_rank);
        printf("  base %.1f MB, signatures %.1f MB, %s %.1f MB, pairs %.1f MB; pass 1 %.1f MB, "
               "output %.1f MB\n",
               mib(p.base), mib(p.sigs), in.redis ? "redis batch" : "band records", mib(p.work),
               mib(p.pairs), mib(p.pass1), mib(p.output));
        if (in.redis) {
            printf("peak per redis node: %.1f MB (%u masters; on each about %llu keys)\n",
                   mib(p.node_peak), in.masters, (unsigned long long)p.node_keys);
            printf("  now %.1f MB, buckets %.1f MB, slot markers %.1f MB\n", mib(in.node_base),
                   mib(p.node_buckets), mib(p.node_markers));
        }
        fflush(stdout);
    }
    dd_corpus_release(&c);
    return 0;
}

/* The preset's defaults applied, the options checked and resolved into o->f and o->fam. */
static int check(void *opts, const struct sl_strlist *operands)
{
    struct opts *o = opts;
    struct dd_fuzzy_params *f = &o->f;
    int nemo = !strcmp(o->preset, "nemo");
    const char *ngram = o->ngram ? o->ngram : nemo ? "chars:24" : "words:5";
    const char *norm = o->norm ? o->norm : nemo ? "none" : "all";
    long bands = o->bands >= 0 ? o->bands : nemo ? 20 : 14;
    long rows = o->rows >= 0 ? o->rows : nemo ? 13 : 8;
    o->fam = DD_MH_MULTIPLY;
    int rc = operands->n ? 0 : sl_err_set(SL_ERR_USAGE, "no inputs given");
    if (!rc)
        rc = dd_shingler_parse(&f->sh, ngram, o->seed);
    if (!rc)
        rc = dd_norm_parse(norm, &f->norm);
    if (!rc && (bands < 1 || rows < 1 || bands * rows > DD_MH_MAX_PERM))
        rc =
            sl_err_set(SL_ERR_USAGE, "--bands x --rows must be 1..%d permutations", DD_MH_MAX_PERM);
    if (!rc)
        rc = minhash_family_parse(o->family, &o->fam);
    if (!rc && (o->threshold <= 0 || o->threshold > 1))
        rc = sl_err_set(SL_ERR_USAGE, "--threshold must be in (0, 1]");
    if (!rc && o->anchors == 0)
        rc = sl_err_set(SL_ERR_USAGE, "--anchors must be at least 1");
    if (!rc && !strcmp(o->backend, "redis") && !o->redis)
        rc = sl_err_set(SL_ERR_USAGE, "--backend redis needs --redis HOST:PORT[,HOST:PORT...]");
    if (!rc && o->redis && strcmp(o->backend, "redis"))
        rc = sl_err_set(SL_ERR_USAGE, "--redis is only used with --backend redis");
    if (!rc && o->ranks < 0)
        rc = sl_err_set(SL_ERR_USAGE, "--ranks must be at least 1");
    if (!rc && o->ranks && !o->plan)
        rc = sl_err_set(SL_ERR_USAGE, "--ranks is only used with --plan");
    if (!rc && o->redis_timeout <= 0)
        rc = sl_err_set(SL_ERR_USAGE, "--redis-timeout must be positive");
    if (!rc && (o->redis_batch < 1 || o->redis_batch > 1000000))
        rc = sl_err_set(SL_ERR_USAGE, "--redis-batch must be 1..1000000");
    if (!rc && o->verify && o->index_in)
        rc = sl_err_set(SL_ERR_USAGE,
                        "--verify cannot be used with --index-in: the index keeps band keys, "
                        "not the shingles of the earlier documents\nhint: verify within each "
                        "run, or dedup old and new documents together");
    if (!rc && o->rehydrate_weights)
        o->rehydrate = 1;
    if (!rc && o->rehydrate) {
        o->cluster_size = 1;
        rc = dd_rehydrate_parse(&o->rt, o->rehydrate_weights ? o->rehydrate_weights
                                                             : DD_REHYDRATE_FINEWEB2);
        dd_rehydrate_name(&o->rt, o->rt_name, sizeof(o->rt_name));
    }
    if (rc)
        return rc;
    f->bands = (unsigned)bands;
    f->rows = (unsigned)rows;
    f->seed = o->seed;
    f->verify = o->verify;
    f->threshold = o->threshold;
    f->anchors = o->anchors > 0 ? (unsigned)o->anchors : o->verify ? 8 : 1;
    char sn[32], nn[64];
    snprintf(f->minhash_json, sizeof(f->minhash_json),
             "{\"ngram\":\"%s\",\"norm\":\"%s\",\"bands\":%u,\"rows\":%u,\"seed\":%llu,"
             "\"hash\":\"%s\"}",
             dd_shingler_name(&f->sh, sn, sizeof(sn)), dd_norm_name(f->norm, nn, sizeof(nn)),
             f->bands, f->rows, (unsigned long long)o->seed, minhash_family_name(o->fam));
    return 0;
}

static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    struct dd_fuzzy_params f = o->f;
    minhash_init(&f.mh, f.bands * f.rows, o->seed, o->fam);
    int rc = o->plan ? plan(o, &f, operands) : fuzzy(o, &f, operands, argc, argv);
    minhash_release(&f.mh);
    return rc;
}

const struct sl_cmd cmd_dedup_fuzzy =
    SL_CMD(cmd_dedup_fuzzy_usage, cmd_dedup_fuzzy_options, struct opts, check, run);
