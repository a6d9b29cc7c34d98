/* Tests for pipeline/pipeline: URL templates, shell quoting, and the command lines of a
 * pipeline with a train stage (defaults from the tokenize and tokenizer_train stages). */
#include "tests/harness.h"

#include "core/err.h"
#include "core/options.h"
#include "curate/commands.h"
#include "pipeline/pipeline.h"
#include "tokenize/commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(pipeline_template)
{
    char *u = NULL;
    CHECK_EQ_INT(pl_format_template("x/{n:02d}.jsonl.zst", 7, NULL, 0, &u), 0);
    CHECK_EQ_STR(u, "x/07.jsonl.zst");
    free(u);
    CHECK_EQ_INT(
        pl_format_template("c4-{lang}.tfrecord-{n:05d}-of-{total:05d}.json.gz", 3, "sw", 32, &u),
        0);
    CHECK_EQ_STR(u, "c4-sw.tfrecord-00003-of-00032.json.gz");
    free(u);
    CHECK_EQ_INT(pl_format_template("{n}", 12, NULL, 0, &u), 0);
    CHECK_EQ_STR(u, "12");
    free(u);
    CHECK_EQ_INT(pl_format_template("{lang}", 0, NULL, 0, &u), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "give 'languages'");
    CHECK_EQ_INT(pl_format_template("{n:5x}", 0, NULL, 0, &u), SL_ERR_CONFIG);
    CHECK_EQ_INT(pl_format_template("{n", 0, NULL, 0, &u), SL_ERR_CONFIG);
    CHECK_EQ_INT(pl_format_template("{m}", 0, NULL, 0, &u), SL_ERR_CONFIG);
}

TEST(pipeline_shell_line)
{
    struct sl_strlist a = { 0 };
    sl_strlist_push(&a, "download");
    sl_strlist_push(&a, "--url-template");
    sl_strlist_push(&a, "https://h/{n}.gz");
    sl_strlist_push(&a, "it's");
    char *l = pl_shell_line(&a);
    CHECK_EQ_STR(l, "sluice download --url-template 'https://h/{n}.gz' 'it'\\''s'");
    free(l);
    sl_strlist_release(&a);
}

static char *write_tmp(const char *text)
{
    char *path = strdup("/tmp/sluice-test-pipeline-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        free(path);
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static const struct pl_step *find_step(const struct pl_pipeline *p, const char *label)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->steps[i].label, label))
            return &p->steps[i];
    return NULL;
}

