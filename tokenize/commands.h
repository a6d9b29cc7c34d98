/* The commands of tokenize/: tokenize, tokenizer and dataset. Declared here and gathered by
 * cli/commands.h into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_TOKENIZE_COMMANDS_H
#define SL_TOKENIZE_COMMANDS_H

#include "core/options.h"

/* The commands (see curate/commands.h): `sluice tokenize`, `sluice tokenizer train`,
 * `sluice tokenizer punkt-train` and `sluice dataset`. */
extern const struct sl_cmd cmd_tokenize;
extern const struct sl_cmd cmd_tokenizer_train;
extern const struct sl_cmd cmd_tokenizer_punkt_train;
extern const struct sl_cmd cmd_dataset;

/* Usage texts and option tables (see curate/commands.h); tokenize's and tokenizer train's
 * are those of the stages `sluice run` runs. cmd_tokenizer_usage is `sluice tokenizer`'s
 * own. */
extern const char *const cmd_tokenize_usage[];
extern const char *const cmd_tokenizer_usage[];
extern const char *const cmd_tokenizer_train_usage[];
extern const char *const cmd_tokenizer_punkt_train_usage[];
extern const char *const cmd_dataset_usage[];
extern const struct sl_option cmd_tokenize_options[];
extern const struct sl_option cmd_tokenizer_train_options[];
extern const struct sl_option cmd_tokenizer_punkt_train_options[];
extern const struct sl_option cmd_dataset_options[];

#endif
