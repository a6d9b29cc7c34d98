/* The commands of the sluice binary, in one table: `sluice --help` and `sluice help NAME`
 * (and so the docs check, tests/cli/t_docs.sh and scripts/sync-command-docs.sh, which read
 * them), the dispatcher (cli/dispatch.c) and the stages `sluice run` runs (cli/cmd_run.c) all
 * look commands up here. */
#include "cli/commands.h"

#include "core/options.h"

#include <string.h>

/* The usual row: command NAME runs cmd_NAME (declared in its component's commands.h). */
#define COMMAND(NAME, SUMMARY)                                                                     \
    {                                                                                              \
        .name = #NAME, .summary = SUMMARY, .cmd = &cmd_##NAME                                      \
    }

/* The modes of curate's commands of subcommands (curate/commands.def): dedup_modes[] */
/* clang-format off */
#define SL_CURATE_MODES(NAME, SUMMARY) static const struct command NAME##_modes[] = {
#define SL_CURATE_MODE(ID, NAME, MODE) { .name = #MODE, .cmd = &cmd_##NAME##_##MODE },
#define SL_CURATE_MODES_END(NAME)      { .name = NULL } };
/* clang-format on */
#include "curate/commands.def"

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
/* in the order data flows: curate's (curate/commands.def), then the tokenizer's */
#define SL_CURATE_COMMAND(NAME, SUMMARY) COMMAND(NAME, SUMMARY),
#define SL_CURATE_MODES(NAME, SUMMARY)                                                             \
    { .name = #NAME,                                                                               \
      .summary = SUMMARY,                                                                          \
      .cmd = &cmd_##NAME,                                                                          \
      .usage = cmd_##NAME##_usage,                                                                 \
      .subs = NAME##_modes },
#include "curate/commands.def"
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
