/* sluice classifier train: a fastText supervised classifier from positive and negative
 * JSONL documents (the quality classifiers of GPT-3 / NeMo Curator). Training runs on one
 * thread with a fixed seed, so the same inputs and options give the same model. */
#include "curate/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/world.h"
#include "curate/filter/langid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cmd_classifier_usage[] = {
    "sluice classifier train --pos IN --neg IN --out MODEL.bin [options]",
    "",
    "Train a fastText classifier that tells high-quality documents (--pos, label",
    "__label__hq) from others (--neg, label __label__lq). IN is a JSONL file or directory",
    "(repeat the option for more). Apply the model with the 'classifier' filter of",
    "'sluice filter' (threshold or Pareto sampling). Deterministic for a given --seed.",
    NULL,
};

struct opts {
    struct sl_strlist pos, neg;
    const char *out, *text_key, *pos_label, *neg_label;
    long epoch, dim, ngrams, seed, min_count;
    double lr;
    uint64_t max_docs;
};

/* Append "__label__L text" lines (newlines as spaces) for every document of the inputs. */
static int write_examples(FILE *f, const struct sl_strlist *ops, const char *label,
                          const struct opts *o, uint64_t *count)
{
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)ops->v, ops->n, sl_jsonl_exts);
    if (rc)
        return rc;
    struct sl_doc d;
    sl_doc_init(&d);
    struct sl_jsonl_opts jo;
    memset(&jo, 0, sizeof(jo));
    jo.text_key = o->text_key;
    jo.on_skip = sl_warn_skip;
    for (size_t i = 0; i < in.n && !rc; i++) {
        struct sl_jsonl_reader *r;
        rc = sl_input_jsonl(&r, &in.v[i], &jo);
        while (!rc && (!o->max_docs || *count < o->max_docs)) {
            int got = sl_jsonl_next(r, &d);
            if (got < 0)
                rc = got;
            if (got <= 0)
                break;
            size_t n;
            const char *t = sl_doc_text(&d, &n);
            fprintf(f, "__label__%s ", label);
            for (size_t k = 0; k < n; k++) {
                char ch = t[k];
                fputc(ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch, f);
            }
            fputc('\n', f);
            (*count)++;
        }
        if (!rc)
            sl_jsonl_close(r);
    }
    sl_doc_release(&d);
    sl_inputs_release(&in);
    return rc;
}

static int train(const struct opts *o)
{
    char tmpl[] = "/tmp/sluice-classifier-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return sl_err_set(SL_ERR_IO, "cannot create a temporary file in /tmp");
    FILE *f = fdopen(fd, "w");
    uint64_t np = 0, nn = 0;
    int rc = write_examples(f, &o->pos, o->pos_label, o, &np);
    if (!rc)
        rc = write_examples(f, &o->neg, o->neg_label, o, &nn);
    fclose(f);
    if (!rc && (!np || !nn))
        rc = sl_err_set(
            SL_ERR_USAGE,
            "no %s documents found\nhint: --pos and --neg need JSONL documents with a text",
            !np ? "positive" : "negative");
    if (!rc) {
        struct sl_fasttext_train_opts t = { tmpl,           o->out,
                                            (int)o->epoch,  (int)o->dim,
                                            (int)o->ngrams, (int)o->min_count,
                                            (int)o->seed,   1,
                                            o->lr,          0 };
        rc = sl_fasttext_train(&t);
    }
    unlink(tmpl);
    if (rc)
        return rc;
    sl_info("classifier: trained on %llu positive and %llu negative documents -> '%s'",
            (unsigned long long)np, (unsigned long long)nn, o->out);
    return 0;
}

/* The options' table (the dispatcher's parser and -h). */
#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_classifier_options[] = {
    SL_OPT_STRINGS(0, "pos", pos, "IN", "high-quality documents (JSONL file or directory)"),
    SL_OPT_STRINGS(0, "neg", neg, "IN", "other documents"),
    SL_OPT_STRING('o', "out", out, "MODEL.bin", "where to write the model"),
    SL_OPT_STRING(0, "pos-label", pos_label, "NAME", "label of --pos", .def = "hq"),
    SL_OPT_STRING(0, "neg-label", neg_label, "NAME", "label of --neg", .def = "lq"),
    SL_OPT_INTEGER(0, "epoch", epoch, "N", "training epochs", .def = "5"),
    SL_OPT_INTEGER(0, "dim", dim, "N", "vector size", .def = "100"),
    SL_OPT_INTEGER(0, "word-ngrams", ngrams, "N", "word n-grams", .def = "2"),
    SL_OPT_INTEGER(0, "min-count", min_count, "N", "minimal word count", .def = "1"),
    SL_OPT_DOUBLE(0, "lr", lr, "X", "learning rate", .def = "0.1"),
    SL_OPT_INTEGER(0, "seed", seed, "N", "random seed", .def = "42"),
    SL_OPT_UINT64(0, "max-docs", max_docs, "N", "use at most N documents of each class"),
    SL_OPT_STRING(0, "text-key", text_key, "KEY", "member that holds the text", .def = "text"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int check(void *opts, const struct sl_strlist *operands)
{
    const struct opts *o = opts;
    if (operands->n != 1 || strcmp(operands->v[0], "train"))
        return sl_err_set(SL_ERR_USAGE,
                          operands->n ? "unknown subcommand '%s' (expected 'train')"
                                      : "expected a subcommand: train",
                          operands->n ? operands->v[0] : "");
    if (!o->pos.n || !o->neg.n || !o->out)
        return sl_err_set(SL_ERR_USAGE, "--pos, --neg and --out are required");
    if (o->epoch < 1 || o->dim < 1 || o->ngrams < 1 || o->lr <= 0)
        return sl_err_set(SL_ERR_USAGE, "--epoch, --dim, --word-ngrams and --lr must be positive");
    return 0;
}

/* `sluice classifier train`: rank 0 trains */
static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    return sl_world_get()->rank == 0 ? train(opts) : 0;
}

const struct sl_cmd cmd_classifier =
    SL_CMD(cmd_classifier_usage, cmd_classifier_options, struct opts, check, run);
