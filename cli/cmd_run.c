/* sluice run: a pipeline's stages in order (pipeline/pipeline.h builds the command lines),
 * each run in this process with every MPI rank, skipped when its record says it is
 * complete (pipeline/record.h); then the summary table, summary.json and funnel.svg. */
#include "cli/commands.h"

#include "core/alloc.h"
#include "core/dirlock.h"
#include "core/err.h"
#include "core/log.h"
#include "core/options.h"
#include "core/stage.h"
#include "core/world.h"
#include "pipeline/pipeline.h"
#include "pipeline/record.h"
#include "pipeline/report.h"

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/atomic.h"

/* The lines after the synopsis: "Run the stages ... in order: download, ..." (the stages,
 * from the pipeline's table, wrapped at 88 columns), then usage_rest. */
static const char *const usage_rest[] = {
    "Each stage reads the previous stage's output and writes WORK/<stage>. key=value",
    "overrides any key (file_numbers=0-2, work_dir=/scratch/x, train.train.steps=50);",
    "stages=[extract,clean] runs only those. A stage whose outputs are complete (same",
    "command, same inputs) is skipped, and an interrupted stage resumes, so running the",
    "same command again continues where it stopped. Under mpirun/srun every stage uses",
    "all ranks. At the end it prints documents in and out per step (and the training",
    "loss) and writes WORK/summary.json, WORK/funnel.svg and, after training,",
    "WORK/loss.svg. 'sluice run --keys' lists each stage's keys and their options.",
    "Relative paths in the pipeline file name files beside it (else in sluice's own",
    "configs/ and examples/); key=null unsets a key; a bare NAME runs the bundled",
    "configs/pipelines/NAME.yaml. Missing inputs are reported before the first stage runs.",
    NULL,
};

#define USAGE_LINES 40

/* The usage text: the synopsis, the stages (wrapped) and usage_rest, into lines[] (the
 * stage lines point into buf). */
static void make_usage(const char *lines[USAGE_LINES], char *buf, size_t n)
{
    size_t k = 0;
    lines[k++] = "sluice run PIPELINE.yaml [key=value ...] [--dry-run]";
    lines[k++] = "sluice run --keys";
    lines[k++] = "";
    snprintf(buf, n, "Run the stages of a pipeline (configs/pipelines/*.yaml) in order: %s.",
             pl_stage_names());
    for (char *line = buf; k < USAGE_LINES - 1;) {
        lines[k++] = line;
        if (strlen(line) <= 88)
            break;
        char *cut = NULL;
        for (char *c = line; *c && c - line <= 88; c++)
            if (*c == ' ')
                cut = c;
        if (!cut)
            break;
        *cut = '\0';
        line = cut + 1;
    }
    for (size_t i = 0; usage_rest[i] && k < USAGE_LINES - 1; i++)
        lines[k++] = usage_rest[i];
    lines[k] = NULL;
}

/* Check each selected step's command line with the command's own option table (what the
 * pipeline generated from its keys), before anything runs: 0, or SL_ERR_USAGE naming the
 * step, the parser's message and the command line. */
static int check_commands(const struct pl_pipeline *p)
{
    int rc = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        const struct pl_step *s = &p->steps[i];
        if (!s->selected || !s->argv.n)
            continue;
        const struct command *c = sl_command_find(s->argv.v[0]);
        if (!c) {
            rc = sl_err_set(SL_ERR_STATE, "step '%s': no command '%s'", s->label, s->argv.v[0]);
            break;
        }
        if (sl_command_check(c, (int)s->argv.n, (const char **)s->argv.v) != 0) {
            char msg[SL_ERR_MSG_MAX];
            snprintf(msg, sizeof(msg), "%s", sl_err_msg());
            char *line = pl_shell_line(&s->argv);
            rc = sl_err_set(SL_ERR_USAGE, "step '%s': %s\n  command: %s", s->label, msg, line);
            free(line);
        }
    }
    return rc;
}

/* The command line to run: the step's, plus its stage's fresh-start argument when its
 * earlier outputs are stale (--force; the trainer's train.resume=none). */
