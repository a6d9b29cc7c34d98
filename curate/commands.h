/* The commands of curate/. Declared here, from the list curate/commands.def, and gathered by
 * cli/commands.h into the command table of cli/table.c (docs/dev.md, Layers). */
#ifndef SL_CURATE_COMMANDS_H
#define SL_CURATE_COMMANDS_H

#include "core/options.h"

/* For each command of curate/commands.def: the command (core/options.h: usage text, option
 * table, option struct size, run), which the command table (cli/table.c) names, its usage
 * text (synopsis lines, "", description; NULL-terminated) and its option table. The option
 * tables of the stages `sluice run` runs: the dispatcher parses with the table, the command
 * derives its settings from the rows marked SL_OPTF_OUTPUT, and the pipeline derives the
 * stage's keys from it (pipeline/keys.c). cmd_dedup runs when `sluice dedup` names no mode
 * (it says so); cmd_dedup_exact and cmd_dedup_fuzzy are its modes. */
#define SL_CURATE_COMMAND(name, summary)                                                           \
    extern const struct sl_cmd cmd_##name;                                                         \
    extern const char *const cmd_##name##_usage[];                                                 \
    extern const struct sl_option cmd_##name##_options[];
#define SL_CURATE_MODES(name, summary)                                                             \
    extern const struct sl_cmd cmd_##name;                                                         \
    extern const char *const cmd_##name##_usage[];
#define SL_CURATE_MODE(ID, name, mode) SL_CURATE_COMMAND(name##_##mode, )
#include "curate/commands.def"

#endif
