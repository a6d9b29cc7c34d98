/* sluice tokenizer punkt-train: the parameters of NLTK's Punkt sentence splitter trained
 * (tokenize/punkt_train.h) on the texts of JSONL documents or text files, written as a
 * punkt_tab directory that NLTK and `sluice tokenize --split-sentences --punkt DIR` read.
 * Rank 0 does the work under mpirun. */
#include "tokenize/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/log.h"
#include "core/options.h"
#include "core/progress.h"
#include "core/stream.h"
#include "core/world.h"
#include "tokenize/punkt_map.h"
#include "tokenize/punkt_params.h"
#include "tokenize/punkt_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_tokenizer_punkt_train_usage[] = {
    "sluice tokenizer punkt-train --out DIR [options] IN...",
    "",
    "Train the parameters of NLTK's Punkt sentence splitter (abbreviations, collocations,",
    "sentence starters, orthographic contexts) on the texts of JSONL documents, or of text",
    "files (.txt: each file one text), as NLTK's PunktTrainer does on the texts joined by",
    "blank lines, and write them as a punkt_tab directory DIR (abbrev_types.txt,",
    "collocations.tab, sent_starters.txt, ortho_context.tab): what",
    "`sluice tokenize --split-sentences --punkt DIR` reads, and NLTK reads as",
    "NLTK_DATA/tokenizers/punkt_tab/LANG/.",
    NULL,
};

/* the largest text file read whole (a text file is one text) */
#define MAX_TEXT_FILE ((size_t)1 << 30)

struct opts {
    const char *out, *key;
};

#define SL_OPT_STRUCT struct opts

const struct sl_option cmd_tokenizer_punkt_train_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "the punkt_tab directory written (created if missing)",
                  .required = 1),
    SL_OPT_STRING(0, "json-key", key, "KEY", "member of JSONL documents with the text",
                  .def = "text"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static int is_text_file(const char *path)
{
    static const char *const ends[] = { ".txt", ".txt.gz", ".txt.zst", ".txt.bz2" };
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++) {
        size_t m = strlen(ends[i]);
        if (n >= m && !strcmp(path + n - m, ends[i]))
            return 1;
    }
    return 0;
}

struct add_ctx {
    struct punkt_trainer *t;
    uint64_t *texts;
};

/* A document's text (if it has one) into the trainer. */
static int add_doc(void *arg, struct sl_jsonl_reader *r, struct sl_doc *d)
{
    const struct add_ctx *x = arg;
    size_t n;
    const char *text = sl_doc_text(d, &n);
    (void)r;
    if (!text)
        return 0;
    int rc = punkt_trainer_add(x->t, text, n);
    (*x->texts)++;
    return rc;
}

/* Add the texts of one input to the trainer. */
static int add_input(struct punkt_trainer *t, const struct sl_input *in, const char *key,
                     uint64_t *texts)
{
    const char *path = in->path;
    if (is_text_file(path)) {
        struct sl_buf b;
        sl_buf_init(&b, MAX_TEXT_FILE);
        int rc = sl_read_file(path, &b);
        if (rc == SL_ERR_TOOBIG)
            rc = sl_err_set(rc,
                            "'%s' is longer than %zu bytes\nhint: a text file is one text; "
                            "give long ones as JSONL documents",
                            path, MAX_TEXT_FILE);
        if (!rc) {
            rc = punkt_trainer_add(t, b.data ? b.data : "", b.len);
            (*texts)++;
        }
        sl_buf_release(&b);
        return rc;
    }
    struct sl_jsonl_opts jo = {
        .text_key = key, .allow_missing_text = 1, .repair_utf8 = 1, .on_skip = sl_warn_skip
    };
    struct add_ctx x = { t, texts };
    return sl_input_docs(in, &jo, add_doc, &x); /* up to its planned size */
}

/* rank 0 trains (rank0) */
static int run(const void *opts, const struct sl_strlist *operands, int argc, const char **argv)
{
    const struct opts *o = opts;
    static const char *const exts[] = { ".jsonl",     ".jsonl.zst", ".jsonl.gz", ".json.gz",
                                        ".jsonl.bz2", ".txt",       ".txt.gz",   ".txt.zst",
                                        ".parquet",   NULL };
    struct sl_inputs in;
    int rc = sl_inputs_expand(&in, (const char *const *)operands->v, operands->n, exts);
    if (rc)
        return rc;
    struct punkt_trainer *t = punkt_trainer_new();
    struct sl_progress prog;
    sl_progress_start(&prog, "tokenizer punkt-train: reading", sl_inputs_total_size(&in), 1, 1);
    uint64_t done = 0, texts = 0;
    for (size_t f = 0; f < in.n && !rc; f++) {
        rc = add_input(t, &in.v[f], o->key, &texts);
        done += in.v[f].size;
        sl_progress_update(&prog, done, texts);
    }
    sl_progress_finish(&prog);
    struct punkt_params *p = NULL;
    struct punkt_train_stats st;
    if (!rc && texts == 0)
        rc = sl_err_set(SL_ERR_FORMAT, "no text in the input to train on");
    if (!rc)
        rc = punkt_trainer_finish(t, &p, &st);
    if (!rc)
        rc = punkt_params_write(p, o->out);
    if (!rc)
        sl_info("tokenizer punkt-train: %llu texts, %llu tokens of %llu types, %llu sentence "
                "breaks -> %u abbreviations, %u collocations, %u sentence starters, %u types' "
                "orthographic contexts in '%s'",
                (unsigned long long)st.texts, (unsigned long long)st.tokens,
                (unsigned long long)st.types, (unsigned long long)st.sentence_breaks,
                punkt_map_count(p->abbrev), punkt_map_count(p->colloc),
                punkt_map_count(p->starters), punkt_map_count(p->ortho), o->out);
    punkt_params_free(p);
    punkt_trainer_free(t);
    sl_inputs_release(&in);
    return rc;
}

static int check(void *opts, const struct sl_strlist *operands)
{
    return operands->n ? 0 : sl_err_set(SL_ERR_USAGE, "no inputs given");
}

const struct sl_cmd cmd_tokenizer_punkt_train =
    SL_CMD(cmd_tokenizer_punkt_train_usage, cmd_tokenizer_punkt_train_options, struct opts, check,
           run, .rank0 = 1);