static void step_argv(const struct pl_step *s, int force, struct sl_strlist *out)
{
    for (size_t i = 0; i < s->argv.n; i++)
        sl_strlist_push(out, s->argv.v[i]);
    if (force && s->force) {
        const char *arg = s->force;
        int have = 0;
        for (size_t i = 0; i < s->argv.n; i++)
            have |= !strcmp(s->argv.v[i], arg);
        if (!have)
            sl_strlist_push(out, arg);
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

/* A fresh start of a step: remove what the pipeline put in its directory before. */
static int fresh_start(const struct pl_step *s)
{
    for (int k = 0; k < 2; k++) {
        struct stat st;
        if (!s->fresh_rm[k] || lstat(s->fresh_rm[k], &st) != 0)
            continue;
        if (nftw(s->fresh_rm[k], rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
            return sl_err_set(SL_ERR_IO, "cannot remove '%s': %s", s->fresh_rm[k], strerror(errno));
    }
    return 0;
}

/* Rank 0 decides, every rank learns the answer (and the message of a failure). */
static int bcast_status(struct sl_world *w, int rc)
{
    int64_t v = rc;
    char msg[SL_ERR_MSG_MAX] = "";
    if (w->rank == 0 && rc)
        snprintf(msg, sizeof(msg), "%s", sl_err_msg());
    if (sl_world_bcast(w, &v, sizeof(v), 0) || sl_world_bcast(w, msg, sizeof(msg), 0))
        return SL_ERR_MPI;
    if (v)
        return sl_err_set((int)v, "%s", msg);
    return 0;
}

/* Every input of a selected step that no earlier step writes must exist: report each one
 * missing (with the step that reads it). 0 when all are there. */
static int check_inputs(const struct pl_pipeline *p)
{
    int missing = 0;
    for (size_t i = 0; i < p->n; i++) {
        const struct pl_step *s = &p->steps[i];
        if (!s->selected)
            continue;
        for (size_t j = 0; j < s->inputs.n; j++) {
            const char *in = s->inputs.v[j];
            int made = 0;
            for (size_t k = 0; k < i && !made; k++) {
                size_t l = strlen(p->steps[k].out);
                made = !strncmp(in, p->steps[k].out, l) && (in[l] == '/' || !in[l]);
            }
            struct stat st;
            if (made || strstr(in, "://") || stat(in, &st) == 0)
                continue;
            sl_error("step '%s': input '%s' does not exist%s", s->label, in,
                     in[0] == '/' ? ""
                                  : "\nhint: a relative path in a pipeline file names a file "
                                    "beside the pipeline file (or in sluice's configs/ and "
                                    "examples/); on the command line, one in the working "
                                    "directory");
            missing++;
        }
    }
    return missing ? sl_err_set(SL_ERR_NOTFOUND, "%d input%s missing", missing,
                                missing == 1 ? " is" : "s are")
                   : 0;
}

static int dry_run(const struct pl_pipeline *p)
{
    int *runs = sl_xcalloc(p->n ? p->n : 1, sizeof(int));
    for (size_t i = 0; i < p->n; i++) {
        const struct pl_step *s = &p->steps[i];
        if (!s->selected)
            continue;
        enum pl_state st = PL_STATE_NEW;
        int rc = pl_step_state(p, i, &st, NULL);
        if (rc) {
            free(runs);
            sl_error("%s", sl_err_msg());
            return 1;
        }
        int dirty = 0;
        for (size_t k = 0; k < s->ndeps; k++)
            dirty |= runs[s->deps[k]];
        if (dirty && st != PL_STATE_NEW)
            st = PL_STATE_STALE; /* its inputs are about to change */
        runs[i] = st != PL_STATE_COMPLETE;
        struct sl_strlist av = { 0 };
        step_argv(s, st == PL_STATE_STALE, &av);
        char *line = pl_shell_line(&av);
        if (s->note && runs[i])
            printf("# %s\n", s->note);
        printf("%s%s\n", runs[i] ? "" : "# complete, skipped: ", line);
        free(line);
        sl_strlist_release(&av);
    }
    free(runs);
    fflush(stdout);
    if (check_inputs(p)) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    return 0;
}

static int run_step(struct sl_world *w, const struct pl_pipeline *p, size_t i, size_t num,
                    size_t total, int *skipped, int argc, const char **argv)
{
    const struct pl_step *s = &p->steps[i];
    *skipped = 0;
    int64_t state = PL_STATE_NEW;
    char *why = NULL;
    int rc = 0;
    if (w->rank == 0) {
        enum pl_state st;
        rc = pl_step_state(p, i, &st, &why);
        state = st;
    }
    rc = bcast_status(w, rc);
    if (!rc && sl_world_bcast(w, &state, sizeof(state), 0))
        rc = SL_ERR_MPI;
    if (rc) {
        free(why);
        sl_error("%s", sl_err_msg());
        return 1;
    }
    if (state == PL_STATE_COMPLETE) {
        if (w->rank == 0)
            sl_info("run: [%zu/%zu] %s: complete, skipped (%s)", num, total, s->label, s->out);
        *skipped = 1;
        return 0;
    }
    const struct command *c = sl_command_find(s->argv.v[0]);
    if (!c) {
        sl_error("step '%s': no command '%s' in this build", s->label, s->argv.v[0]);
        free(why);
        return 1;
    }
    struct sl_strlist av = { 0 };
    step_argv(s, state == PL_STATE_STALE, &av);
    /* the step's directory stays this run's from its record's start to its end (the
     * command's own lock inside shares the hold) */
    struct sl_dirlock *lock = NULL;
    rc = sl_stage_lock(w, s->out, 0, argc, argv, &lock);
    if (rc) {
        sl_error("step '%s': %s", s->label, sl_err_msg());
        sl_strlist_release(&av);
        free(why);
        return 1;
    }
    if (w->rank == 0) {
        char *line = pl_shell_line(&av);
        if (state == PL_STATE_STALE)
            sl_info("run: [%zu/%zu] %s (again: %s): %s", num, total, s->label,
                    why ? why : "changed", line);
        else
            sl_info("run: [%zu/%zu] %s%s: %s", num, total, s->label,
                    state == PL_STATE_PARTIAL ? " (resuming)" : "", line);
        free(line);
        if (s->note)
            sl_info("run: %s", s->note);
        /* outputs of tokenize/tokenizer are prefixes: their directory must exist */
        rc = sl_mkdir_p(s->out);
        if (!rc && state == PL_STATE_STALE)
            rc = fresh_start(s);
        if (!rc)
            rc = pl_step_prepare(s);
        if (!rc)
            rc = pl_record_begin(s);
    }
    free(why);
    rc = bcast_status(w, rc);
    if (rc) {
        sl_error("step '%s': %s", s->label, sl_err_msg());
        sl_strlist_release(&av);
        sl_dirlock_release(lock);
        return 1;
    }
    /* the command runs as if started alone: its own log name, level and warning limits */
    char prog[64];
    snprintf(prog, sizeof(prog), "sluice %s", s->argv.v[0]);
    const char *old_prog = sl_log_prog();
    enum sl_log_level old_level = sl_log_level();
    sl_log_set_prog(prog);
    sl_warn_limited_reset();
    rc = sl_command_run(c, (int)av.n, (const char **)av.v);
    fflush(stdout);
    sl_warn_limited_reset();
    sl_log_set_level(old_level);
    sl_log_set_prog(old_prog);
    sl_strlist_release(&av);
    if (rc) {
        sl_error("step '%s' failed (exit %d)\nhint: fix the cause and run the same command "
                 "again: finished steps and shards are kept",
                 s->label, rc);
        sl_dirlock_release(lock);
        return rc == 2 ? 2 : 1;
    }
    if (w->rank == 0)
        rc = pl_record_finish(s);
    sl_dirlock_release(lock);
    rc = bcast_status(w, rc);
    if (rc) {
        sl_error("%s", sl_err_msg());
        return 1;
    }
    return 0;
}

const char *const *cmd_run_usage(void)
{
    static const char *lines[USAGE_LINES];
    static char stages[512];
    if (!lines[0])
        make_usage(lines, stages, sizeof(stages));
    return lines;
}

/* The options of the run. */
struct opts {
    int dry, keys, wait;
};

#define SL_OPT_STRUCT struct opts
const struct sl_option cmd_run_options[] = {
    SL_OPT_FLAG_(0, "dry-run", dry, "print the command of each stage instead of running it"),
    SL_OPT_FLAG_(0, "keys", keys, "list every stage's keys and the options they map to",
                 .flags = SL_OPTF_ALONE),
    SL_OPT_FLAG_(0, "wait", wait,
                 "wait for another run writing in the work directory (default: refuse)"),
    SL_OPT_COMMON,
    SL_OPT_END_,
};

/* The steps of pipeline p from the first selected on, then the summary. */
static int run_steps(const struct opts *ro, struct pl_pipeline *p, int argc, const char **argv)
{
    struct sl_world *w = sl_world_get();
    size_t total = 0;
    for (size_t i = 0; i < p->n; i++)
        total += p->steps[i].selected;
    /* a missing input stops the run before its first step, not at the step that reads it */
    int rc = bcast_status(w, w->rank == 0 ? check_inputs(p) : 0);
    if (rc)
        return rc;
    /* one run at a time in the work directory (core/dirlock.h): held to the summary */
    struct sl_dirlock *lock = NULL;
    rc = sl_stage_lock(w, p->work_dir, ro->wait, argc, argv, &lock);
    if (rc)
        return rc;
    size_t num = 0, ran = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        if (!p->steps[i].selected)
            continue;
        int skipped = 0;
        rc = run_step(w, p, i, ++num, total, &skipped, argc, argv);
        ran += !skipped;
    }
    if (!rc && w->rank == 0) {
        char *json = sl_xasprintf("%s/summary.json", p->work_dir);
        char *svg = sl_xasprintf("%s/funnel.svg", p->work_dir);
        char *loss = sl_xasprintf("%s/loss.svg", p->work_dir);
        int e = sl_mkdir_p(p->work_dir);
        printf("pipeline '%s': %zu of %zu steps ran, %zu were complete (%s)\n", p->name, ran, total,
               total - ran, p->work_dir);
        if (!e)
            e = pl_report(p, stdout, json, svg, loss);
        if (e) {
            sl_error("%s", sl_err_msg());
            rc = 1;
        } else {
            printf("summary: %s\nfunnel: %s\n", json, svg);
            struct stat st;
            if (stat(loss, &st) == 0)
                printf("loss curve: %s\n", loss);
        }
        free(json);
        free(svg);
        free(loss);
    }
    fflush(stdout);
    sl_dirlock_release(lock);
    return rc;
}

static int check(void *opts, const struct sl_strlist *rest)
{
    const struct opts *ro = opts;
    if (ro->keys)
        return 0;
    if (rest->n == 0)
        return sl_err_set(SL_ERR_USAGE, "no pipeline given");
    for (size_t i = 1; i < rest->n; i++)
        if (!strchr(rest->v[i], '='))
            return sl_err_set(SL_ERR_USAGE,
                              "'%s' is not a key=value override\nhint: one pipeline "
                              "file, then key=value pairs",
                              rest->v[i]);
    return 0;
}

static int run(const void *opts, const struct sl_strlist *rest, int argc, const char **argv)
{
    const struct opts *ro = opts;
    if (ro->keys) {
        pl_print_keys(stdout);
        return 0;
    }
    struct pl_pipeline p;
    char *file = NULL;
    pl_find_pipeline(rest->v[0], &file);
    int rc = pl_pipeline_load(&p, file, (const char *const *)rest->v + 1, rest->n - 1);
    free(file);
    if (!rc) {
        rc = check_commands(&p);
        if (rc)
            pl_pipeline_release(&p);
    }
    if (rc) {
        sl_error("%s", sl_err_msg());
        return rc == SL_ERR_IO || rc == SL_ERR_NOTFOUND ? 1 : 2;
    }
    struct sl_world *w = sl_world_get();
    if (ro->dry)
        rc = w->rank == 0 ? dry_run(&p) : 0;
    else
        rc = run_steps(ro, &p, argc, argv);
    pl_pipeline_release(&p);
    return rc;
}

const struct sl_cmd cmd_run = SL_CMD(NULL, cmd_run_options, struct opts, check, run);
