/* sluice: global options, MPI set-up, help and suggestions; the command table is in
 * cli/table.c, the dispatcher that runs a command in cli/dispatch.c. */
#include "cli/commands.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stage.h"
#include "core/world.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_help(FILE *f)
{
    fprintf(f, "usage: sluice [--version] [--help] [-q | -v] <command> [<args>]\n\n"
               "sluice turns raw text corpora into training-ready token shards.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sl_ncommands; i++)
        fprintf(f, "   %-12s %s\n", sl_commands[i].name, sl_commands[i].summary);
    fprintf(f, "\n'sluice help <command>' or 'sluice <command> -h' shows a command's options.\n"
               "Every command runs alone or under mpirun/srun unchanged.\n");
}

static int unknown_command(const char *name)
{
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    for (size_t i = 0; i < sl_ncommands; i++) {
        size_t d = sl_edit_distance(name, sl_commands[i].name);
        /* a prefix is a good suggestion too */
        if (strncmp(sl_commands[i].name, name, strlen(name)) == 0)
            d = d < 1 ? d : 1;
        if (d < bestd) {
            bestd = d;
            best = sl_commands[i].name;
        }
    }
    fprintf(stderr, "sluice: '%s' is not a sluice command. See 'sluice --help'.\n", name);
    if (best && bestd <= (strlen(name) > 4 ? 3u : 2u))
        fprintf(stderr, "\nThe most similar command is\n\t%s\n", best);
    return 2;
}

static void on_oom(size_t size)
{
    /* the size asked and what was going on; no allocation from here on */
    char msg[1024];
    const char *what = sl_oom_context_get();
    int n = snprintf(msg, sizeof(msg),
                     "%s: fatal: out of memory: %.1f MB could not be allocated%s%s\n"
                     "hint: more memory for the job (ulimit -v, the scheduler's limit), or "
                     "fewer threads or ranks on this host\n",
                     sl_log_prog(), (double)size / 1e6, what ? " while " : "", what ? what : "");
    if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0) {
        /* nothing more can be done */
    }
    sl_world_abort(sl_world_get(), 1);
}

/* the MPI watchdog found a rank lost (core/world.h): say which, and stop the job */
static void on_lost(const char *what)
{
    char msg[1024];
    int n = snprintf(msg, sizeof(msg), "%s: error: %s\n", sl_log_prog(), what);
    if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0) {
        /* nothing more can be done */
    }
    sl_world_abort(sl_world_get(), 1);
}

static int run(const struct command *c, int argc, const char **argv)
{
    struct sl_world *w = sl_world_get();
    sl_world_on_lost(on_lost);
    int rc = sl_world_init(w, &argc, (char ***)&argv);
    if (rc) {
        fprintf(stderr, "sluice: error: cannot start MPI: %s\n", sl_err_msg());
        return 1;
    }
    sl_log_set_rank(w->rank, w->size);
    char prog[64];
    snprintf(prog, sizeof(prog), "sluice %s", c->name);
    sl_log_set_prog(prog);
    /* Only rank 0 talks at info level, unless asked for more. */
    if (w->rank != 0 && sl_log_level() == SL_LOG_INFO)
        sl_log_set_level(SL_LOG_WARN);
    rc = sl_command_run(c, argc, argv);
    fflush(stdout);
    if (rc == 1 && w->size > 1)
        sl_world_abort(w, 1); /* one rank failed: do not leave the others waiting */
    sl_world_finalize(w);
    return rc;
}

int main(int argc, char **argv)
{
    sl_set_oom_handler(on_oom);
    signal(SIGPIPE, SIG_IGN);
    sl_atomic_install_signal_cleanup();

    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--version")) {
            printf("sluice %s\n", sl_version());
            return 0;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            print_help(stdout);
            return 0;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            sl_log_set_level(SL_LOG_QUIET);
        } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            sl_log_set_level(sl_log_level() < SL_LOG_DEBUG ? sl_log_level() + 1 : SL_LOG_DEBUG);
        } else {
            fprintf(stderr, "sluice: unknown option '%s'\n\n", a);
            print_help(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        print_help(stderr);
        return 2;
    }
    const char *name = argv[i];
    if (!strcmp(name, "help")) {
        if (i + 1 >= argc) {
            print_help(stdout);
            return 0;
        }
        const struct command *c = sl_command_find(argv[i + 1]);
        if (!c)
            return unknown_command(argv[i + 1]);
        if (i + 2 < argc && c->subs) {
            const struct command *s = sl_command_sub(c, argv[i + 2]);
            if (!s) {
                fprintf(stderr, "sluice: '%s' is not a '%s' subcommand. See 'sluice help %s'.\n",
                        argv[i + 2], c->name, c->name);
                return 2;
            }
            c = s;
        }
        sl_command_help(stdout, c);
        return 0;
    }
    if (!strcmp(name, "version")) {
        printf("sluice %s\n", sl_version());
        return 0;
    }
    const struct command *c = sl_command_find(name);
    if (!c)
        return unknown_command(name);
    return run(c, argc - i, (const char **)argv + i);
}
