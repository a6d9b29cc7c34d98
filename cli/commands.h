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
#include <stdio.h>

int cmd_run(int argc, const char **argv);
/* sluice run's usage text, made on the first call: its stage list comes from the pipeline's
 * stage table. */
const char *const *cmd_run_usage(void);
extern const struct sl_option cmd_run_options[];

/* A command: its name, its function (argv[0] = the name; returns 0, 1 or 2), the line
 * `sluice --help` shows, and what its -h prints: its usage text (synopsis lines, "",
 * description; or made by make_usage) and its option table, which the command parses
 * with. A command of subcommands (dedup) has no options of its own but a table of its
 * subcommands (name, usage, options; fn and summary NULL), ended by a row with no name. */
struct command {
    const char *name;
    int (*fn)(int argc, const char **argv);
    const char *summary;
    const char *const *usage;
    const char *const *(*make_usage)(void);
    const struct sl_option *options;
    const struct command *subs;
};

/* The table (cli/table.c), in the order `sluice --help` lists them. */
extern const struct command sl_commands[];
extern const size_t sl_ncommands;
/* The command called `name`, or NULL. */
const struct command *sl_command_find(const char *name);
/* Subcommand `name` of c, or NULL. */
const struct command *sl_command_sub(const struct command *c, const char *name);
/* Print what `sluice NAME [SUB] -h` prints, from the table: c's usage text and options. */
void sl_command_help(FILE *f, const struct command *c);

#endif
