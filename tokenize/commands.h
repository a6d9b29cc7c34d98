/* The commands of tokenize/: tokenize, tokenizer and dataset. Declared here and gathered by
 * cli/commands.h into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_TOKENIZE_COMMANDS_H
#define SL_TOKENIZE_COMMANDS_H

int cmd_tokenize(int argc, const char **argv);
int cmd_tokenizer(int argc, const char **argv);
int cmd_dataset(int argc, const char **argv);

#endif