TEST(pipeline_train_stage)
{
    char *path = write_tmp("name: t\n"
                           "work_dir: w\n"
                           "extract: {format: jsonl, in: data}\n"
                           "tokenizer_train: {vocab_size: 512}\n"
                           "tokenize: {append_eod: true}\n"
                           "train:\n"
                           "  config: tiny.yaml\n"
                           "  train: {steps: 5}\n"
                           "  optim: {lr: 1e-2}\n");
    REQUIRE(path);
    const char *ov[] = { "train.train.steps=7" };
    struct pl_pipeline p;
    CHECK_EQ_INT(pl_pipeline_load(&p, path, ov, 1), 0);
    const struct pl_step *s = find_step(&p, "train");
    REQUIRE(s);
    char *l = pl_shell_line(&s->argv);
    /* tiny.yaml: beside the pipeline file (in /tmp) */
    CHECK_EQ_STR(l, "sluice train /tmp/tiny.yaml train.steps=7 optim.lr=1e-2 "
                    "data.prefix=w/tokenize/t_text_document model.vocab_size=512 "
                    "data.cache_dir=w/train/index-cache checkpoint.dir=w/train/checkpoints "
                    "log.file=w/train/log.jsonl");
    free(l);
    CHECK_EQ_STR(s->train_log, "w/train/log.jsonl");
    CHECK_EQ_STR(s->fresh_rm[0], "w/train/checkpoints");
    /* it depends on tokenize and tokenizer_train */
    CHECK_EQ_INT(s->ndeps, 2);
    pl_pipeline_release(&p);

    /* the user's own data and checkpoint directory: no defaults for them, nothing removed */
    const char *ov2[] = { "train.data={prefix: other_text_document}",
                          "train.checkpoint={dir: ck}" };
    CHECK_EQ_INT(pl_pipeline_load(&p, path, ov2, 2), 0);
    s = find_step(&p, "train");
    REQUIRE(s);
    l = pl_shell_line(&s->argv);
    CHECK_CONTAINS(l, " data.prefix=other_text_document ");
    CHECK_CONTAINS(l, " checkpoint.dir=ck ");
    CHECK(!strstr(l, "data.prefix=w/"));
    CHECK(s->fresh_rm[0] == NULL);
    free(l);
    pl_pipeline_release(&p);

    /* tokenize with split_sentences writes (and train reads) the _sentence shards */
    const char *ov_split[] = { "tokenize.split_sentences=true" };
    CHECK_EQ_INT(pl_pipeline_load(&p, path, ov_split, 1), 0);
    s = find_step(&p, "train");
    REQUIRE(s);
    l = pl_shell_line(&s->argv);
    CHECK_CONTAINS(l, " data.prefix=w/tokenize/t_text_sentence ");
    free(l);
    l = pl_shell_line(&find_step(&p, "tokenize")->argv);
    CHECK_CONTAINS(l, " --split-sentences");
    free(l);
    pl_pipeline_release(&p);

    /* an unknown key of the train stage names the file and line */
    const char *ov3[] = { "train.optimm={lr: 1}" };
    CHECK_EQ_INT(pl_pipeline_load(&p, path, ov3, 1), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "unknown key 'optimm'");
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'optim'");
    unlink(path);
    free(path);
}

/* Relative input paths: beside the pipeline file, else in sluice's data directory; from the
 * command line, or below work_dir: as given. */
TEST(pipeline_relative_paths)
{
    char dir[] = "/tmp/sluice-test-pl-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char *sub = NULL, *path = NULL, *data = NULL;
    REQUIRE(asprintf(&sub, "%s/p", dir) > 0);
    REQUIRE(asprintf(&path, "%s/p/x.yaml", dir) > 0);
    REQUIRE(asprintf(&data, "%s/p/data", dir) > 0);
    REQUIRE(mkdir(sub, 0777) == 0 && mkdir(data, 0777) == 0);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("name: t\nwork_dir: w\nsrc: data\n"
          "extract:\n  format: jsonl\n  in: ${src}\n"
          "filter: {config: configs/filters/gopher.yaml}\n"
          "clean: {in: w/extract, out: mine}\n"
          "dedup_exact: {in: mine}\n",
          f);
    fclose(f);
    struct pl_pipeline p;
    CHECK_EQ_INT(pl_pipeline_load(&p, path, NULL, 0), 0);
    const struct pl_step *s = find_step(&p, "extract");
    REQUIRE(s && s->inputs.n == 1);
    CHECK_EQ_STR(s->inputs.v[0], data);
    s = find_step(&p, "clean");
    REQUIRE(s && s->inputs.n == 1);
    CHECK_EQ_STR(s->inputs.v[0], "w/extract");
    /* the out: of an earlier step, as written */
    s = find_step(&p, "dedup_exact");
    REQUIRE(s && s->inputs.n == 1);
    CHECK_EQ_STR(s->inputs.v[0], "mine");
    CHECK_EQ_INT(s->ndeps, 1);
    s = find_step(&p, "filter");
    REQUIRE(s && s->inputs.n >= 1);
    /* not beside the file: the bundled one (the data directory of this build) */
    REQUIRE(pl_data_dir());
    CHECK_CONTAINS(s->inputs.v[0], "configs/filters/gopher.yaml");
    CHECK(access(s->inputs.v[0], R_OK) == 0);
    pl_pipeline_release(&p);
    /* a value given on the command line is relative to the working directory */
    const char *ov[] = { "src=mine" };
    CHECK_EQ_INT(pl_pipeline_load(&p, path, ov, 1), 0);
    s = find_step(&p, "extract");
    REQUIRE(s && s->inputs.n == 1);
    CHECK_EQ_STR(s->inputs.v[0], "mine");
    pl_pipeline_release(&p);
    unlink(path);
    rmdir(data);
    rmdir(sub);
    rmdir(dir);
    free(sub);
    free(path);
    free(data);
}

