/* The pipeline's key tables: for each stage, its keys and the options they map to. */
#include "pipeline/internal.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the key tables ------------------------------------------------------------------ */

const struct key pl_download_keys[] = {
    { "url", "url", K_REPEAT, 0, NULL },
    VALIN("url_list", "url-list"),
    VAL("url_template", "url-template"),
    { "file_numbers", "file-numbers", K_CSV, 0, NULL },
    VALIN("checksums", "checksums"),
    VAL("retries", "retries"),
    VAL("retry_wait", "retry-wait"),
    VAL("connect_timeout", "connect-timeout"),
    VAL("stall_timeout", "stall-timeout"),
    FLAG("force", "force"),
    RUNKEY("languages", "languages for {lang} in url_template: a list, or a map language -> "
                        "number of files ({total})"),
    RUNKEY("paths_url", "URL of a list of paths (Common Crawl warc.paths.gz); file_numbers "
                        "picks lines (0-based)"),
    RUNKEY("url_prefix", "prefix of each path of paths_url (default: its scheme and host)"),
    COMMON,
    END,
};

static const struct key extract_keys[] = {
    VAL("format", "format"),
    VAL("text_key", "text-key"),
    VAL("source", "source"),
    VAL("max_record", "max-record"),
    FLAG("keep_truncated", "keep-truncated"),
    FLAG("skip_corrupt", "skip-corrupt"),
    FLAG("rm_inputs", "rm-inputs"),
    VAL("id_prefix", "id-prefix"),
    FLAG("reassign_ids", "reassign-ids"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key clean_keys[] = {
    FLAG("nfkc", "nfkc"),
    FLAG("remove_urls", "remove-urls"),
    FLAG("uncurl_quotes", "uncurl-quotes"),
    FLAG("no_mojibake", "no-mojibake"),
    FLAG("no_entities", "no-entities"),
    VAL("text_key", "text-key"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key filter_keys[] = {
    VALIN("config", "config"),
    VAL("rejected", "rejected"),
    FLAG("annotate", "annotate"),
    FLAG("split_by_language", "split-by-language"),
    { "set", "set", K_KV, 0, NULL },
    VAL("text_key", "text-key"),
    VAL("max_line", "max-line"),
    FLAG("repair_utf8", "repair-utf8"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key decontaminate_keys[] = {
    VALIN("tasks", "tasks"),
    VAL("ngram", "ngram"),
    VAL("min_task_words", "min-task-words"),
    VAL("margin", "margin"),
    VAL("min_length", "min-length"),
    VAL("max_splits", "max-splits"),
    VAL("text_key", "text-key"),
    VAL("level", "level"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key dedup_exact_keys[] = {
    VAL("key", "key"),
    { "norm", "norm", K_CSV, 0, NULL },
    VAL("keep", "keep"),
    VAL("text_key", "text-key"),
    VAL("id_key", "id-key"),
    VAL("max_line", "max-line"),
    VAL("level", "level"),
    FLAG("repair_utf8", "repair-utf8"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key dedup_fuzzy_keys[] = {
    VAL("preset", "preset"),
    VAL("ngram", "ngram"),
    VAL("bands", "bands"),
    VAL("rows", "rows"),
    { "norm", "norm", K_CSV, 0, NULL },
    VAL("seed", "seed"),
    VAL("hash", "hash"),
    FLAG("verify", "verify"),
    VAL("threshold", "threshold"),
    VAL("anchors", "anchors"),
    FLAG("pairs", "pairs"),
    VAL("backend", "backend"),
    { "redis", "redis", K_CSV, 0, NULL },
    VAL("redis_prefix", "redis-prefix"),
    VAL("redis_batch", "redis-batch"),
    VAL("redis_timeout", "redis-timeout"),
    VAL("index_out", "index-out"),
    VALIN("index_in", "index-in"),
    VAL("text_key", "text-key"),
    VAL("id_key", "id-key"),
    VAL("max_line", "max-line"),
    VAL("level", "level"),
    FLAG("repair_utf8", "repair-utf8"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key reshard_keys[] = {
    VAL("shards", "shards"),
    VAL("shard_size", "shard-size"),
    VAL("text_key", "text-key"),
    VAL("max_line", "max-line"),
    VAL("level", "level"),
    FLAG("repair_utf8", "repair-utf8"),
    FLAG("skip_corrupt", "skip-corrupt"),
    VAL("id_prefix", "id-prefix"),
    FLAG("reassign_ids", "reassign-ids"),
    FLAG("force", "force"),
    COMMON,
    END,
};

static const struct key tokenizer_train_keys[] = {
    VAL("model_type", "model-type"),
    VAL("vocab_size", "vocab-size"),
    VAL("json_key", "json-key"),
    VAL("input_sentence_size", "input-sentence-size"),
    VAL("seed", "seed"),
    VAL("character_coverage", "character-coverage"),
    FLAG("byte_fallback", "byte-fallback"),
    FLAG("split_digits", "split-digits"),
    { "user_defined_symbols", "user-defined-symbols", K_CSV, 0, NULL },
    { "control_symbols", "control-symbols", K_CSV, 0, NULL },
    VAL("pad_id", "pad-id"),
    VAL("unk_id", "unk-id"),
    VAL("bos_id", "bos-id"),
    VAL("eos_id", "eos-id"),
    VAL("max_sentence_length", "max-sentence-length"),
    VAL("threads", "threads"),
    { "spm_option", "spm-option", K_KV, 0, NULL },
    RUNKEY("prefix", "file name of the model in the output directory (default tokenizer)"),
    COMMON,
    END,
};

static const struct key tokenize_keys[] = {
    VALIN("tokenizer", "tokenizer"),
    { "json_key", "json-key", K_REPEAT, 0, NULL },
    FLAG("append_eod", "append-eod"),
    VAL("eod_id", "eod-id"),
    VAL("workers", "workers"),
    VAL("max_doc_size", "max-doc-size"),
    RUNKEY("prefix", "name of the token shards in the output directory (default: the "
                     "pipeline's name)"),
    COMMON,
    END,
};

const struct key pl_train_keys[] = {
    RUNKEY("config", "the model and run config (configs/models/*.yaml); required"),
    RUNKEY("model", "a map of model.* overrides (default vocab_size: tokenizer_train's)"),
    RUNKEY("train", "a map of train.* overrides (steps, seq_len, micro_batch_size, ...)"),
    RUNKEY("optim", "a map of optim.* overrides (lr, warmup_steps, ...)"),
    RUNKEY("data", "a map of data.* overrides (default prefix: the tokenize stage's)"),
    RUNKEY("eval", "a map of eval.* overrides (interval, iters)"),
    RUNKEY("checkpoint", "a map of checkpoint.* overrides (default dir: OUT/checkpoints)"),
    RUNKEY("log", "a map of log.* overrides (default file: OUT/log.jsonl)"),
    RUNKEY("debug", "a map of debug.* overrides"),
    RUNKEY("in", "the token shards (a prefix or a list); default: the tokenize stage's"),
    RUNKEY("out", "output directory; default: WORK/train"),
    FLAG("quiet", "quiet"),
    FLAG("verbose", "verbose"),
    END,
};

const struct stage_def pl_stages[PL_NSTAGES] = {
    [PL_DOWNLOAD] = { "download", "download", NULL, pl_download_keys, 1, 1 },
    [PL_EXTRACT] = { "extract", "extract", NULL, extract_keys, 1, 1 },
    [PL_CLEAN] = { "clean", "clean", NULL, clean_keys, 1, 1 },
    [PL_FILTER] = { "filter", "filter", NULL, filter_keys, 1, 1 },
    [PL_DECONTAMINATE] = { "decontaminate", "decontaminate", NULL, decontaminate_keys, 1, 1 },
    [PL_DEDUP_EXACT] = { "dedup_exact", "dedup", "exact", dedup_exact_keys, 1, 1 },
    [PL_DEDUP_FUZZY] = { "dedup_fuzzy", "dedup", "fuzzy", dedup_fuzzy_keys, 1, 1 },
    [PL_RESHARD] = { "reshard", "reshard", NULL, reshard_keys, 1, 1 },
    [PL_TOKENIZER_TRAIN] = { "tokenizer_train", "tokenizer", "train", tokenizer_train_keys, 0, 0 },
    [PL_TOKENIZE] = { "tokenize", "tokenize", NULL, tokenize_keys, 0, 0 },
    [PL_TRAIN] = { "train", "train", NULL, pl_train_keys, 0, 1 },
};

const char *pl_stage_name(int stage)
{
    return stage >= 0 && stage < PL_NSTAGES ? pl_stages[stage].name : NULL;
}

const struct key *pl_find_key(const struct key *t, const char *k)
{
    for (; t->key; t++)
        if (!strcmp(t->key, k))
            return t;
    return NULL;
}

void pl_print_keys(FILE *f)
{
    for (int s = 0; s < PL_NSTAGES; s++) {
        const struct stage_def *d = &pl_stages[s];
        if (!d->keys)
            continue;
        fprintf(f, "%s: sluice %s%s%s\n", d->name, d->cmd, d->sub ? " " : "", d->sub ? d->sub : "");
        for (const struct key *k = d->keys; k->key; k++) {
            if (k->kind == K_RUN) {
                fprintf(f, "  %-22s %s\n", k->key, k->help);
                continue;
            }
            const char *how = k->kind == K_FLAG     ? "true: "
                              : k->kind == K_REPEAT ? "each of a list: "
                              : k->kind == K_CSV    ? "a list, comma-joined: "
                              : k->kind == K_KV     ? "each key: value of a map as k=v: "
                                                    : "";
            fprintf(f, "  %-22s %s--%s%s\n", k->key, how, k->opt,
                    k->kind == K_FLAG ? ""
                    : k->kind == K_KV ? " K=V"
                                      : " VALUE");
        }
    }
}
