/* Tests for the command table (cli/table.c) and the dispatcher (cli/dispatch.c): every
 * command has its usage text and option table there and its defaults parse; the dispatcher
 * applies the defaults, parses, answers -h, refuses usage errors, runs a command (or its
 * subcommand) and reports its error, and checks a command line from the table alone. */
#include "tests/harness.h"

#include "cli/commands.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/options.h"
#include "core/stream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* c's usage text: its first line is a synopsis of `sluice NAME` (`sluice PARENT NAME` for a
 * subcommand), its description follows an empty line. */
static void check_usage(const struct command *c, const char *parent)
{
    const char *const *u = sl_command_usage(c);
    if (!u) {
        sl_test_fail(__FILE__, __LINE__, "command '%s' has no usage in the table", c->name);
        return;
    }
    char want[128];
    snprintf(want, sizeof(want), "sluice %s%s%s ", parent ? parent : "", parent ? " " : "",
             c->name);
    if (!u[0] || strncmp(u[0], want, strlen(want)) != 0)
        sl_test_fail(__FILE__, __LINE__, "usage of '%s' does not begin with '%s': '%s'", c->name,
                     want, u[0] ? u[0] : "(none)");
    size_t i = 0;
    while (u[i] && u[i][0])
        i++;
    if (!u[i] || !u[i + 1])
        sl_test_fail(__FILE__, __LINE__, "usage of '%s' has no description", c->name);
}

/* Every default of c's option table parses as its option's value would. */
static void check_defaults(const struct command *c)
{
    if (!c->cmd || !c->cmd->options)
        return;
    void *o = sl_xcalloc(1, c->cmd->size);
    if (sl_options_init(c->cmd->options, o) != 0)
        sl_test_fail(__FILE__, __LINE__, "'%s': %s", c->name, sl_err_msg());
    sl_options_release(c->cmd->options, o);
    free(o);
}

TEST(commands_table_has_usage_and_options)
{
    REQUIRE(sl_ncommands > 0);
    for (size_t i = 0; i < sl_ncommands; i++) {
        const struct command *c = &sl_commands[i];
        CHECK(c->name && (c->cmd || c->fallback) && c->summary);
        CHECK(!c->cmd || c->cmd->run);
        CHECK(sl_command_find(c->name) == c);
        check_usage(c, NULL);
        check_defaults(c);
        /* options of its own, or subcommands that have them (never both, never neither) */
        const struct sl_option *own = c->cmd ? c->cmd->options : NULL;
        if (!own == !c->subs)
            sl_test_fail(__FILE__, __LINE__, "command '%s' needs an option table or subcommands",
                         c->name);
        for (const struct command *s = c->subs; s && s->name; s++) {
            check_usage(s, c->name);
            check_defaults(s);
            if (!s->cmd || !s->cmd->options || !s->cmd->run)
                sl_test_fail(__FILE__, __LINE__, "subcommand '%s %s' has no option table", c->name,
                             s->name);
            CHECK(sl_command_sub(c, s->name) == s);
        }
        CHECK(!c->fallback || sl_command_sub(c, c->fallback->name) == c->fallback);
    }
    CHECK(sl_command_find("no-such-command") == NULL);
    CHECK(sl_command_sub(sl_command_find("dedup"), "nope") == NULL);
}

/* ---- the dispatcher, on commands of its own ---------------------------------------------- */

struct t_opts {
    const char *out, *mode;
    long n;
    int list;
};

/* What the last run got. */
static struct {
    struct t_opts o;
    char ops[256];
    int argc;
    int ret; /* what it returns */
} got;

static int t_check(void *opts, const struct sl_strlist *ops)
{
    struct t_opts *o = opts;
    if (o->n < 0)
        return sl_err_set(SL_ERR_USAGE, "--num must be 0 or more");
    o->n *= 10; /* a value that follows from the options */
    return 0;
}

static int t_run(const void *opts, const struct sl_strlist *ops, int argc, const char **argv)
{
    got.o = *(const struct t_opts *)opts;
    got.ops[0] = 0;
    for (size_t i = 0; i < ops->n; i++)
        snprintf(got.ops + strlen(got.ops), sizeof(got.ops) - strlen(got.ops), "%s%s", i ? " " : "",
                 ops->v[i]);
    got.argc = argc;
    if (got.ret < 0)
        return sl_err_set(got.ret, "it failed");
    return got.ret;
}

