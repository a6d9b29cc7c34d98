/* The dispatcher: what every command would otherwise repeat (git's run_builtin with
 * parse-options and usage_with_options): the command's option struct allocated and set to
 * its table's defaults, the command line parsed, -h answered, a usage error (the parser's,
 * a missing required option, the command's check) refused, the command run and its error
 * reported. */
#include "cli/commands.h"

#include "core/alloc.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/world.h"

#include <stdlib.h>
#include <string.h>

/* What runs for a command line, and how. */
struct call {
    const struct sl_cmd *cmd;
    const char *const *usage;     /* what -h and a usage error show */
    int skip;                     /* the parser's argv[0] is argv[skip] (1: a subcommand) */
    const struct command *parent; /* set: cmd is parent's fallback, named by the first operand */
};

static int is_help(const char *a)
{
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

/* What c runs for argv: 0 with *k set, or 1 when argv is `NAME -h` of a command of
 * subcommands (its own help). */
static int resolve(const struct command *c, int argc, const char **argv, struct call *k)
{
    const struct command *s = c->subs && argc >= 2 ? sl_command_sub(c, argv[1]) : NULL;
    memset(k, 0, sizeof(*k));
    if (s) {
        k->cmd = s->cmd;
        k->usage = sl_command_usage(s);
        k->skip = 1;
        return 0;
    }
    if (c->subs && argc >= 2 && is_help(argv[1]))
        return 1;
    if (c->fallback) {
        k->cmd = c->fallback->cmd;
        k->usage = sl_command_usage(c->fallback);
        k->parent = c;
        return 0;
    }
    k->cmd = c->cmd;
    k->usage = sl_command_usage(c);
    return 0;
}

/* The option struct o set to the defaults and the command line parsed into it: 0,
 * SL_PARSE_HELP or a usage error (a command without options: every argument an operand). */
static int parse(const struct call *k, int argc, const char **argv, void *o, struct sl_strlist *ops)
{
    if (!k->cmd->options) {
        for (int i = k->skip + 1; i < argc; i++)
            sl_strlist_push(ops, argv[i]);
        return 0;
    }
    int rc = sl_options_init(k->cmd->options, o);
    return rc ? rc : sl_parse_options(argc - k->skip, argv + k->skip, k->cmd->options, o, ops);
}

/* The fallback subcommand's name, the first operand, taken out of ops: 0, or a usage
 * error naming the subcommands. */
static int take_sub_name(const struct command *parent, struct sl_strlist *ops)
{
    const char *name = parent->fallback->name;
    if (ops->n && !strcmp(ops->v[0], name)) {
        free(ops->v[0]);
        memmove(ops->v, ops->v + 1, --ops->n * sizeof(*ops->v));
        return 0;
    }
    char subs[256] = "";
    for (const struct command *s = parent->subs; s->name; s++)
        snprintf(subs + strlen(subs), sizeof(subs) - strlen(subs), "%s%s",
                 s == parent->subs ? "" : ", ", s->name);
    if (!ops->n)
        return sl_err_set(SL_ERR_USAGE, "no subcommand given (%s)", subs);
    return sl_err_set(SL_ERR_USAGE, "unknown subcommand '%s' (%s)", ops->v[0], subs);
}

/* The exit code of what run returned (struct sl_cmd), its error reported. */
static int report(int rc)
{
    if (rc >= 0)
        return rc;
    if (rc != SL_ERR_PEER)
        sl_error("%s", sl_err_msg());
    return 1;
}

/* Run k's command: its exit code (with rank0, rank 0's on every rank). */
static int run(const struct call *k, const void *o, const struct sl_strlist *ops, int argc,
               const char **argv)
{
    if (!k->cmd->rank0)
        return report(k->cmd->run(o, ops, argc, argv));
    struct sl_world *w = sl_world_get();
    int64_t code = w->rank == 0 ? report(k->cmd->run(o, ops, argc, argv)) : 0;
    fflush(stdout);
    sl_world_allreduce_i64(w, &code, 1, SL_MAX);
    return (int)code;
}

int sl_command_run(const struct command *c, int argc, const char **argv)
{
    struct call k;
    if (resolve(c, argc, argv, &k)) {
        sl_command_help(stdout, c);
        return 0;
    }
    struct sl_strlist ops = { 0 };
    void *o = sl_xcalloc(1, k.cmd->size ? k.cmd->size : 1);
    int code, rc = parse(&k, argc, argv, o, &ops);
    if (rc == SL_PARSE_HELP) {
        sl_usage_print(stdout, k.usage, k.cmd->options);
        code = 0;
        goto out;
    }
    if (!rc && k.parent)
        rc = take_sub_name(k.parent, &ops);
    if (!rc && k.cmd->options)
        rc = sl_options_check_required(k.cmd->options, o);
    if (!rc && k.cmd->check)
        rc = k.cmd->check(o, &ops);
    if (rc) {
        code = sl_usage_error(k.usage);
        goto out;
    }
    code = run(&k, o, &ops, argc, argv);
out:
    sl_options_release(k.cmd->options, o);
    free(o);
    sl_strlist_release(&ops);
    return code;
}

int sl_command_check(const struct command *c, int argc, const char **argv)
{
    struct call k;
    if (resolve(c, argc, argv, &k) || !k.cmd->options)
        return 0;
    struct sl_strlist ops = { 0 };
    void *o = sl_xcalloc(1, k.cmd->size ? k.cmd->size : 1);
    int rc = parse(&k, argc, argv, o, &ops);
    sl_options_release(k.cmd->options, o);
    free(o);
    sl_strlist_release(&ops);
    return rc == SL_PARSE_HELP ? 0 : rc;
}
