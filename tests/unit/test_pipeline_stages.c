/* The stages of `sluice run` (pipeline/keys.c, from curate/commands.def and the stages' own
 * rows) against the command table (cli/table.c) and tests/cli/t_settings.sh: every stage
 * runs a command of the table, and every stage whose command has settings (option rows
 * marked SL_OPTF_OUTPUT: core/options.h) has its case in t_settings.sh (`case_ "NAME"` at
 * the start of a line, NAME the command and subcommand, or NAME and a word), which tries
 * its options against a first run: each such option's --NAME appears in one of the stage's
 * cases. Both lists are read, neither is written out here: a new stage or a new setting is
 * checked as soon as it is in the tables. */
#include "tests/harness.h"

#include "cli/commands.h"
#include "core/buf.h"
#include "core/options.h"
#include "core/stream.h"
#include "pipeline/pipeline.h"

#include <string.h>

/* The command a stage runs, from the table; NULL (and a failure) when it names none. */
static const struct command *stage_command(int stage)
{
    const char *sub = NULL;
    const char *name = pl_stage_command(stage, &sub);
    const struct command *c = sl_command_find(name);
    if (c && sub)
        c = sl_command_sub(c, sub);
    if (!c || !c->cmd)
        sl_test_fail(__FILE__, __LINE__, "stage '%s' runs 'sluice %s%s%s': no such command",
                     pl_stage_name(stage), name, sub ? " " : "", sub ? sub : "");
    return c && c->cmd ? c : NULL;
}

/* The line `case_ "NAME"` (or `case_ "NAME ...`) of t_settings.sh, or NULL. */
static const char *settings_case(const char *text, const char *name)
{
    char head[96];
    size_t hl = (size_t)snprintf(head, sizeof(head), "\ncase_ \"%s", name);
    for (const char *p = strstr(text, head); p; p = strstr(p + 1, head)) {
        if (p[hl] == '"' || p[hl] == ' ')
            return p;
    }
    return NULL;
}

/* Whether "--LONG" (not a longer option's prefix) appears in one of NAME's cases: from
 * each `case_ "NAME` line to the next `case_ "` at the start of a line. */
static int option_tried(const char *text, const char *name, const char *lng)
{
    char head[96], opt[64];
    size_t hl = (size_t)snprintf(head, sizeof(head), "\ncase_ \"%s", name);
    size_t ol = (size_t)snprintf(opt, sizeof(opt), "--%s", lng);
    for (const char *p = strstr(text, head); p; p = strstr(p + 1, head)) {
        if (p[hl] != '"' && p[hl] != ' ')
            continue;
        const char *end = strstr(p + 1, "\ncase_ \"");
        for (const char *q = strstr(p, opt); q && (!end || q < end); q = strstr(q + 1, opt)) {
            char c = q[ol];
            if (!(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-')
                return 1;
        }
    }
    return 0;
}

TEST(stages_run_commands_and_t_settings_has_their_cases)
{
    struct sl_buf f = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("../cli/t_settings.sh"), &f) == 0);
    sl_buf_putc(&f, '\0');
    int with_settings = 0;
    for (int s = 0; s < PL_NSTAGES; s++) {
        const struct command *c = stage_command(s);
        if (!c || !c->cmd->options)
            continue;
        const char *sub = NULL;
        const char *cmd = pl_stage_command(s, &sub);
        char name[64];
        snprintf(name, sizeof(name), "%s%s%s", cmd, sub ? " " : "", sub ? sub : "");
        int settings = 0;
        for (const struct sl_option *o = c->cmd->options; o->type != SL_OPT_END; o++)
            settings |= (o->flags & SL_OPTF_OUTPUT) != 0;
        if (!settings)
            continue;
        with_settings++;
        if (!settings_case(f.data, name)) {
            sl_test_fail(__FILE__, __LINE__,
                         "t_settings.sh has no case_ \"%s\" (stage '%s' has settings)", name,
                         pl_stage_name(s));
            continue;
        }
        for (const struct sl_option *o = c->cmd->options; o->type != SL_OPT_END; o++) {
            if ((o->flags & SL_OPTF_OUTPUT) && o->long_name &&
                !option_tried(f.data, name, o->long_name))
                sl_test_fail(__FILE__, __LINE__,
                             "t_settings.sh does not try %s --%s (a setting of stage '%s')",
                             name, o->long_name, pl_stage_name(s));
        }
    }
    /* the document stages and tokenize have settings: the loop above saw them */
    CHECK(with_settings > 0);
    sl_buf_release(&f);
}