/* Each stage's keys are its command's options: every long option of the command's table
 * (but --out, the rows marked not a key, settings rows) is listed by `sluice run --keys`
 * as key_name -> --key-name, with the kind its row says (a flag, a list, a map). */
TEST(pipeline_keys_from_option_tables)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    REQUIRE(f != NULL);
    pl_print_keys(f);
    fclose(f);
    const struct {
        const char *head;
        const struct sl_option *opts;
    } stages[] = {
        { "download: sluice download\n", cmd_download_options },
        { "extract: sluice extract\n", cmd_extract_options },
        { "clean: sluice clean\n", cmd_clean_options },
        { "filter: sluice filter\n", cmd_filter_options },
        { "tag: sluice tag\n", cmd_tag_options },
        { "mix: sluice mix\n", cmd_mix_options },
        { "decontaminate: sluice decontaminate\n", cmd_decontaminate_options },
        { "dedup_exact: sluice dedup exact\n", cmd_dedup_exact_options },
        { "dedup_fuzzy: sluice dedup fuzzy\n", cmd_dedup_fuzzy_options },
        { "dedup_paragraphs: sluice dedup paragraphs\n", cmd_dedup_paragraphs_options },
        { "reshard: sluice reshard\n", cmd_reshard_options },
        { "tokenizer_train: sluice tokenizer train\n", cmd_tokenizer_train_options },
        { "tokenize: sluice tokenize\n", cmd_tokenize_options },
    };
    size_t nkeys = 0;
    for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++) {
        const char *sec = strstr(text, stages[s].head);
        REQUIRE(sec != NULL);
        sec += strlen(stages[s].head);
        size_t len = 0; /* the stage's lines: indented, up to the next stage's head */
        while (sec[len] == ' ') {
            const char *nl = strchr(sec + len, '\n');
            len = nl ? (size_t)(nl - sec) + 1 : strlen(sec);
        }
        char *block = strndup(sec, len);
        for (const struct sl_option *o = stages[s].opts; o->type != SL_OPT_END; o++) {
            int key = o->long_name && strcmp(o->long_name, "out") &&
                      !(o->flags & (SL_OPTF_NO_KEY | SL_OPTF_SETTING));
            char k[64], line[160];
            if (!o->long_name)
                continue;
            sl_option_key(o, k, sizeof(k));
            const char *how = o->type == SL_OPT_FLAG ? "true: "
                              : o->type == SL_OPT_STRS && (o->flags & SL_OPTF_KV)
                                  ? "each key: value of a map as k=v: "
                              : o->type == SL_OPT_STRS    ? "each of a list: "
                              : (o->flags & SL_OPTF_LIST) ? "a list, comma-joined: "
                              : o->type == SL_OPT_QUIET_ || o->type == SL_OPT_VERBOSE_ ? "true: "
                                                                                       : "";
            snprintf(line, sizeof(line), "  %-22s %s--%s", k, how, o->long_name);
            if (key) {
                nkeys++;
                if (!strstr(block, line))
                    sl_test_fail(__FILE__, __LINE__, "%s: no key line '%s'", stages[s].head, line);
            } else if (strstr(block, line)) {
                sl_test_fail(__FILE__, __LINE__, "%s: '%s' should not be a key", stages[s].head,
                             line);
            }
        }
        free(block);
    }
    CHECK(nkeys > 80);
    free(text);
}
