/* Tests for core/config: YAML loading, overrides, typed getters, unknown keys. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

#include <stdlib.h>

static const char *yaml = "model:\n"
                          "  n_layer: 12\n"
                          "  dropout: 0.1\n"
                          "  name: gpt2\n"
                          "train:\n"
                          "  steps: 1000\n"
                          "  bf16: true\n"
                          "  shard_size: 256M\n"
                          "stages: [extract, clean]\n"
                          "filters:\n"
                          "  - name: words\n"
                          "    min: 50\n"
                          "  - name: symbols\n"
                          "base: &b {x: 1}\n"
                          "derived:\n"
                          "  <<: *b\n"
                          "  y: 2\n";

TEST(config_load_and_get)
{
    struct sl_cfg *c;
    REQUIRE(sl_cfg_load_string(&c, yaml, strlen(yaml), "t.yaml") == 0);
    long n;
    double d;
    int b;
    uint64_t sz;
    const char *s;
    CHECK_EQ_INT(sl_cfg_int(c, "model.n_layer", 0, &n), 0);
    CHECK_EQ_INT(n, 12);
    CHECK_EQ_INT(sl_cfg_double(c, "model.dropout", 0, &d), 0);
    CHECK(d == 0.1);
    CHECK_EQ_INT(sl_cfg_bool(c, "train.bf16", 0, &b), 0);
    CHECK_EQ_INT(b, 1);
    CHECK_EQ_INT(sl_cfg_size(c, "train.shard_size", 0, &sz), 0);
    CHECK_EQ_INT(sz, 256u << 20);
    CHECK_EQ_INT(sl_cfg_str(c, "filters.1.name", NULL, &s), 0);
    CHECK_EQ_STR(s, "symbols");
    CHECK_EQ_INT(sl_cfg_int(c, "missing.key", 7, &n), 0);
    CHECK_EQ_INT(n, 7);
    CHECK_EQ_INT(sl_cfg_int(c, "derived.x", 0, &n), 0); /* merge key */
    CHECK_EQ_INT(n, 1);
    const char **v;
    size_t k;
    CHECK_EQ_INT(sl_cfg_strs(c, "stages", &v, &k), 0);
    CHECK_EQ_INT(k, 2);
    CHECK_EQ_STR(v[1], "clean");
    free(v);
    sl_cfg_free(c);
}

TEST(config_type_errors_name_file_and_line)
{
    struct sl_cfg *c;
    REQUIRE(sl_cfg_load_string(&c, yaml, strlen(yaml), "t.yaml") == 0);
    long n;
    CHECK_EQ_INT(sl_cfg_int(c, "model.name", 0, &n), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "t.yaml:4: model.name: expected an integer, got 'gpt2'");
    sl_cfg_free(c);
}

TEST(config_overrides)
{
    struct sl_cfg *c;
    REQUIRE(sl_cfg_load_string(&c, yaml, strlen(yaml), "t.yaml") == 0);
    CHECK_EQ_INT(sl_cfg_override(c, "model.n_layer=24"), 0);
    CHECK_EQ_INT(sl_cfg_override(c, "train.optim.lr=3e-4"), 0);
    CHECK_EQ_INT(sl_cfg_override(c, "stages=[tokenize]"), 0);
    CHECK_EQ_INT(sl_cfg_override(c, "filters.0.min=10"), 0);
    CHECK_EQ_INT(sl_cfg_override(c, "data.prefix=0.3 a 0.7 b"), 0);
    long n;
    double d;
    const char *s;
    sl_cfg_int(c, "model.n_layer", 0, &n);
    CHECK_EQ_INT(n, 24);
    sl_cfg_double(c, "train.optim.lr", 0, &d);
    CHECK(d == 3e-4);
    sl_cfg_int(c, "filters.0.min", 0, &n);
    CHECK_EQ_INT(n, 10);
    sl_cfg_str(c, "data.prefix", NULL, &s);
    CHECK_EQ_STR(s, "0.3 a 0.7 b");
    const char **v;
    size_t k;
    sl_cfg_strs(c, "stages", &v, &k);
    CHECK_EQ_INT(k, 1);
    CHECK_EQ_STR(v[0], "tokenize");
    free(v);
    CHECK_EQ_INT(sl_cfg_override(c, "novalue"), SL_ERR_USAGE);
    CHECK_EQ_INT(sl_cfg_override(c, "filters.9.min=1"), SL_ERR_USAGE);
    sl_cfg_free(c);
}

