/* The commands of the sluice binary. Each is implemented in its component's folder, declared
 * in that component's commands.h (components never include cli/: docs/dev.md, Layers) and
 * registered in the table in cli/table.c. A command gets argv[0] = its name and returns
 * 0 (ok), 1 (failure) or 2 (usage error); it prints its own usage on -h (stdout, 0). */
#ifndef SL_CLI_COMMANDS_H
#define SL_CLI_COMMANDS_H

#include "curate/commands.h"
#include "tokenize/commands.h"
#include "train/commands.h"

#include <stddef.h>

int cmd_run(int argc, const char **argv);

/* A command: its name, its function (argv[0] = the name; returns 0, 1 or 2) and the line
 * `sluice --help` shows. */
struct command {
    const char *name;
    int (*fn)(int argc, const char **argv);
    const char *summary;
};

/* The table (cli/table.c), in the order `sluice --help` lists them. */
extern const struct command sl_commands[];
extern const size_t sl_ncommands;
/* The command called `name`, or NULL. */
const struct command *sl_command_find(const char *name);

#endif
