/* The commands of curate/. Declared here and gathered by cli/commands.h
 * into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_CURATE_COMMANDS_H
#define SL_CURATE_COMMANDS_H

#include "core/options.h"

/* The commands (core/options.h: usage text, option table, option struct size, run), which
 * the command table (cli/table.c) names. cmd_dedup runs when `sluice dedup` names no mode
 * (it says so); cmd_dedup_exact and cmd_dedup_fuzzy are its modes. */
extern const struct sl_cmd cmd_reshard;
extern const struct sl_cmd cmd_download;
extern const struct sl_cmd cmd_extract;
extern const struct sl_cmd cmd_dedup;
extern const struct sl_cmd cmd_dedup_exact;
extern const struct sl_cmd cmd_dedup_fuzzy;
extern const struct sl_cmd cmd_clean;
extern const struct sl_cmd cmd_filter;
extern const struct sl_cmd cmd_decontaminate;
extern const struct sl_cmd cmd_classifier;
extern const struct sl_cmd cmd_stats;

/* Each command's usage text (synopsis lines, "", description; NULL-terminated) and option
 * table. The option tables of the stages `sluice run` runs: the dispatcher parses with the
 * table, the command derives its settings from the rows marked SL_OPTF_OUTPUT, and the
 * pipeline derives the stage's keys from it (pipeline/keys.c). */
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
