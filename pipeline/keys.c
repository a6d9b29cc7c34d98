/* The pipeline's stages and their keys: each stage's keys come from its command's option
 * table (key_name for --key-name), with the pipeline's own keys of the stage. */
#include "pipeline/internal.h"

#include "curate/commands.h"
#include "tokenize/commands.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the key tables ------------------------------------------------------------------ */

/* A stage's keys are its command's options (pl_stages[].opts: the table the command parses
 * with), `key_name` for `--key-name`, less --out and the rows marked SL_OPTF_NO_KEY; then
 * the pipeline's own keys of the stage; then in, out, name, quiet and verbose. */

static const struct key common_keys[] = { COMMON, END };

/* clang-format off */
const struct stage_def pl_stages[PL_NSTAGES] = {
    [PL_DOWNLOAD] = { "download", "download", NULL, cmd_download_options, pl_download_own,
                      .docs = 1, .force = "--force", .build = pl_download_build,
                      .report = pl_download_report },
    /* curate's document stages (curate/commands.def): documents in, documents out, --force */
#define SL_CURATE_SOURCE(ID, name, summary)                                                        \
    [PL_##ID] = { #name, #name, NULL, cmd_##name##_options, NULL, .docs = 1, .source = 1,          \
                  .force = "--force", .build = pl_build_docs },
#define SL_CURATE_STAGE(ID, name, summary)                                                         \
    [PL_##ID] = { #name, #name, NULL, cmd_##name##_options, NULL, .docs = 1, .force = "--force",   \
                  .build = pl_build_docs },
#define SL_CURATE_TAGGER(ID, name, summary)                                                        \
    [PL_##ID] = { #name, #name, NULL, cmd_##name##_options, NULL, .force = "--force",              \
                  .build = pl_build_docs },
#define SL_CURATE_MODE(ID, name, mode)                                                             \
    [PL_##ID] = { #name "_" #mode, #name, #mode, cmd_##name##_##mode##_options, NULL, .docs = 1,   \
                  .force = "--force", .build = pl_build_docs },
#include "curate/commands.def"
    [PL_TOKENIZER_TRAIN] = { "tokenizer_train", "tokenizer", "train",
                             cmd_tokenizer_train_options, pl_tokenizer_train_own, .one_map = 1,
                             .build = pl_tokenizer_train_build,
                             .report = pl_tokenizer_train_report },
    [PL_TOKENIZE] = { "tokenize", "tokenize", NULL, cmd_tokenize_options, pl_tokenize_own,
                      .one_map = 1, .build = pl_tokenize_build, .report = pl_tokenize_report },
    [PL_TRAIN] = { "train", "train", NULL, NULL, pl_train_keys, .force = "train.resume=none",
                   .section = pl_train_section },
};
/* clang-format on */

#define MAX_KEYS 64 /* keys of one stage */
#define MAX_KEY  32 /* bytes of a key name */

/* The key of an option row, or 0 when the row is not a key. */
static int option_key(const struct sl_option *o, struct key *k, char *name)
{
    if (o->type == SL_OPT_GROUP || o->type == SL_OPT_QUIET_ || o->type == SL_OPT_VERBOSE_ ||
        !o->long_name || (o->flags & (SL_OPTF_SETTING | SL_OPTF_NO_KEY)) ||
        !strcmp(o->long_name, "out"))
        return 0;
    sl_option_key(o, name, MAX_KEY);
    k->key = name;
    k->opt = o->long_name;
    k->flags = (o->flags & SL_OPTF_PATH) ? F_IN : 0;
    k->help = NULL;
    switch (o->type) {
    case SL_OPT_FLAG:
    case SL_OPT_NEGFLAG:
        k->kind = K_FLAG;
        break;
    case SL_OPT_STRS:
        k->kind = (o->flags & SL_OPTF_KV) ? K_KV : K_REPEAT;
        break;
    default:
        k->kind = (o->flags & SL_OPTF_LIST) ? K_CSV : K_VALUE;
        break;
    }
    return 1;
}

const struct key *pl_stage_keys(int stage)
{
    static struct key keys[PL_NSTAGES][MAX_KEYS];
    static char names[PL_NSTAGES][MAX_KEYS][MAX_KEY];
    static int built[PL_NSTAGES];
    const struct stage_def *d = &pl_stages[stage];
    if (!d->opts)
        return d->own;
    if (built[stage])
        return keys[stage];
    size_t n = 0;
    for (const struct sl_option *o = d->opts; o->type != SL_OPT_END && n < MAX_KEYS - 1; o++)
        n += (size_t)option_key(o, &keys[stage][n], names[stage][n]);
    for (const struct key *k = d->own; k && k->key && n < MAX_KEYS - 1; k++)
        keys[stage][n++] = *k;
    for (const struct key *k = common_keys; k->key && n < MAX_KEYS - 1; k++)
        keys[stage][n++] = *k;
    keys[stage][n] = (struct key)END;
    built[stage] = 1;
    return keys[stage];
}

const char *pl_stage_name(int stage)
{
    return stage >= 0 && stage < PL_NSTAGES ? pl_stages[stage].name : NULL;
}

const char *pl_stage_command(int stage, const char **sub)
{
    if (stage < 0 || stage >= PL_NSTAGES)
        return NULL;
    *sub = pl_stages[stage].sub;
    return pl_stages[stage].cmd;
}

const char *pl_stage_names(void)
{
    static char all[512];
    if (!all[0])
        for (int s = 0; s < PL_NSTAGES; s++)
            snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", s ? ", " : "",
                     pl_stages[s].name);
    return all;
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
        fprintf(f, "%s: sluice %s%s%s\n", d->name, d->cmd, d->sub ? " " : "", d->sub ? d->sub : "");
        for (const struct key *k = pl_stage_keys(s); k->key; k++) {
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