static const char *const t_usage[] = { "sluice t --out DIR [options] IN...", "", "Test.", NULL };
static const char *const t_parent_usage[] = { "sluice p t --out DIR IN...", "", "Parent.", NULL };

#define SL_OPT_STRUCT struct t_opts
static const struct sl_option t_options[] = {
    SL_OPT_STRING('o', "out", out, "DIR", "output directory", .required = 1),
    SL_OPT_CHOICE(0, "mode", mode, "a|bb", "mode", .def = "bb"),
    SL_OPT_INTEGER(0, "num", n, "N", "a number", .def = "4"),
    SL_OPT_FLAG_(0, "list", list, "list and exit", .flags = SL_OPTF_ALONE),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

static const struct sl_cmd t_cmd = SL_CMD(t_usage, t_options, struct t_opts, t_check, t_run);
static const struct command t_plain = { .name = "t", .summary = "test", .cmd = &t_cmd };
static const struct command t_subs[] = { { .name = "t", .cmd = &t_cmd }, { .name = NULL } };
static const struct command t_parent = {
    .name = "p", .summary = "parent", .usage = t_parent_usage, .subs = t_subs, .fallback = t_subs
};

/* sl_command_run(c, argv) with its stdout and stderr captured; returns its exit code. */
static int run_captured(const struct command *c, const char **argv, struct sl_buf *out,
                        struct sl_buf *err)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    char *po = NULL, *pe = NULL;
    if (asprintf(&po, "%s/stdout", sl_test_tmpdir()) < 0 ||
        asprintf(&pe, "%s/stderr", sl_test_tmpdir()) < 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    close(fo);
    close(fe);
    memset(&got.o, 0, sizeof(got.o));
    got.ops[0] = 0;
    int rc = sl_command_run(c, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    out->len = err->len = 0;
    if (sl_read_file(po, out) || sl_read_file(pe, err))
        rc = -1;
    sl_buf_putc(out, '\0');
    sl_buf_putc(err, '\0');
    free(po);
    free(pe);
    return rc;
}

TEST(commands_dispatch_runs_a_command)
{
    struct sl_buf out = SL_BUF_INIT, err = SL_BUF_INIT;
    got.ret = 0;
    /* the defaults, the options parsed, the command's check, then its run */
    const char *a1[] = { "t", "in1", "--out", "d", "in2", NULL };
    CHECK_EQ_INT(run_captured(&t_plain, a1, &out, &err), 0);
    CHECK_EQ_STR(got.o.out, "d");
    CHECK_EQ_STR(got.o.mode, "bb");
    CHECK_EQ_INT(got.o.n, 40);
    CHECK_EQ_STR(got.ops, "in1 in2");
    CHECK_EQ_INT(got.argc, 5);
    /* -h: the usage and options, on stdout, the defaults said */
    const char *a2[] = { "t", "--num", "x", "-h", NULL };
    got.o.out = NULL;
    CHECK_EQ_INT(run_captured(&t_plain, a2, &out, &err), 2); /* --num x comes first */
    const char *a3[] = { "t", "-h", NULL };
    CHECK_EQ_INT(run_captured(&t_plain, a3, &out, &err), 0);
    CHECK_CONTAINS(out.data, "usage: sluice t --out DIR [options] IN...\n\nTest.\n");
    CHECK_CONTAINS(out.data, "mode (default bb)\n");
    CHECK_EQ_STR(err.data, "");
    CHECK(got.o.out == NULL); /* not run */
    /* usage errors: the message and the synopsis on stderr, exit 2, not run */
    const char *a4[] = { "t", "in", NULL };
    CHECK_EQ_INT(run_captured(&t_plain, a4, &out, &err), 2);
    CHECK_CONTAINS(err.data, "--out DIR is required\n");
    CHECK_CONTAINS(err.data, "usage: sluice t --out DIR [options] IN...\n");
    CHECK_EQ_STR(out.data, "");
    const char *a5[] = { "t", "-o", "d", "--num=-1", NULL };
    CHECK_EQ_INT(run_captured(&t_plain, a5, &out, &err), 2);
    CHECK_CONTAINS(err.data, "--num must be 0 or more\n");
    CHECK(got.o.out == NULL);
    const char *a6[] = { "t", "--list", NULL }; /* a task of its own: nothing required */
    CHECK_EQ_INT(run_captured(&t_plain, a6, &out, &err), 0);
    CHECK_EQ_INT(got.o.list, 1);
    /* the run's error: printed, exit 1; another rank's: exit 1, nothing printed; a code the
     * run reported itself: as it is */
    got.ret = SL_ERR_IO;
    const char *a7[] = { "t", "-o", "d", NULL };
    CHECK_EQ_INT(run_captured(&t_plain, a7, &out, &err), 1);
    CHECK_CONTAINS(err.data, "it failed\n");
    CHECK(strstr(err.data, "usage:") == NULL);
    got.ret = SL_ERR_PEER;
    CHECK_EQ_INT(run_captured(&t_plain, a7, &out, &err), 1);
    CHECK_EQ_STR(err.data, "");
    got.ret = 2;
    CHECK_EQ_INT(run_captured(&t_plain, a7, &out, &err), 2);
    CHECK_EQ_STR(err.data, "");
    got.ret = 0;
    sl_buf_release(&out);
    sl_buf_release(&err);
}

/* A command of subcommands: argv[1] names one, or (its fallback) the first operand does. */
TEST(commands_dispatch_runs_a_subcommand)
{
    struct sl_buf out = SL_BUF_INIT, err = SL_BUF_INIT;
    got.ret = 0;
    const char *a1[] = { "p", "t", "-o", "d", "x", NULL };
    CHECK_EQ_INT(run_captured(&t_parent, a1, &out, &err), 0);
    CHECK_EQ_STR(got.ops, "x");
    CHECK_EQ_INT(got.argc, 5); /* the whole command line, for a manifest */
    const char *a2[] = { "p", "-o", "d", "t", "x", NULL };
    CHECK_EQ_INT(run_captured(&t_parent, a2, &out, &err), 0);
    CHECK_EQ_STR(got.o.out, "d");
    CHECK_EQ_STR(got.ops, "x");
    const char *a3[] = { "p", "-o", "d", "x", NULL };
    CHECK_EQ_INT(run_captured(&t_parent, a3, &out, &err), 2);
    CHECK_CONTAINS(err.data, "unknown subcommand 'x' (t)\n");
    const char *a4[] = { "p", NULL };
    CHECK_EQ_INT(run_captured(&t_parent, a4, &out, &err), 2);
    CHECK_CONTAINS(err.data, "no subcommand given (t)\n");
    /* its own -h: its usage text, no options; a subcommand's: the subcommand's */
    const char *a5[] = { "p", "-h", NULL };
    CHECK_EQ_INT(run_captured(&t_parent, a5, &out, &err), 0);
    CHECK_EQ_STR(out.data, "usage: sluice p t --out DIR IN...\n\nParent.\n");
    const char *a6[] = { "p", "t", "-h", NULL };
    CHECK_EQ_INT(run_captured(&t_parent, a6, &out, &err), 0);
    CHECK_CONTAINS(out.data, "Test.\n\n    -o, --out DIR");
    sl_buf_release(&out);
    sl_buf_release(&err);
}

/* sluice run --dry-run checks each stage's command line with the command's option table: a
 * line that parses is 0, with nothing printed and nothing run; a bad one fails as usual. */
TEST(commands_check_from_the_table)
{
    struct sl_buf out = SL_BUF_INIT, err = SL_BUF_INIT;
    const char *good[] = { "t", "--num", "5", "in", NULL };
    memset(&got.o, 0, sizeof(got.o));
    CHECK_EQ_INT(sl_command_check(&t_plain, 4, good), 0); /* --out is not asked for */
    CHECK(got.o.mode == NULL);                            /* not run */
    const char *bad[] = { "t", "--num", "x", NULL };
    CHECK_EQ_INT(sl_command_check(&t_plain, 3, bad), SL_ERR_USAGE);
    CHECK(strstr(sl_err_msg(), "--num") != NULL);
    const char *sub[] = { "p", "t", "--mode", "c", NULL };
    CHECK_EQ_INT(sl_command_check(&t_parent, 4, sub), SL_ERR_USAGE);
    CHECK(strstr(sl_err_msg(), "--mode must be one of a|bb") != NULL);
    /* and the real ones: a stage's line as the pipeline writes it */
    const char *clean[] = { "clean", "--out", "d", "--level", "99", "in", NULL };
    CHECK_EQ_INT(sl_command_check(sl_command_find("clean"), 6, clean), SL_ERR_USAGE);
    CHECK(strstr(sl_err_msg(), "--level must be 1..22") != NULL);
    const char *exact[] = { "dedup", "exact", "--out", "d", "--keep", "longest", "in", NULL };
    CHECK_EQ_INT(sl_command_check(sl_command_find("dedup"), 7, exact), 0);
    sl_buf_release(&out);
    sl_buf_release(&err);
}
