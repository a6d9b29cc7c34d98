/* Benchmark decontamination (NeMo Curator's TaskDecontamination, the GPT-3 paper's
 * method): word n-grams of downstream task texts are looked up in each document; at a match
 * the n-gram plus a margin is cut out (to the nearest sentence end), the document is split,
 * pieces of min_length code points or fewer are dropped, and documents split into more than
 * max_splits pieces (or into none) are dropped. docs/commands/decontaminate.md.
 *
 * Normalisation (NeMo's get_words): lower-case, ASCII punctuation as space, split at
 * whitespace. A task text of min_task_words..ngram-1 words is one shorter n-gram.
 *
 * The task table is built from the task files alone, in config order, so every rank builds
 * the same one. sl_decont_doc is used by one thread at a time per struct sl_decont_work. */
#ifndef SL_DECONT_DECONT_H
#define SL_DECONT_DECONT_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

struct sl_decont_opts {
    long ngram;          /* 13 */
    long min_task_words; /* 8 */
    long margin;         /* 200 code points each side */
    long min_length;     /* 200: pieces must be longer */
    long max_splits;     /* 10 */
};

struct sl_decont_task {
    char *name;
    char **files, **fields;
    size_t nfiles, nfields;
    uint64_t records, texts, ngrams; /* read, texts used, distinct n-grams first seen here */
    uint64_t skipped;                /* records without a usable field */
    uint64_t bad_lines;              /* lines that are not JSON objects (skipped) */
    char *first_bad;                 /* "FILE:LINE:COL: reason" of the first */
};

struct sl_decont {
    struct sl_decont_opts o;
    struct sl_decont_task *tasks;
    size_t ntasks;
    /* open-addressing table of n-gram keys (two 61-bit polynomial hashes) -> task */
    struct sl_decont_slot {
        uint64_t a, b; /* b == 0: empty */
        uint32_t task;
    } * slots;
    size_t cap, n;
    uint64_t *bits; /* prefilter: one bit per key hash, bmask + 1 bits */
    uint64_t bmask;
    int lens[64]; /* n-gram lengths present, tried in this order (ngram first) */
    int nlens;
};

/* Read the tasks config (YAML: tasks: [{name, files, fields}]) and build the table. Errors
 * name the file and line. */
int sl_decont_load(struct sl_decont **out, const char *config, const struct sl_decont_opts *o);
void sl_decont_free(struct sl_decont *d);
/* The tasks and their n-gram counts as JSON (for the manifest). */
void sl_decont_settings(const struct sl_decont *d, struct sl_buf *out);

struct sl_decont_piece {
    size_t off, len; /* bytes of the text */
};

struct sl_decont_work {
    struct sl_decont_word {
        uint32_t start, end;
        uint64_t h;
    } * w;
    size_t nw, wcap;
    uint64_t *pa, *pb; /* prefix hashes, nw + 1 */
    size_t pcap;
    struct sl_buf *low;
    /* result of the last document */
    struct sl_decont_piece *pieces;
    size_t npieces, piececap;
    uint64_t *task_matches; /* per task */
    uint64_t matches, short_pieces;
    int dropped; /* 0 kept, 1 more than max_splits pieces, 2 no piece left */
};

void sl_decont_work_init(struct sl_decont_work *w, const struct sl_decont *d);
void sl_decont_work_release(struct sl_decont_work *w);
/* Decontaminate one text (the result in w). */
void sl_decont_doc(const struct sl_decont *d, struct sl_decont_work *w, const char *text, size_t n);

#endif