TEST(config_unknown_keys)
{
    const char *y = "train:\n  steps: 10\n  stpes: 20\n";
    struct sl_cfg *c;
    REQUIRE(sl_cfg_load_string(&c, y, strlen(y), "u.yaml") == 0);
    long n;
    sl_cfg_int(c, "train.steps", 0, &n);
    CHECK_EQ_INT(sl_cfg_check_unused(c), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "u.yaml:3: unknown key 'train.stpes'");
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'steps'");
    sl_cfg_free(c);
}

/* A key one letter away from a key the program asks for is reported when it is asked for,
 * before a check of the default could hide it; the keys asked for but absent are the
 * known keys that check_unused suggests from. */
TEST(config_unknown_key_near_known)
{
    const char *y = "model:\n  num_layer: 2\n  hidden_size: 64\n"
                    "optim:\n  lrr: 0.1\n  eps: 1e-8\n"
                    "data:\n  prefx: x\n";
    struct sl_cfg *c;
    REQUIRE(sl_cfg_load_string(&c, y, strlen(y), "m.yaml") == 0);
    long n;
    double d;
    const char *s;
    CHECK_EQ_INT(sl_cfg_int(c, "model.hidden_size", 0, &n), 0);
    CHECK_EQ_INT(sl_cfg_int(c, "model.num_layers", 0, &n), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "m.yaml:2: unknown key 'model.num_layer'");
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'num_layers'?");
    CHECK_EQ_INT(sl_cfg_double(c, "optim.eps", 0, &d), 0);
    CHECK_EQ_INT(sl_cfg_double(c, "optim.lr", 0, &d), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "unknown key 'optim.lrr'");
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'lr'?");
    /* farther: no error at the getter; check_unused suggests the key asked for, not the
     * nearest key present (eps) */
    CHECK_EQ_INT(sl_cfg_str(c, "data.split", "x", &s), 0);
    CHECK_EQ_INT(sl_cfg_str(c, "data.prefix_xyz", NULL, &s), 0);
    sl_cfg_mark_used(sl_cfg_get(c, "model"));
    sl_cfg_mark_used(sl_cfg_get(c, "optim"));
    CHECK_EQ_INT(sl_cfg_str(c, "data.prefix", NULL, &s), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'prefix'?");
    sl_cfg_free(c);

    /* check_unused: the asked-for key, when it is the nearest */
    const char *y2 = "optim:\n  lr_x: 0.1\n  eps: 1e-8\n";
    REQUIRE(sl_cfg_load_string(&c, y2, strlen(y2), "o.yaml") == 0);
    CHECK_EQ_INT(sl_cfg_double(c, "optim.eps", 0, &d), 0);
    CHECK_EQ_INT(sl_cfg_double(c, "optim.lr", 0, &d), 0);
    CHECK_EQ_INT(sl_cfg_check_unused(c), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "unknown key 'optim.lr_x'");
    CHECK_CONTAINS(sl_err_msg(), "did you mean 'lr'?");
    sl_cfg_free(c);
}

TEST(config_invalid_yaml)
{
    const char *y = "a: [1, 2\nb: 3\n";
    struct sl_cfg *c;
    CHECK_EQ_INT(sl_cfg_load_string(&c, y, strlen(y), "bad.yaml"), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "bad.yaml:");
    CHECK(c == NULL);
}

TEST(config_to_json)
{
    const char *y = "a: 1\nb: [x, 'true', true, 1.5]\nc: ~\n";
    struct sl_cfg *c;
    REQUIRE(sl_cfg_load_string(&c, y, strlen(y), "j.yaml") == 0);
    struct sl_buf b = SL_BUF_INIT;
    sl_cfg_to_json(c, &b);
    CHECK_EQ_STR(b.data, "{\"a\":1,\"b\":[\"x\",\"true\",true,1.5],\"c\":null}");
    sl_buf_release(&b);
    sl_cfg_free(c);
}
