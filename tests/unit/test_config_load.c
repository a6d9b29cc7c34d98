/* Tests for core/config loading of hostile or careless YAML: alias bombs, duplicate keys,
 * binary files and top levels that are not a mapping. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "billion laughs": levels of ten aliases of the level below */
static char *laughs(int levels)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "a0: &a0 [lol]\n");
    for (int l = 1; l <= levels; l++) {
        sl_buf_printf(&b, "a%d: &a%d [", l, l);
        for (int k = 0; k < 10; k++)
            sl_buf_printf(&b, "%s*a%d", k ? ", " : "", l - 1);
        sl_buf_puts(&b, "]\n");
    }
    return sl_buf_detach(&b, NULL);
}

TEST(config_alias_bomb_is_refused)
{
    char *y = laughs(11);
    struct sl_cfg *c = NULL;
    CHECK_EQ_INT(sl_cfg_load_string(&c, y, strlen(y), "bomb.yaml"), SL_ERR_CONFIG);
    CHECK(c == NULL);
    CHECK_CONTAINS(sl_err_msg(), "bomb.yaml:");
    CHECK_CONTAINS(sl_err_msg(), "expands the config past the alias limit");
    CHECK_CONTAINS(sl_err_msg(), "at most 1000000 nodes and 64 MiB");
    free(y);
    /* three levels (1,111 nodes) are an ordinary config */
    y = laughs(3);
    REQUIRE(sl_cfg_load_string(&c, y, strlen(y), "ok.yaml") == 0);
    const char *s;
    CHECK_EQ_INT(sl_cfg_str(c, "a3.9.9.9.0", NULL, &s), 0);
    CHECK_EQ_STR(s, "lol");
    sl_cfg_free(c);
    free(y);
}

TEST(config_alias_count_is_limited)
{
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_puts(&b, "x: &x 1\nl: [");
    for (int i = 0; i < 10001; i++)
        sl_buf_puts(&b, i ? ", *x" : "*x");
    sl_buf_puts(&b, "]\n");
    struct sl_cfg *c = NULL;
    CHECK_EQ_INT(sl_cfg_load_string(&c, b.data, b.len, "many.yaml"), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(),
                   "many.yaml:2: alias '*x' is alias number 10001; a config may use at most 10000");
    sl_buf_release(&b);
}

TEST(config_duplicate_key_is_an_error)
{
    const char *y = "train:\n  steps: 10\n  lr: 1\n  steps: 20\n";
    struct sl_cfg *c = NULL;
    CHECK_EQ_INT(sl_cfg_load_string(&c, y, strlen(y), "d.yaml"), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "d.yaml:4: duplicate key 'steps' (first at line 2)");
    CHECK(c == NULL);
    /* the same key in two maps is fine; a key may override one from a merge key */
    y = "a: {x: 1}\nb: {x: 2}\nbase: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n";
    REQUIRE(sl_cfg_load_string(&c, y, strlen(y), "m.yaml") == 0);
    long n;
    CHECK_EQ_INT(sl_cfg_int(c, "d.x", 0, &n), 0);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(sl_cfg_int(c, "d.y", 0, &n), 0);
    CHECK_EQ_INT(n, 2);
    sl_cfg_free(c);
}

TEST(config_binary_file_is_named)
{
    static const char elf[] = "\x7f"
                              "ELF\x02\x01\x01";
    struct sl_cfg *c = NULL;
    CHECK_EQ_INT(sl_cfg_load_string(&c, elf, sizeof(elf) - 1, "model.bin"), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "model.bin: not a YAML text file: byte 0x7f at offset 0");
    const char *y = "a: 1\nb: caf\xe9\n";
    CHECK_EQ_INT(sl_cfg_load_string(&c, y, strlen(y), "latin1.yaml"), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "byte 0xe9 at offset 11 (line 2) is not UTF-8");
    /* a file must hold a mapping (a value given as an override may be anything) */
    static const char *const tops[][2] = {
        { "just a sentence\n",
          "-s.yaml:1: not a YAML mapping of settings: the top level is a single scalar" },
        { "- a\n- b\n", "-s.yaml:1: not a YAML mapping of settings: the top level is a list" },
    };
    char path[64];
    snprintf(path, sizeof(path), "/tmp/sluice-test-cfg-%d-s.yaml", (int)getpid());
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(path, "w");
        REQUIRE(f != NULL);
        fputs(tops[i][0], f);
        fclose(f);
        CHECK_EQ_INT(sl_cfg_load_file(&c, path), SL_ERR_CONFIG);
        CHECK_CONTAINS(sl_err_msg(), tops[i][1]);
        CHECK(c == NULL);
    }
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("# only a comment\n", f);
    fclose(f);
    REQUIRE(sl_cfg_load_file(&c, path) == 0);
    CHECK_EQ_INT(c->kind, SL_CFG_MAP);
    unlink(path);
    sl_cfg_free(c);
}

/* a "<<" whose value is not a map is an ordinary key: a second one replaces the first, and
 * the duplicate check must not read the key freed with it (found by fuzz_config) */
TEST(config_merge_key_that_is_not_a_map_twice)
{
    const char *y = "w:\n  <<:\n  steps: 1\n  <<:\n  lr: 2\n";
    struct sl_cfg *c = NULL;
    REQUIRE(sl_cfg_load_string(&c, y, strlen(y), "m.yaml") == 0);
    long n;
    CHECK_EQ_INT(sl_cfg_int(c, "w.lr", 0, &n), 0);
    CHECK_EQ_INT(n, 2);
    sl_cfg_free(c);
}
