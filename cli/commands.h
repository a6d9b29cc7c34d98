/* The commands of the sluice binary. Each is implemented in its component's folder, declared
 * in that component's commands.h (components never include cli/: docs/dev.md, Layers) and
 * registered in the table in cli/main.c. A command gets argv[0] = its name and returns
 * 0 (ok), 1 (failure) or 2 (usage error); it prints its own usage on -h (stdout, 0). */
#ifndef SL_CLI_COMMANDS_H
#define SL_CLI_COMMANDS_H

#include "curate/commands.h"
#include "tokenize/commands.h"
#include "train/commands.h"

int cmd_run(int argc, const char **argv);

#endif
