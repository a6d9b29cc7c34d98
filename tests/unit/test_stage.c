/* Tests for core/stage: plans, records, resumption and manifests. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/stage.h"
#include "core/stream.h"
#include "core/world.h"

#include <json-c/json.h>
#include <stdlib.h>
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
