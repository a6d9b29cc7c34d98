/* The keys of `sluice train`: one table (train_keys) that loads them from the YAML config and
 * its key=value overrides into struct train_opts (train/train_run.h), prints them for
 * --print-config, and lists them for docs/trainer.md (tests/unit/test_train.c checks that the
 * page's keys table has every key of the table and no other).
 *
 * A row names its key, its type, the member it sets, its default (a constant, or a function of
 * the keys read before it), its range or choices, when it is read, how --print-config shows it
 * and a line of help. The keys of model.* are read by model_config_load (train/model.h), those
 * of parallel.* by parallel_config_load (train/parallel.h); the table lists parallel.* for the
 * page only (TK_ELSEWHERE).
 */
#ifndef SL_TRAIN_TRAIN_CONFIG_H
#define SL_TRAIN_TRAIN_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "train/train_run.h"

struct sl_cfg;

enum train_key_type {
    TK_LONG,      /* long, at least .min */
    TK_U64,       /* uint64_t */
    TK_DOUBLE,    /* double; in the range .lo .. .hi where .range is set */
    TK_BOOL,      /* int, 0 or 1 */
    TK_STR,       /* const char *, borrowed from the config tree */
    TK_CHOICE,    /* int: the index of the value in .choices */
    TK_OWN,       /* read (.read) and printed (.print) by its own functions */
    TK_ELSEWHERE, /* read by another key's .read or another loader; listed for the page */
};

/* When a key is read: the order of the phases is train_config_load's (an error names the
 * first bad key in that order, and a default may use the keys read before it). */
enum train_key_phase {
    TP_NONE,   /* TK_ELSEWHERE */
    TP_PREFIX, /* data.prefix in its forms: decides whether the data is synthetic */
    TP_DATA,   /* the rest of data.* (not read for synthetic data) */
    TP_TRAIN,  /* after model.* and parallel.*; then the batch checks */
    TP_OPTIM,  /* then the range checks */
    TP_LATE,   /* data.seed (its default is train.seed), eval, checkpoint, log, debug */
};

/* How --print-config shows a key (under its section, `  name: value`). */
enum train_key_show {
    TS_ALWAYS,
    TS_IF_SET, /* a string that is not NULL, a number not negative */
    TS_NEVER,
};

struct train_key {
    const char *path; /* "section.name" */
    enum train_key_type type;
    enum train_key_phase phase;
    size_t off;        /* the member of struct train_opts it sets */
    long def_l;        /* the default of TK_LONG, TK_U64 and TK_BOOL */
    double def_d;      /* ... of TK_DOUBLE */
    const char *def_s; /* ... of TK_STR and TK_CHOICE (NULL: none) */
    /* a default computed from the keys read before (writes the member's type to *def) */
    void (*def)(const struct train_opts *o, void *def);
    long min; /* TK_LONG */
    int range, lo_open, hi_open;
    double lo, hi;              /* TK_DOUBLE with .range: [lo, hi], an end open if its flag */
    const char *const *choices; /* TK_CHOICE: NULL-terminated */
    int (*read)(struct train_opts *o, struct sl_cfg *root); /* TK_OWN */
    void (*print)(const struct train_opts *o, FILE *f);     /* TK_OWN */
    enum train_key_show show;
    const char *quote; /* TK_STR in --print-config: "", "\"" or "'" */
    int print_rank;    /* --print-config: after the section's keys of a lower rank */
    int check_rank;    /* .range: checked after the phase's ranges of a lower rank */
    const char *help;  /* one line; the page says the rest */
};

/* Every key, ended by a row whose path is NULL. */
extern const struct train_key train_keys[];

/* Read and check every key of root into o (zeroed first), model.* and parallel.* included;
 * world: the ranks of the run (0: --print-config, which takes parallel.data). Then an unused
 * key of root is an error naming the nearest known one. 0 or SL_ERR_CONFIG (or the error of
 * reading the data's manifest); o's owned parts are set either way (train_config_release). */
int train_config_load(struct train_opts *o, struct sl_cfg *root, int world);

/* --print-config: every key as the run would use it (defaults and values taken from the data
 * included) as YAML that `sluice train` reads back, with the memory estimate per rank. */
void train_config_print(const struct train_opts *o, FILE *f);

/* Free what train_config_load allocated in o. */
void train_config_release(struct train_opts *o);

#endif
