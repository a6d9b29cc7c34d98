/* Tests for the command table (cli/table.c): every command has its usage text and option
 * table there, and the help printed from the table is byte for byte what the command itself
 * prints on -h. */
#include "tests/harness.h"

#include "cli/commands.h"
#include "core/buf.h"
#include "core/options.h"
#include "core/stream.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* What fn(argc, argv) writes to stdout, into out; returns fn's exit code. */
static int capture_stdout(const struct command *c, int argc, const char **argv, struct sl_buf *out)
{
    char *path = NULL;
    if (asprintf(&path, "%s/stdout", sl_test_tmpdir()) < 0)
        return -1;
    fflush(stdout);
    int saved = dup(1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (saved < 0 || fd < 0) {
        free(path);
        return -1;
    }
    dup2(fd, 1);
    close(fd);
    int rc = c->fn(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    out->len = 0;
    if (sl_read_file(path, out) != 0)
        rc = -1;
    free(path);
    return rc;
}

/* The table's help of c (a command or a subcommand), into out. */
static void table_help(const struct command *c, struct sl_buf *out)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    sl_command_help(f, c);
    fclose(f);
    out->len = 0;
    sl_buf_append(out, text, n);
    free(text);
}

/* c's usage text: its first line is a synopsis of `sluice NAME` (`sluice PARENT NAME` for a
 * subcommand), its description follows an empty line. */
static void check_usage(const struct command *c, const char *parent)
{
    const char *const *u = c->make_usage ? c->make_usage() : c->usage;
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

TEST(commands_table_has_usage_and_options)
{
    REQUIRE(sl_ncommands > 0);
    for (size_t i = 0; i < sl_ncommands; i++) {
        const struct command *c = &sl_commands[i];
        CHECK(c->name && c->fn && c->summary);
        CHECK(sl_command_find(c->name) == c);
        check_usage(c, NULL);
        /* options of its own, or subcommands that have them (never both, never neither) */
        if (!c->options == !c->subs)
            sl_test_fail(__FILE__, __LINE__, "command '%s' needs an option table or subcommands",
                         c->name);
        for (const struct command *s = c->subs; s && s->name; s++) {
            check_usage(s, c->name);
            if (!s->options)
                sl_test_fail(__FILE__, __LINE__, "subcommand '%s %s' has no option table", c->name,
                             s->name);
            CHECK(sl_command_sub(c, s->name) == s);
        }
    }
    CHECK(sl_command_find("no-such-command") == NULL);
    CHECK(sl_command_sub(sl_command_find("dedup"), "nope") == NULL);
}

TEST(commands_help_from_table_is_their_h)
{
    struct sl_buf own = SL_BUF_INIT, table = SL_BUF_INIT;
    for (size_t i = 0; i < sl_ncommands; i++) {
        const struct command *c = &sl_commands[i];
        const char *argv[] = { c->name, "-h", NULL };
        CHECK_EQ_INT(capture_stdout(c, 2, argv, &own), 0);
        table_help(c, &table);
        if (own.len != table.len || memcmp(own.data, table.data, own.len) != 0)
            sl_test_fail(__FILE__, __LINE__, "'sluice %s -h' differs from the table's help",
                         c->name);
        for (const struct command *s = c->subs; s && s->name; s++) {
            const char *sargv[] = { c->name, s->name, "-h", NULL };
            CHECK_EQ_INT(capture_stdout(c, 3, sargv, &own), 0);
            table_help(s, &table);
            if (own.len != table.len || memcmp(own.data, table.data, own.len) != 0)
                sl_test_fail(__FILE__, __LINE__, "'sluice %s %s -h' differs from the table's help",
                             c->name, s->name);
        }
    }
    sl_buf_release(&own);
    sl_buf_release(&table);
}
