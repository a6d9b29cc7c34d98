/* The commands of the sluice binary, in one table: `sluice --help` and `sluice help NAME`
 * (and so the docs check, tests/cli/t_docs.sh and scripts/sync-command-docs.sh, which read
 * them), the dispatcher (cli/dispatch.c) and the stages `sluice run` runs (cli/run.c) all
 * look commands up here. */
#include "cli/commands.h"

#include "core/options.h"

#include <string.h>

/* The usual row: command NAME runs cmd_NAME (declared in its component's commands.h). */
#define COMMAND(NAME, SUMMARY)                                                                     \
    {                                                                                              \
        .name = #NAME, .summary = SUMMARY, .cmd = &cmd_##NAME                                      \
    }

static const struct command dedup_modes[] = {
    { .name = "exact", .cmd = &cmd_dedup_exact },
    { .name = "fuzzy", .cmd = &cmd_dedup_fuzzy },
    { .name = NULL },
};

static const struct command tokenizer_subs[] = {
    { .name = "train", .cmd = &cmd_tokenizer_train },
    { .name = "punkt-train", .cmd = &cmd_tokenizer_punkt_train },
    { .name = NULL },
};

const struct command sl_commands[] = {
    { .name = "run",
      .summary = "run a pipeline's stages in order (configs/pipelines/*.yaml), resumable",
      .cmd = &cmd_run,
      .make_usage = cmd_run_usage },
    /* in the order data flows */
    COMMAND(download, "fetch corpus files over HTTP(S): resume, retry, verify checksums"),
    COMMAND(extract, "WARC/WET, HTML, Wikipedia, arXiv, Pile, C4, JSONL -> JSONL documents"),
    COMMAND(clean, "repair text: mojibake, HTML entities, controls, NFC, whitespace"),
    COMMAND(filter, "quality filters: Gopher, C4, FineWeb, NeMo, regex, language ID"),
    COMMAND(decontaminate, "remove benchmark text (task n-grams) from documents"),
    COMMAND(classifier, "train a fastText quality classifier"),
    COMMAND(stats, "statistics of documents: lengths, languages, filter score histograms"),
    /* an unknown mode: cmd_dedup says so */
    { .name = "dedup",
      .summary = "remove exact duplicates, or near-duplicates with MinHash/LSH",
      .cmd = &cmd_dedup,
      .usage = cmd_dedup_usage,
      .subs = dedup_modes },
    COMMAND(reshard, "split JSONL inputs into balanced part-NNNNN.jsonl.zst shards"),
    { .name = "tokenizer",
      .summary = "train a SentencePiece tokenizer, or a Punkt sentence splitter, on JSONL or text",
      .usage = cmd_tokenizer_usage,
      .subs = tokenizer_subs,
      .fallback = &tokenizer_subs[0] },
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

const char *const *sl_command_usage(const struct command *c)
{
    if (c->make_usage)
        return c->make_usage();
    return c->usage ? c->usage : c->cmd->usage;
}

void sl_command_help(FILE *f, const struct command *c)
{
    sl_usage_print(f, sl_command_usage(c), c->subs ? NULL : c->cmd->options);
}
