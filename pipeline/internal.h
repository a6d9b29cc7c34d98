/* Inside pipeline/: what the loader (pipeline.c), the stage table (keys.c), the stages'
 * own parts (download_stage.c, tokenize_stage.c, train_stage.c) and the summary (report.c)
 * share. Not for other folders. */
#ifndef PL_INTERNAL_H
#define PL_INTERNAL_H

#include "core/config.h"
#include "core/options.h"
#include "pipeline/pipeline.h"

#include <stddef.h>

/* ---- the key tables (keys.c) --------------------------------------------------------- */

enum key_kind {
    K_FLAG,   /* true -> --opt; false -> nothing */
    K_VALUE,  /* --opt VALUE */
    K_REPEAT, /* a value or a list: --opt V for each */
    K_CSV,    /* a value or a list: --opt V1,V2 */
    K_KV,     /* a map (or a list of "k=v"): --opt k=v for each */
    K_RUN,    /* read by the pipeline itself, not a command option */
};

#define F_IN 1 /* the value names a file the command reads ("kind:PATH" too) */

struct key {
    const char *key;
    const char *opt; /* long option; NULL for K_RUN */
    enum key_kind kind;
    int flags;
    const char *help; /* for K_RUN keys */
};

struct loader;
struct flow;
struct pl_row;
struct json_object;

/* A stage of `sluice run`: its section, its command, its keys and what is its own in
 * building its steps and reporting them. A document stage's row is made from
 * curate/commands.def (keys.c); the others' hooks are in their files (download_stage.c,
 * tokenize_stage.c, train_stage.c). */
struct stage_def {
    const char *name;
    const char *cmd, *sub;
    const struct sl_option *opts; /* the command's option table: the stage's keys; NULL:
                                   * `own` is the whole table (train) */
    const struct key *own;        /* the pipeline's own keys of the stage (K_RUN), or NULL */
    int docs;                     /* writes documents the next stage reads */
    int source;        /* makes its documents of other formats' records (extract): the funnel of
                        * documents begins at its output */
    const char *force; /* what starts its command afresh over stale outputs (struct pl_step) */
    int one_map;       /* the section is one map, not a list of runs */
    /* section: builds the whole section sec (its steps, what later stages read in fl).
     * NULL: one step per entry of the section (a map, or each map of a list of runs),
     * named and placed (`name`, `out`) by the loader, its keys checked, "--out" on its
     * command line, then `build`. */
    int (*section)(struct loader *L, struct sl_cfg *sec, struct flow *fl);
    /* build: the rest of step s (the pipeline's idx-th) of entry m: the output after "--out"
     * and its counts manifest, the options, the inputs, and what later stages read of it
     * (fl). pl_build_docs for a document stage. */
    int (*build)(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                 struct flow *fl);
    /* report: what the summary shows of a step beyond a document stage's counts, from its
     * manifest m (NULL: the step has no counts yet). NULL: nothing more. */
    void (*report)(struct pl_row *r, struct json_object *m);
};

extern const struct stage_def pl_stages[PL_NSTAGES];
/* The keys of a stage (built from its command's option table on first use). */
const struct key *pl_stage_keys(int stage);

/* Rows of a key table. */
#define FLAG(k, o)                                                                                 \
    {                                                                                              \
        k, o, K_FLAG, 0, NULL                                                                      \
    }
#define VAL(k, o)                                                                                  \
    {                                                                                              \
        k, o, K_VALUE, 0, NULL                                                                     \
    }
#define VALIN(k, o)                                                                                \
    {                                                                                              \
        k, o, K_VALUE, F_IN, NULL                                                                  \
    }
#define RUNKEY(k, h)                                                                               \
    {                                                                                              \
        k, NULL, K_RUN, 0, h                                                                       \
    }
#define END                                                                                        \
    {                                                                                              \
        NULL, NULL, K_RUN, 0, NULL                                                                 \
    }
#define COMMON                                                                                     \
    RUNKEY("in", "inputs (a path or a list); default: the previous document stage's output"),      \
        RUNKEY("out", "output directory; default: WORK/<stage>[/<entry>]"),                        \
        RUNKEY("name", "entry name in a list of runs (default: its position)"),                    \
        FLAG("quiet", "quiet"), FLAG("verbose", "verbose")

/* The key k of table t, or NULL. */
const struct key *pl_find_key(const struct key *t, const char *k);
/* Every key of a section map is in its table (unknown keys: FILE:LINE, the nearest). */
int pl_check_keys(struct sl_cfg *map, const struct key *t, int in_list);

