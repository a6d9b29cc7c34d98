/* struct pl_pipeline: a pipeline YAML file (configs/pipelines/NAME.yaml) and its key=value
 * overrides, turned into the command lines that run its stages, in order.
 *
 * A pipeline has one section per stage it defines (download, extract, clean, filter,
 * dedup_exact, dedup_fuzzy, reshard, tokenizer_train, tokenize, train). The train
 * section names a trainer config and maps of its keys to override; it reads the tokenize
 * stage's shards and takes the vocabulary size of the tokenizer_train stage. The sections
 * present form the chain, always in that order; `stages: [...]` picks which of them run
 * now (default: all). A section's keys are the command's long options with '_' for '-'
 * (docs/pipelines.md has the table); unknown keys are errors naming FILE:LINE. A section
 * may be a list of maps (several runs of the command, e.g. one extract per format); their
 * outputs together are the next stage's input. Each stage reads the output of the
 * document stage before it in the chain unless it says `in:`, and writes to
 * WORK/<stage>[/<entry>] unless it says `out:`. "${key}" in a value is replaced by the
 * top-level scalar `key` (and ${name}, ${work_dir}).
 *
 * Library code: builds command lines, never runs them (cli/cmd_run.c does) and never prints.
 */
#ifndef PL_PIPELINE_H
#define PL_PIPELINE_H

#include <stddef.h>
#include <stdio.h>

#include "core/options.h"

struct sl_cfg;

/* The stages in the order data flows: download, curate's document stages (PL_EXTRACT,
 * PL_CLEAN, ... PL_RESHARD: the stage rows of curate/commands.def), tokenizer_train,
 * tokenize, train. */
enum pl_stage {
    PL_DOWNLOAD,
#define SL_CURATE_STAGE(ID, name, summary) PL_##ID,
#define SL_CURATE_MODE(ID, name, mode)     PL_##ID,
#include "curate/commands.def"
    PL_TOKENIZER_TRAIN,
    PL_TOKENIZE,
    PL_TRAIN,
    PL_NSTAGES
};

/* "dedup_exact" for PL_DEDUP_EXACT; NULL out of range. */
const char *pl_stage_name(int stage);
/* The command a stage runs ("dedup" for PL_DEDUP_EXACT), its subcommand in *sub ("exact";
 * NULL: none); NULL out of range. */
const char *pl_stage_command(int stage, const char **sub);
/* "download, extract, ..., train": every stage's name, in order. */
const char *pl_stage_names(void);

/* What a step writes before its command runs (rank 0): a URL list for download. */
enum pl_prep {
    PL_PREP_NONE,
    PL_PREP_URLS,  /* write `urls_text` to `urls_path` */
    PL_PREP_PATHS, /* read `paths_file` (a Common Crawl *.paths.gz), keep lines
                      `paths_numbers` (all if NULL), prefix each with `paths_prefix`,
                      write them to `urls_path` */
};

/* One run of one command. */
struct pl_step {
    int stage;                /* enum pl_stage */
    char *label;              /* "extract" or "extract/warc" */
    char *out;                /* the directory the step writes (created by the command or run) */
    struct sl_strlist argv;   /* the command line without the program: "dedup", "exact", ... */
    int selected;             /* picked by `stages` */
    int aux;                  /* a helper run (the paths file of a download), not a stage output */
    const char *force;        /* what starts the command afresh over stale outputs: "--force",
                                 train's "train.resume=none"; NULL: nothing does */
    int rm_inputs;            /* the command deletes its inputs when done (extract --rm-inputs) */
    struct sl_strlist inputs; /* paths the command reads: operands and input files of options */
    size_t *deps;             /* indices of the steps whose outputs this step reads */
    size_t ndeps;
    char *counts_manifest; /* the manifest with this step's counts (NULL: none) */
    enum pl_prep prep;
    char *urls_path, *urls_text, *paths_file, *paths_prefix, *paths_numbers;
    char *note; /* a line that explains a generated input (for --dry-run), or NULL */
    /* train: the trainer's JSON-lines log, and what a fresh start (a STALE step) removes
     * first: the checkpoint directory and log the pipeline chose (NULL when the pipeline
     * gave a path of the user's own) */
    char *train_log;
    char *fresh_rm[2];
};

struct pl_pipeline {
    struct sl_cfg *cfg;
    char *name, *work_dir;
    struct pl_step *steps;
    size_t n;
};

/* Load PATH, apply overrides ("a.b=value", "stages=[extract,clean]"), check every key and
 * build the steps. 0, or SL_ERR_CONFIG/SL_ERR_USAGE/SL_ERR_IO with a message naming the
 * file and line. On error *p holds nothing to release. */
int pl_pipeline_load(struct pl_pipeline *p, const char *path, const char *const *overrides,
                     size_t n);
void pl_pipeline_release(struct pl_pipeline *p);

/* sluice's data directory, which holds configs/ and examples/ (core/datadir.h
 * sl_data_dir): $SLUICE_DATA_DIR, else PREFIX/share/sluice beside an installed binary
 * (PREFIX/bin or PREFIX/libexec/sluice), else the source tree of a build (build/sluice).
 * NULL when none is found. */
const char *pl_data_dir(void);

/* The pipeline file that `sluice run ARG` means: ARG itself when it exists or has a '/',
 * else the bundled DATA/configs/pipelines/ARG[.yaml] when that exists. Caller frees. */
int pl_find_pipeline(const char *arg, char **path);

/* Perform a step's preparation (rank 0, before its command). 0 or an error. */
int pl_step_prepare(const struct pl_step *s);

/* Print every stage's keys and the options they map to (for `sluice run --keys`). */
void pl_print_keys(FILE *f);

/* The command line as one shell line ("sluice extract --format warc ..."), quoted where
 * needed, URLs in their display form (core/http.h: no token). For messages and --dry-run
 * only: not a command to run. Caller frees. */
char *pl_shell_line(const struct sl_strlist *argv);

/* Format a URL template: {n}, {n:05d}, {lang}, {total}, {total:05d}. Caller frees *out.
 * SL_ERR_CONFIG on an unknown or malformed field. */
int pl_format_template(const char *tmpl, unsigned long long n, const char *lang,
                       unsigned long long total, char **out);

#endif
