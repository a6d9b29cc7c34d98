/* The commands of curate/. Declared here and gathered by cli/commands.h
 * into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_CURATE_COMMANDS_H
#define SL_CURATE_COMMANDS_H

#include "core/options.h"

int cmd_reshard(int argc, const char **argv);
int cmd_download(int argc, const char **argv);
int cmd_extract(int argc, const char **argv);
int cmd_dedup(int argc, const char **argv);
int cmd_clean(int argc, const char **argv);
int cmd_filter(int argc, const char **argv);
int cmd_decontaminate(int argc, const char **argv);
int cmd_classifier(int argc, const char **argv);
int cmd_stats(int argc, const char **argv);

/* The option tables of the stages `sluice run` runs: each command parses with its table,
 * derives its settings from the rows marked SL_OPTF_OUTPUT, and the pipeline derives the
 * stage's keys from it (pipeline/keys.c). */
extern const struct sl_option cmd_download_options[];
extern const struct sl_option cmd_extract_options[];
extern const struct sl_option cmd_clean_options[];
extern const struct sl_option cmd_filter_options[];
extern const struct sl_option cmd_decontaminate_options[];
extern const struct sl_option cmd_dedup_exact_options[];
extern const struct sl_option cmd_dedup_fuzzy_options[];
extern const struct sl_option cmd_reshard_options[];

#endif
