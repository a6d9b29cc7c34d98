/* The commands of the sluice binary. Each is implemented in its component's folder as a
 * struct sl_cmd (core/options.h: usage text, option table, option struct size, run),
 * declared in that component's commands.h (components never include cli/: docs/dev.md,
 * Layers), and named in the table in cli/table.c. The dispatcher (cli/dispatch.c) does
 * for every command what none repeats: allocates its option struct, applies the defaults,
 * parses, answers -h (stdout, 0), refuses usage errors (stderr, 2), runs it and reports
 * its error (stderr, 1). */
#ifndef SL_CLI_COMMANDS_H
#define SL_CLI_COMMANDS_H

#include "curate/commands.h"
#include "tokenize/commands.h"
#include "train/commands.h"

#include <stddef.h>
#include <stdio.h>

extern const struct sl_cmd cmd_run;
/* sluice run's usage text, made on the first call: its stage list comes from the pipeline's
 * stage table. */
const char *const *cmd_run_usage(void);
extern const struct sl_option cmd_run_options[];

/* A row of the command table: a command (name, the line `sluice --help` shows, what runs)
 * or a subcommand (name, what runs). A command of subcommands (dedup, tokenizer) has a
 * table of them, chosen by argv[1] and ended by a row with no name, and its own usage
 * text (`sluice NAME -h`: no options); when argv[1] names none, its `fallback`
 * subcommand runs, named by the first operand instead (`sluice tokenizer --vocab-size 8000
 * train IN`), or else its own cmd (which may have no option table: every argument is an
 * operand). */
struct command {
    const char *name;
    const char *summary;
    const struct sl_cmd *cmd;
    const char *const *(*make_usage)(void); /* a usage text made at run time (sluice run) */
    const char *const *usage;               /* a command of subcommands: its own */
    const struct command *subs;
    const struct command *fallback;
};

/* The table (cli/table.c), in the order `sluice --help` lists them. */
extern const struct command sl_commands[];
extern const size_t sl_ncommands;
/* The command called `name`, or NULL. */
const struct command *sl_command_find(const char *name);
/* Subcommand `name` of c, or NULL. */
const struct command *sl_command_sub(const struct command *c, const char *name);
/* c's usage text: synopsis lines, "", description. */
const char *const *sl_command_usage(const struct command *c);
/* Print what `sluice NAME [SUB] -h` prints, from the table: c's usage text and options (a
 * command of subcommands: its usage text alone). */
void sl_command_help(FILE *f, const struct command *c);

/* Run command c (argv[0] its name) as `sluice NAME ...` does once MPI is up: its
 * subcommand's or its own parse, -h, usage errors, run and error report (cli/dispatch.c).
 * Returns the exit code: 0, 1 or 2 (or what the command's run returned). */
int sl_command_run(const struct command *c, int argc, const char **argv);

/* Check a command line as `sluice run --dry-run` does, from the table alone: parsed with
 * the option table of the command (or of its subcommand), nothing run and nothing
 * printed; the checks a command makes itself after parsing are not made. 0, or
 * SL_ERR_USAGE with the parser's message. */
int sl_command_check(const struct command *c, int argc, const char **argv);

#endif
