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

/* Each command's usage text (synopsis lines, "", description; NULL-terminated) and option
 * table, which it prints on -h (sl_usage_print) and the command table (cli/table.c)
 * points to. The option tables of the stages `sluice run` runs: each command parses with
 * its table, derives its settings from the rows marked SL_OPTF_OUTPUT, and the pipeline
 * derives the stage's keys from it (pipeline/keys.c). */
extern const char *const cmd_reshard_usage[];
extern const char *const cmd_download_usage[];
extern const char *const cmd_extract_usage[];
extern const char *const cmd_dedup_usage[];
extern const char *const cmd_dedup_exact_usage[];
extern const char *const cmd_dedup_fuzzy_usage[];
extern const char *const cmd_clean_usage[];
extern const char *const cmd_filter_usage[];
extern const char *const cmd_decontaminate_usage[];
extern const char *const cmd_classifier_usage[];
extern const char *const cmd_stats_usage[];
extern const struct sl_option cmd_classifier_options[];
extern const struct sl_option cmd_stats_options[];
extern const struct sl_option cmd_download_options[];
extern const struct sl_option cmd_extract_options[];
extern const struct sl_option cmd_clean_options[];
extern const struct sl_option cmd_filter_options[];
extern const struct sl_option cmd_decontaminate_options[];
extern const struct sl_option cmd_dedup_exact_options[];
extern const struct sl_option cmd_dedup_fuzzy_options[];
extern const struct sl_option cmd_reshard_options[];

/* The document stages of curate/ that `sluice run` runs, in the order data flows through
 * them: X(ID, section, command, subcommand, option table). Each reads the documents of the
 * stage before it and writes documents; its section's keys are its options (pipeline/keys.c:
 * key_name for --key-name). A new stage of this kind is one line here (docs/dev.md). */
#define SL_CURATE_STAGES(X)                                                                        \
    X(EXTRACT, "extract", "extract", NULL, cmd_extract_options)                                    \
    X(CLEAN, "clean", "clean", NULL, cmd_clean_options)                                            \
    X(FILTER, "filter", "filter", NULL, cmd_filter_options)                                        \
    X(DECONTAMINATE, "decontaminate", "decontaminate", NULL, cmd_decontaminate_options)            \
    X(DEDUP_EXACT, "dedup_exact", "dedup", "exact", cmd_dedup_exact_options)                       \
    X(DEDUP_FUZZY, "dedup_fuzzy", "dedup", "fuzzy", cmd_dedup_fuzzy_options)                       \
    X(RESHARD, "reshard", "reshard", NULL, cmd_reshard_options)

#endif
