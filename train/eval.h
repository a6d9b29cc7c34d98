/* Zero-shot evaluation: tasks in the JSONL layouts of the public sets (HellaSwag, LAMBADA,
 * ARC, PIQA, Winogrande, and sluice's own {"context", "choices", "gold"}), scored as
 * lm-evaluation-harness scores them (docs/eval.md):
 *
 *   loglikelihood(choice) = sum over the continuation's tokens of log P(token | context,
 *   earlier continuation tokens); acc = argmax == gold; acc_norm = argmax of loglikelihood /
 *   characters of the choice == gold; LAMBADA: acc = the greedy continuation is the target,
 *   perplexity = exp(-mean loglikelihood).
 *
 * The context of an item is run once, as blocks of tokens (matrix products over the rows),
 * and its cached keys and values are shared by every continuation; the continuations of an
 * item run together in one block, each attending to the context and to its own earlier
 * tokens (train/decode.h decoder_block). The forward pass is the CPU reference; the trainer's
 * backends score through the same code (eval_scorer over the host parameters).
 */
#ifndef SL_TRAIN_EVAL_H
#define SL_TRAIN_EVAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "train/model.h"

struct tokenizer;

enum eval_kind { EVAL_CHOICE, EVAL_LAMBADA };

struct eval_item {
    int nctx;      /* 1 (shared context) or nchoice (one context per choice: Winogrande) */
    char **ctx;    /* contexts */
    int nchoice;   /* continuations */
    char **cont;   /* continuation strings, with their leading delimiter (" ending") */
    size_t *chars; /* characters of each choice without the delimiter, for acc_norm */
    int gold;      /* the right choice (LAMBADA: 0) */
};

struct eval_task {
    char *path;
    const char *format; /* "hellaswag", "lambada", "arc", "piqa", "winogrande", "choice" */
    enum eval_kind kind;
    struct eval_item *items;
    size_t n, cap;
    uint64_t skipped;    /* lines that are not items of the format */
    char first_bad[256]; /* the first skipped line's message ("file:line: ...") */
};

/* Read a task file (format recognised from the first item's fields); at most max_items
 * items (0: all). Errors: the file cannot be read, or no line is an item (SL_ERR_FORMAT
 * naming the file). Bad lines are counted in skipped. */
int eval_task_load(struct eval_task *t, const char *path, size_t max_items);
void eval_task_release(struct eval_task *t);

struct eval_scorer;

/* A scorer over the parameters slab (borrowed) of a model; max_len <= max_seq_len. */
int eval_scorer_new(struct eval_scorer **out, const struct model_config *c,
                    const struct model_layout *l, const float *params, int max_len);
void eval_scorer_free(struct eval_scorer *s);

/* Log-likelihoods of nchoice continuations of one context (token ids; nctx >= 1): ll[i],
 * and greedy[i] = 1 when every continuation token is the argmax. Contexts too long for
 * max_len lose their first tokens. SL_ERR_FORMAT when a continuation alone is too long (the
 * item is skipped), SL_ERR_CONFIG for a token id outside the vocabulary (another
 * tokenizer's: the run stops). */
int eval_scorer_loglik(struct eval_scorer *s, const int32_t *ctx, int nctx,
                       const int32_t *const *cont, const int *ncont, int nchoice, double *ll,
                       int *greedy);

struct eval_result {
    size_t items, skipped_long;
    double acc, acc_norm; /* fractions */
    double ppl;           /* LAMBADA: perplexity; else NAN */
    double seconds;
};

/* Score a task: its texts through tok (eod_id: the context of an item whose context is
 * empty, as the harness does). details: when not NULL, one JSON line per item with the
 * token ids, log-likelihoods and the prediction (for the tests' oracle). */
int eval_task_run(const struct eval_task *t, const struct tokenizer *tok, int64_t eod_id,
                  struct eval_scorer *s, struct eval_result *r, FILE *details);

#endif
