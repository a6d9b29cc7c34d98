/* The commands of tokenize/: tokenize, tokenizer and dataset. Declared here and gathered by
 * cli/commands.h into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_TOKENIZE_COMMANDS_H
#define SL_TOKENIZE_COMMANDS_H

#include "core/options.h"

int cmd_tokenize(int argc, const char **argv);
int cmd_tokenizer(int argc, const char **argv);
int cmd_dataset(int argc, const char **argv);
/* `sluice tokenizer punkt-train` (argv[0] is "punkt-train") */
int cmd_tokenizer_punkt_train(int argc, const char **argv);

/* Usage texts and option tables (see curate/commands.h); tokenize's and tokenizer's are
 * those of the stages `sluice run` runs. */
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
