/* The commands of train/: train, generate, export, import and eval. Declared here and gathered by
 * cli/commands.h into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_TRAIN_COMMANDS_H
#define SL_TRAIN_COMMANDS_H

int cmd_train(int argc, const char **argv);
int cmd_generate(int argc, const char **argv);
int cmd_export(int argc, const char **argv);
int cmd_import(int argc, const char **argv);
int cmd_eval(int argc, const char **argv);

#endif
