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

static int train(struct opts *o)
{
    char tmpl[] = "/tmp/sluice-classifier-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        sl_error("cannot create a temporary file in /tmp");
        return 1;
    }
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
    if (rc) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    sl_info("classifier: trained on %llu positive and %llu negative documents -> '%s'",
            (unsigned long long)np, (unsigned long long)nn, o->out);
    return 0;
}

/* The options of the run (set by cmd_classifier) and their table. */
static struct opts o;

const struct sl_option cmd_classifier_options[] = {
    SL_OPT_STRINGS(0, "pos", &o.pos, "IN", "high-quality documents (JSONL file or directory)"),
    SL_OPT_STRINGS(0, "neg", &o.neg, "IN", "other documents"),
    SL_OPT_STRING('o', "out", &o.out, "MODEL.bin", "where to write the model"),
    SL_OPT_STRING(0, "pos-label", &o.pos_label, "NAME", "label of --pos (default hq)"),
    SL_OPT_STRING(0, "neg-label", &o.neg_label, "NAME", "label of --neg (default lq)"),
    SL_OPT_INTEGER(0, "epoch", &o.epoch, "N", "training epochs (default 5)"),
    SL_OPT_INTEGER(0, "dim", &o.dim, "N", "vector size (default 100)"),
    SL_OPT_INTEGER(0, "word-ngrams", &o.ngrams, "N", "word n-grams (default 2)"),
    SL_OPT_INTEGER(0, "min-count", &o.min_count, "N", "minimal word count (default 1)"),
    SL_OPT_DOUBLE(0, "lr", &o.lr, "X", "learning rate (default 0.1)"),
    SL_OPT_INTEGER(0, "seed", &o.seed, "N", "random seed (default 42)"),
    SL_OPT_UINT64(0, "max-docs", &o.max_docs, "N", "use at most N documents of each class"),
    SL_OPT_STRING(0, "text-key", &o.text_key, "KEY", "member that holds the text (default text)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

int cmd_classifier(int argc, const char **argv)
{
    memset(&o, 0, sizeof(o));
    o.text_key = "text";
    o.pos_label = "hq";
    o.neg_label = "lq";
    o.epoch = 5;
    o.dim = 100;
    o.ngrams = 2;
    o.seed = 42;
    o.min_count = 1;
    o.lr = 0.1;
    struct sl_strlist rest = { 0 };
    int rc = sl_parse_options(argc, argv, cmd_classifier_options, &rest);
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, cmd_classifier_usage, cmd_classifier_options);
        rc = 0;
        goto out;
    }
    if (!rc && (rest.n != 1 || strcmp(rest.v[0], "train")))
        rc = sl_err_set(SL_ERR_USAGE,
                        rest.n ? "unknown subcommand '%s' (expected 'train')"
                               : "expected a subcommand: train",
                        rest.n ? rest.v[0] : "");
    if (!rc && (!o.pos.n || !o.neg.n || !o.out))
        rc = sl_err_set(SL_ERR_USAGE, "--pos, --neg and --out are required");
    if (!rc && (o.epoch < 1 || o.dim < 1 || o.ngrams < 1 || o.lr <= 0))
        rc = sl_err_set(SL_ERR_USAGE, "--epoch, --dim, --word-ngrams and --lr must be positive");
    if (rc) {
        rc = sl_usage_error(cmd_classifier_usage);
        goto out;
    }
    rc = sl_world_get()->rank == 0 ? train(&o) : 0;
out:
    sl_strlist_release(&rest);
    sl_strlist_release(&o.pos);
    sl_strlist_release(&o.neg);
    return rc;
}
