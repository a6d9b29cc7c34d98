/* The commands of the sluice binary, in one table: `sluice --help` (and so the docs check,
 * tests/cli/t_docs.sh and scripts/sync-command-docs.sh, which read it), the dispatcher in
 * cli/main.c and the stages `sluice run` runs (cli/run.c) all look commands up here. */
#include "cli/commands.h"

#include <string.h>

const struct command sl_commands[] = {
    { "run", cmd_run, "run a pipeline's stages in order (configs/pipelines/*.yaml), resumable" },
    /* in the order data flows */
    { "download", cmd_download,
      "fetch corpus files over HTTP(S): resume, retry, verify checksums" },
    { "extract", cmd_extract,
      "WARC/WET, HTML, Wikipedia, arXiv, Pile, C4, JSONL -> JSONL documents" },
    { "clean", cmd_clean, "repair text: mojibake, HTML entities, controls, NFC, whitespace" },
    { "filter", cmd_filter, "quality filters: Gopher, C4, FineWeb, NeMo, regex, language ID" },
    { "decontaminate", cmd_decontaminate, "remove benchmark text (task n-grams) from documents" },
    { "classifier", cmd_classifier, "train a fastText quality classifier" },
    { "stats", cmd_stats, "statistics of documents: lengths, languages, filter score histograms" },
    { "dedup", cmd_dedup, "remove exact duplicates, or near-duplicates with MinHash/LSH" },
    { "reshard", cmd_reshard, "split JSONL inputs into balanced part-NNNNN.jsonl.zst shards" },
    { "tokenizer", cmd_tokenizer, "train a SentencePiece tokenizer on JSONL or text" },
    { "tokenize", cmd_tokenize, "JSONL -> Megatron PREFIX_text_document.bin/.idx token shards" },
    { "dataset", cmd_dataset, "inspect, verify, merge and decode .bin/.idx token shards" },
    { "train", cmd_train, "train a GPT or Llama model on .bin/.idx token shards (CPU or GPU)" },
    { "generate", cmd_generate, "continue a prompt with a training checkpoint (CPU, sampling)" },
    { "export", cmd_export, "export a training checkpoint (hf: Hugging Face transformers)" },
    { "eval", cmd_eval, "held-out loss and zero-shot task scores of a training checkpoint" },
    { "import", cmd_import,
      "import a Hugging Face GPT-2/Llama checkpoint as a training checkpoint" },
};

const size_t sl_ncommands = sizeof(sl_commands) / sizeof(sl_commands[0]);

const struct command *sl_command_find(const char *name)
{
    for (size_t i = 0; i < sl_ncommands; i++)
        if (strcmp(sl_commands[i].name, name) == 0)
            return &sl_commands[i];
    return NULL;
}
