/* Tests for core/stage: plans, records, resumption and manifests; the document runner. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/doc.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/stage.h"
#include "core/stage_docs.h"
#include "core/stream.h"
#include "core/world.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int begin(struct sl_stage *st, const char *out, const char *settings, int force)
{
    static const char *argv[] = { "test", NULL };
    struct sl_stage_cfg cfg = { .stage = "test",
                                .out_dir = out,
                                .argc = 1,
                                .argv = argv,
                                .settings_json = settings,
                                .force = force };
    return sl_stage_begin(st, sl_world_get(), &cfg);
}

TEST(stage_plan_resume_and_manifest)
{
    char out[600];
    snprintf(out, sizeof(out), "%s/out", sl_test_tmpdir());
    struct sl_stage st;
    REQUIRE(begin(&st, out, "{\"k\":1}", 0) == 0);
    CHECK_EQ_INT(st.resumed, 0);
    CHECK_EQ_INT(sl_stage_done(&st, "part-00000.jsonl.zst"), 0);
    char path[700];
    snprintf(path, sizeof(path), "%s/part-00000.jsonl.zst", out);
    struct sl_writer *w;
    REQUIRE(sl_writer_open(&w, path, NULL) == 0);
    sl_writer_write(w, "{}\n", 3);
    REQUIRE(sl_writer_commit(w) == 0);
    struct sl_counters c;
    sl_counters_init(&c);
    sl_counters_add(&c, "documents_out", 1);
    sl_counters_add(&c, "skipped_x", 2);
    REQUIRE(sl_stage_record(&st, "part-00000.jsonl.zst", &c) == 0);
    sl_stage_release(&st);

    /* same plan: resumed, the shard is done */
    REQUIRE(begin(&st, out, "{\"k\":1}", 0) == 0);
    CHECK_EQ_INT(st.resumed, 1);
    CHECK_EQ_INT(sl_stage_done(&st, "part-00000.jsonl.zst"), 1);
    char *names[] = { "part-00000.jsonl.zst" };
    struct sl_counters tot;
    sl_counters_init(&tot);
    REQUIRE(sl_stage_finish(&st, names, 1, NULL, &tot) == 0);
    CHECK_EQ_INT(sl_counters_get(&tot, "skipped_x"), 2);
    sl_stage_release(&st);
    snprintf(path, sizeof(path), "%s/manifest.json", out);
    struct json_object *m = json_object_from_file(path), *v;
    REQUIRE(m);
    CHECK(json_object_object_get_ex(m, "counts", &v));
    struct json_object *x;
    CHECK(json_object_object_get_ex(v, "documents_out", &x) && json_object_get_int(x) == 1);
    CHECK(json_object_object_get_ex(m, "outputs", &v) && json_object_array_length(v) == 1);
    json_object_put(m);

    /* another plan: refused, then replaced with force */
    CHECK_EQ_INT(begin(&st, out, "{\"k\":2}", 0), SL_ERR_EXISTS);
    CHECK_CONTAINS(sl_err_msg(), "--force");
    sl_stage_release(&st);
    REQUIRE(begin(&st, out, "{\"k\":2}", 1) == 0);
    CHECK_EQ_INT(st.resumed, 0);
    struct stat sb;
    snprintf(path, sizeof(path), "%s/part-00000.jsonl.zst", out);
    CHECK(stat(path, &sb) != 0); /* old outputs removed */
    sl_stage_release(&st);
    sl_counters_release(&c);
    sl_counters_release(&tot);
}

TEST(stage_unwritable_out)
{
    struct sl_stage st;
    CHECK(begin(&st, "/proc/sluice-out", "{}", 0) != 0);
    CHECK_CONTAINS(sl_err_msg(), "/proc/sluice-out");
    sl_stage_release(&st);
}

/* The document runner's test stage: by the document's "do" member, keep it, drop it,
 * split it in two, or edit its text. */
static int toy_doc(void *ctx, struct sl_stage_doc *sd, struct sl_doc *d)
{
    (void)ctx;
    struct sl_buf b = SL_BUF_INIT;
    sl_doc_get_str(d, "do", &b);
    const char *what = b.data ? b.data : "";
    int rc = SL_DOC_KEEP;
    if (!strcmp(what, "drop")) {
        rc = sl_stage_doc_drop(sd, "dropped_toy");
    } else if (!strcmp(what, "split")) {
        for (int k = 0; k < 2 && rc == 0; k++) {
            rc = sl_doc_set_text(d, k ? "second" : "first", k ? 6 : 5);
            if (!rc)
                rc = sl_stage_doc_write(sd, d);
        }
        rc = rc < 0 ? rc : SL_DOC_WRITTEN;
    } else if (!strcmp(what, "edit")) {
        rc = sl_doc_set_text(d, "edited", 6);
    }
    sl_buf_release(&b);
    return rc;
}

TEST(stage_docs_verdicts_and_counts)
{
    static const char in_text[] = "{\"id\":\"a\",\"text\":\"kept\",\"do\":\"keep\"}\n"
                                  "not json\n"
                                  "\n"
                                  "{\"text\":\"gone\",\"do\":\"drop\"}\n"
                                  "{\"id\":\"c\",\"text\":\"whole\",\"do\":\"split\"}\n"
                                  "{\"id\":\"d\",\"text\":\"old\",\"do\":\"edit\"}\n";
    struct sl_inputs in;
    const char *path = sl_test_write("in.jsonl", in_text, sizeof(in_text) - 1);
    REQUIRE(sl_inputs_expand(&in, &path, 1, NULL) == 0);
    char out[600];
    snprintf(out, sizeof(out), "%s/out", sl_test_tmpdir());
    static const char *argv[] = { "toy", NULL };
    struct sl_stage_docs job = { .files = { .stage = { .stage = "toy",
                                                       .out_dir = out,
                                                       .argc = 1,
                                                       .argv = argv,
                                                       .inputs = &in } },
                                 .doc = toy_doc };
    struct sl_stage_result res;
    REQUIRE(sl_stage_run_docs(sl_world_get(), &job, &res) == 0);
    /* 5 lines that are not blank were read, one of them skipped */
    CHECK_EQ_INT(sl_counters_get(&res.totals, "documents_in"), 5);
    CHECK_EQ_INT(sl_counters_get(&res.totals, "skipped_invalid_json"), 1);
    CHECK_EQ_INT(sl_counters_get(&res.totals, "blank_lines"), 1);
    CHECK_EQ_INT(sl_counters_get(&res.totals, "dropped_toy"), 1);
    CHECK_EQ_INT(sl_counters_get(&res.totals, "documents_out"), 4); /* keep, 2 pieces, edit */
    CHECK_EQ_INT(sl_counters_get(&res.totals, "bytes_in"), sizeof(in_text) - 1 - 9 - 1);
    sl_stage_result_release(&res);
    char shard[700];
    snprintf(shard, sizeof(shard), "%s/part-00000.jsonl.zst", out);
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_init(&b, 1 << 20);
    REQUIRE(sl_read_file(shard, &b) == 0);
    static const char want[] = "{\"id\":\"a\",\"text\":\"kept\",\"do\":\"keep\"}\n"
                               "{\"id\":\"c\",\"text\":\"first\",\"do\":\"split\"}\n"
                               "{\"id\":\"c\",\"text\":\"second\",\"do\":\"split\"}\n"
                               "{\"id\":\"d\",\"text\":\"edited\",\"do\":\"edit\"}\n";
    CHECK_EQ_MEM(b.data, b.len, want, sizeof(want) - 1);
    sl_buf_release(&b);
    sl_inputs_release(&in);
}
