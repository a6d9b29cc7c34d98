/* The commands of the sluice binary, in one table: `sluice --help` and `sluice help NAME`
 * (and so the docs check, tests/cli/t_docs.sh and scripts/sync-command-docs.sh, which read
 * them), the dispatcher in cli/main.c and the stages `sluice run` runs (cli/run.c) all look
 * commands up here. */
#include "cli/commands.h"

#include "core/options.h"

#include <string.h>

/* The usual row: command NAME runs cmd_NAME, whose usage text is cmd_NAME_usage and whose
 * option table is cmd_NAME_options (declared in its component's commands.h). */
#define COMMAND(NAME, SUMMARY)                                                                     \
    {                                                                                              \
        .name = #NAME, .fn = cmd_##NAME, .summary = SUMMARY, .usage = cmd_##NAME##_usage,          \
        .options = cmd_##NAME##_options                                                            \
    }

static const struct command dedup_modes[] = {
    { .name = "exact", .usage = cmd_dedup_exact_usage, .options = cmd_dedup_exact_options },
    { .name = "fuzzy", .usage = cmd_dedup_fuzzy_usage, .options = cmd_dedup_fuzzy_options },
    { .name = NULL },
};

static const struct command tokenizer_subs[] = {
    { .name = "train", .usage = cmd_tokenizer_train_usage, .options = cmd_tokenizer_train_options },
    { .name = "punkt-train",
      .usage = cmd_tokenizer_punkt_train_usage,
      .options = cmd_tokenizer_punkt_train_options },
    { .name = NULL },
};

const struct command sl_commands[] = {
    { .name = "run",
      .fn = cmd_run,
      .summary = "run a pipeline's stages in order (configs/pipelines/*.yaml), resumable",
      .make_usage = cmd_run_usage,
      .options = cmd_run_options },
    /* in the order data flows */
    COMMAND(download, "fetch corpus files over HTTP(S): resume, retry, verify checksums"),
    COMMAND(extract, "WARC/WET, HTML, Wikipedia, arXiv, Pile, C4, JSONL -> JSONL documents"),
    COMMAND(clean, "repair text: mojibake, HTML entities, controls, NFC, whitespace"),
    COMMAND(filter, "quality filters: Gopher, C4, FineWeb, NeMo, regex, language ID"),
    COMMAND(decontaminate, "remove benchmark text (task n-grams) from documents"),
    COMMAND(classifier, "train a fastText quality classifier"),
    COMMAND(stats, "statistics of documents: lengths, languages, filter score histograms"),
    { .name = "dedup",
      .fn = cmd_dedup,
      .summary = "remove exact duplicates, or near-duplicates with MinHash/LSH",
      .usage = cmd_dedup_usage,
      .subs = dedup_modes },
    COMMAND(reshard, "split JSONL inputs into balanced part-NNNNN.jsonl.zst shards"),
    { .name = "tokenizer",
      .fn = cmd_tokenizer,
      .summary = "train a SentencePiece tokenizer, or a Punkt sentence splitter, on JSONL or text",
      .usage = cmd_tokenizer_usage,
      .subs = tokenizer_subs },
    COMMAND(tokenize, "JSONL -> Megatron PREFIX_text_document.bin/.idx token shards"),
    COMMAND(dataset, "inspect, verify, merge and decode .bin/.idx token shards"),
    COMMAND(train, "train a GPT or Llama model on .bin/.idx token shards (CPU or GPU)"),
    COMMAND(generate, "continue a prompt with a training checkpoint (CPU, sampling)"),
    COMMAND(export, "export a training checkpoint (hf: Hugging Face transformers)"),
    COMMAND(eval, "held-out loss and zero-shot task scores of a training checkpoint"),
    COMMAND(import, "import a Hugging Face GPT-2/Llama checkpoint as a training checkpoint"),
};

const size_t sl_ncommands = sizeof(sl_commands) / sizeof(sl_commands[0]);

const struct command *sl_command_find(const char *name)
{
    for (size_t i = 0; i < sl_ncommands; i++)
        if (strcmp(sl_commands[i].name, name) == 0)
            return &sl_commands[i];
    return NULL;
}

const struct command *sl_command_sub(const struct command *c, const char *name)
{
    for (const struct command *s = c->subs; s && s->name; s++)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

void sl_command_help(FILE *f, const struct command *c)
{
    sl_usage_print(f, c->make_usage ? c->make_usage() : c->usage, c->options);
}