/* ---- loading (pipeline.c) ------------------------------------------------------------ */

struct loader {
    struct pl_pipeline *p;
    struct sl_cfg *root;
    const char *file;
    char *dir;                   /* the pipeline file's directory ("." for a bare name) */
    struct sl_strlist file_refs; /* the ${variables} the file (before overrides) uses */
};

/* What the chain has produced so far. */
struct flow {
    struct sl_strlist docs; /* output directories of the last document stage */
    size_t *doc_steps;      /* their step indices */
    size_t ndoc;
    char *tok_model; /* tokenizer_train's model */
    size_t tok_step;
    char *vocab_size; /* tokenizer_train's vocab_size, when given */
    char *tokens;     /* tokenize's first prefix (PREFIX_text_document) */
    size_t tokens_step;
};

void pl_push(struct sl_strlist *l, const char *s);
char *pl_strlist_join(const struct sl_strlist *l, const char *sep);
struct pl_step *pl_new_step(struct pl_pipeline *p, int stage);
void pl_add_dep(struct pl_step *s, size_t d);
void pl_flow_set_docs(struct flow *f, const struct pl_pipeline *p, size_t first);
int pl_section_options(struct loader *L, const struct key *t, struct sl_cfg *map,
                       struct pl_step *s);

/* ---- the values of a section (yaml.c) -------------------------------------------------- */

/* The child `key` of a map, or NULL: a key whose value is null (`key: null`, `key: ~`,
 * the override key=null) is as if it were absent. */
struct sl_cfg *pl_child(struct sl_cfg *map, const char *key);
/* A scalar or a list of scalars, each with its ${var} references replaced, appended to
 * *out (a scalar "a,b" stays one value); a null node appends nothing. */
int pl_scalars(struct loader *L, struct sl_cfg *node, struct sl_strlist *out);
/* One scalar, its ${var} references replaced. Caller frees *out. */
int pl_one_scalar(struct loader *L, struct sl_cfg *node, char **out);
/* The value v of node as an input path: beside the pipeline file, else in sluice's data
 * directory, unless it was given on the command line or names an earlier step's output
 * ("kind:PATH" keeps its kind). Caller frees. */
char *pl_resolve_input(struct loader *L, struct sl_cfg *node, const char *v);
/* The path in a value that names an input ("spm:x.model" -> "x.model"), else the value. */
const char *pl_input_path(const char *v);
/* 1 when something (a file, a directory) is at path. */
int pl_exists(const char *path);
/* Every value under node that is only "${var}" of a null variable becomes null itself. */
void pl_null_vars(struct sl_cfg *root, struct sl_cfg *node);
/* The names of the variables the values under node refer to as ${name}, appended to *out. */
void pl_collect_refs(const struct sl_cfg *node, struct sl_strlist *out);
/* FILE:LINE: message (of a config node), as SL_ERR_CONFIG. */
int pl_where_err(struct sl_cfg *node, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A document stage's step (stage_def.build): OUT and OUT/manifest.json, the section's
 * options, the inputs. */
int pl_build_docs(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                  struct flow *fl);
/* The operands of step s (the idx-th) of entry m: 'in' (resolved paths), or the previous
 * document stage's outputs; each one an earlier step writes makes that step a dependency. */
int pl_stage_inputs(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                    struct flow *fl);

/* ---- the summary's row of a step (report.c) -------------------------------------------- */

struct pl_row {
    const struct pl_step *s;
    int have; /* its manifest has counts */
    unsigned long long docs_in, docs_out, bytes_out, tokens;
    double seconds;
    int files;      /* the counts are files, not documents: "(files)", not in the funnel */
    int has_tokens; /* it counts tokens: the table and summary.json show them */
    char *line;     /* without counts, what the table shows instead (allocated), or NULL */
};

/* ---- the stages' own parts (download_stage.c, tokenize_stage.c, train_stage.c) --------- */

extern const struct key pl_download_own[], pl_tokenizer_train_own[], pl_tokenize_own[],
    pl_train_keys[];
int pl_download_build(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                      struct flow *fl);
void pl_download_report(struct pl_row *r, struct json_object *m);
int pl_tokenizer_train_build(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                             struct flow *fl);
void pl_tokenizer_train_report(struct pl_row *r, struct json_object *m);
int pl_tokenize_build(struct loader *L, struct sl_cfg *m, struct pl_step *s, size_t idx,
                      struct flow *fl);
void pl_tokenize_report(struct pl_row *r, struct json_object *m);
int pl_train_section(struct loader *L, struct sl_cfg *sec, struct flow *fl);

#endif
