/* The commands of train/: train, generate, export, import and eval. Declared here and gathered by
 * cli/commands.h into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_TRAIN_COMMANDS_H
#define SL_TRAIN_COMMANDS_H

#include "core/options.h"

/* The commands (see curate/commands.h). */
extern const struct sl_cmd cmd_train;
extern const struct sl_cmd cmd_generate;
extern const struct sl_cmd cmd_export;
extern const struct sl_cmd cmd_import;
extern const struct sl_cmd cmd_eval;

/* Each command's usage text and option table (see curate/commands.h). */
extern const char *const cmd_train_usage[];
extern const char *const cmd_generate_usage[];
extern const char *const cmd_export_usage[];
extern const char *const cmd_import_usage[];
extern const char *const cmd_eval_usage[];
extern const struct sl_option cmd_train_options[];
extern const struct sl_option cmd_generate_options[];
extern const struct sl_option cmd_export_options[];
extern const struct sl_option cmd_import_options[];
extern const struct sl_option cmd_eval_options[];

#endif
