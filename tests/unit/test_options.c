/* Tests for core/options: parsing, errors, help text, sizes and ranges. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/jsonl.h"
#include "core/options.h"

#include <stdlib.h>
#include <string.h>

/* The option struct of the tables below. */
struct t_opts {
    const char *out, *mode, *key, *prefix, *rejected, *engine, *chain;
    long n, level;
    uint64_t size;
    int flag, nfkc, no_moji, no_ent, reassign;
    double thr;
    struct sl_strlist many;
};
#define SL_OPT_STRUCT struct t_opts

TEST(options_parse)
{
    struct t_opts o = { .mode = "a" };
    struct sl_strlist rest = { 0 };
    struct sl_option opts[] = {
        SL_OPT_STRING('o', "out", out, "DIR", "output"),
        SL_OPT_INTEGER('n', "num", n, "N", "count"),
        SL_OPT_SIZE(0, "size", size, "SIZE", "size"),
        SL_OPT_FLAG_(0, "force", flag, "force"),
        SL_OPT_STRINGS(0, "url", many, "URL", "urls"),
        SL_OPT_CHOICE(0, "mode", mode, "a|bb|c", "mode"),
        SL_OPT_END_,
    };
    const char *argv[] = { "cmd", "in1", "-o", "dir", "--num=5", "--size", "1.5K", "--force",
                           "--url", "u1", "--url=u2", "--mode", "bb", "in2", "--", "-x", NULL };
    CHECK_EQ_INT(sl_parse_options(16, argv, opts, &o, &rest), 0);
    CHECK_EQ_STR(o.out, "dir");
    CHECK_EQ_INT(o.n, 5);
    CHECK_EQ_INT(o.size, 1536);
    CHECK_EQ_INT(o.flag, 1);
    CHECK_EQ_INT(o.many.n, 2);
    CHECK_EQ_STR(o.mode, "bb");
    CHECK_EQ_INT(rest.n, 3);
    CHECK_EQ_STR(rest.v[2], "-x");
    sl_options_release(opts, &o);
    CHECK_EQ_INT(o.many.n, 0);
    sl_strlist_release(&rest);

    const char *bad1[] = { "cmd", "--nmu", "3" };
    CHECK_EQ_INT(sl_parse_options(3, bad1, opts, &o, &rest), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "did you mean '--num'");
    const char *bad2[] = { "cmd", "--num", "x" };
    CHECK_EQ_INT(sl_parse_options(3, bad2, opts, &o, &rest), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "--num expects an integer");
    const char *bad3[] = { "cmd", "--mode", "d" };
    CHECK_EQ_INT(sl_parse_options(3, bad3, opts, &o, &rest), SL_ERR_USAGE);
    const char *bad4[] = { "cmd", "-o" };
    CHECK_EQ_INT(sl_parse_options(2, bad4, opts, &o, &rest), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "needs a value");
    const char *help[] = { "cmd", "x", "-h" };
    CHECK_EQ_INT(sl_parse_options(3, help, opts, &o, &rest), SL_PARSE_HELP);
    sl_strlist_release(&rest);
}

TEST(options_size_and_ranges)
{
    uint64_t v;
    CHECK_EQ_INT(sl_parse_size("256M", &v), 0);
    CHECK_EQ_INT(v, 256u << 20);
    CHECK_EQ_INT(sl_parse_size("1GiB", &v), 0);
    CHECK_EQ_INT(v, 1u << 30);
    CHECK_EQ_INT(sl_parse_size("4096", &v), 0);
    CHECK_EQ_INT(v, 4096);
    CHECK_EQ_INT(sl_parse_size("12Q", &v), SL_ERR_USAGE);
    CHECK_EQ_INT(sl_parse_size("-1", &v), SL_ERR_USAGE);
    uint64_t *r;
    size_t n;
    CHECK_EQ_INT(sl_parse_ranges("5-7,0,3,6", &r, &n), 0);
    CHECK_EQ_INT(n, 5);
    CHECK(r[0] == 0 && r[1] == 3 && r[2] == 5 && r[3] == 6 && r[4] == 7);
    free(r);
    CHECK_EQ_INT(sl_parse_ranges("3-1", &r, &n), SL_ERR_USAGE);
    CHECK_EQ_INT(sl_parse_ranges("a", &r, &n), SL_ERR_USAGE);
    CHECK_EQ_INT(sl_edit_distance("reshard", "resahrd"), 2);
}

TEST(options_zstd_level)
{
    struct t_opts o = { .level = 3 };
    struct sl_option opts[] = { SL_OPT_ZSTD_LEVEL(level), SL_OPT_END_ };
    const char *ok[] = { "cmd", "--level", "22" };
    const char *low[] = { "cmd", "--level=0" };
    const char *high[] = { "cmd", "--level", "23" };
    struct sl_strlist rest = { 0 };
    CHECK_EQ_INT(sl_parse_options(3, ok, opts, &o, &rest), 0);
    CHECK_EQ_INT(o.level, 22);
    CHECK_EQ_INT(sl_parse_options(2, low, opts, &o, &rest), SL_ERR_USAGE);
    CHECK(strstr(sl_err_msg(), "--level must be 1..22") != NULL);
    CHECK_EQ_INT(sl_parse_options(3, high, opts, &o, &rest), SL_ERR_USAGE);
    sl_strlist_release(&rest);
}

TEST(options_help_text)
{
    struct sl_option opts[] = { SL_OPT_STRING('o', "out", out, "DIR", "output directory"),
                                SL_OPT_COMMON, SL_OPT_END_ };
    const char *const usage[] = { "sluice x --out DIR IN...", "", "Does x.", NULL };
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sl_usage_print(f, usage, opts);
    fclose(f);
    CHECK_CONTAINS(buf, "usage: sluice x --out DIR IN...\n\nDoes x.\n");
    CHECK_CONTAINS(buf, "-o, --out DIR");
    CHECK_CONTAINS(buf, "-q, --quiet");
    free(buf);
}

/* A row's default (.def) is written as on the command line: it sets the member before
 * parsing, -h adds it after the help (unless SL_OPTF_DEF_UNSAID), and a row with
 * .omit = SL_OMIT_DEF is left out of the settings while it has it. */
TEST(options_defaults)
{
    struct t_opts o;
    memset(&o, 0, sizeof(o));
    struct sl_option opts[] = {
        SL_OPT_CHOICE(0, "mode", mode, "a|bb|c", "mode", .def = "bb"),
        SL_OPT_INTEGER('n', "num", n, "N", "count", .def = "-7", .flags = SL_OPTF_DEF_UNSAID),
        SL_OPT_SIZE(0, "size", size, "SIZE", "size", .def = "1.5K", .flags = SL_OPTF_OUTPUT,
                    .omit = SL_OMIT_DEF),
        SL_OPT_DOUBLE(0, "threshold", thr, "J", "threshold", .def = "0.25"),
        SL_OPT_FLAG_(0, "nfkc", nfkc, "NFKC", .def = "1", .flags = SL_OPTF_OUTPUT),
        SL_OPT_TEXT_KEY(key, .omit = SL_OMIT_DEF),
        SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = SL_OMIT_DEF),
        SL_OPT_END_,
    };
    CHECK_EQ_INT(sl_options_init(opts, &o), 0);
    CHECK_EQ_STR(o.mode, "bb");
    CHECK_EQ_INT(o.n, -7);
    CHECK_EQ_INT(o.size, 1536);
    CHECK(o.thr == 0.25);
    CHECK_EQ_INT(o.nfkc, 1);
    CHECK_EQ_STR(o.key, "text");
    CHECK_EQ_INT(o.level, 3);
    /* at their defaults, the rows marked SL_OMIT_DEF are left out */
    struct sl_buf b = SL_BUF_INIT;
    CHECK_EQ_INT(sl_options_settings_json(opts, &o, &b), 0);
    CHECK_EQ_STR(b.data, "{\"nfkc\":true}");
    const char *argv[] = { "cmd", "--size", "2K", "--text-key", "t", "--level", "3", NULL };
    struct sl_strlist rest = { 0 };
    CHECK_EQ_INT(sl_parse_options(7, argv, opts, &o, &rest), 0);
    sl_buf_reset(&b);
    sl_options_settings_json(opts, &o, &b);
    CHECK_EQ_STR(b.data, "{\"size\":2048,\"nfkc\":true,\"text_key\":\"t\"}");
    sl_buf_release(&b);
    /* -h says the defaults, but not where the help says it in its own words */
    char *help = NULL;
    size_t hn = 0;
    FILE *f = open_memstream(&help, &hn);
    const char *const usage[] = { "cmd [options]", NULL };
    sl_usage_print(f, usage, opts);
    fclose(f);
    CHECK_CONTAINS(help, "  mode (default bb)\n");
    CHECK_CONTAINS(help, "  count\n");
    CHECK_CONTAINS(help, "  size (default 1.5K)\n");
    CHECK_CONTAINS(help, "  member that holds the text (default text)\n");
    CHECK_CONTAINS(help, "  zstd level of the shards (default 3)\n");
    free(help);
    /* a default that does not parse is a mistake in the table, named */
    struct sl_option bad[] = { SL_OPT_INTEGER(0, "num", n, "N", "count", .def = "x"), SL_OPT_END_ };
    CHECK_EQ_INT(sl_options_init(bad, &o), SL_ERR_STATE);
    CHECK_CONTAINS(sl_err_msg(), "the default 'x' of --num");
    sl_strlist_release(&rest);
}

/* --max-line's default is the one the JSONL reader has */
TEST(options_max_line_default)
{
    struct t_opts o;
    memset(&o, 0, sizeof(o));
    struct sl_option opts[] = { SL_OPT_MAX_LINE(size), SL_OPT_END_ };
    CHECK_EQ_INT(sl_options_init(opts, &o), 0);
    CHECK_EQ_INT(o.size, SL_JSONL_DEFAULT_MAX_LINE);
}

/* A required option not given is refused with the name and argument of its row, in table
 * order; a row marked SL_OPTF_ALONE, given, needs nothing else. */
TEST(options_required)
{
    struct t_opts o;
    memset(&o, 0, sizeof(o));
    struct sl_option opts[] = {
        SL_OPT_CHOICE('f', "mode", mode, "a|bb|c", "mode", .required = 1),
        SL_OPT_STRING('o', "out", out, "DIR", "output", .required = 1),
        SL_OPT_STRINGS(0, "url", many, "URL", "urls", .required = 1),
        SL_OPT_FLAG_(0, "force", flag, "list and exit", .flags = SL_OPTF_ALONE),
        SL_OPT_END_,
    };
    CHECK_EQ_INT(sl_options_check_required(opts, &o), SL_ERR_USAGE);
    CHECK_EQ_STR(sl_err_msg(), "--mode is required");
    o.mode = "a";
    CHECK_EQ_INT(sl_options_check_required(opts, &o), SL_ERR_USAGE);
    CHECK_EQ_STR(sl_err_msg(), "--out DIR is required");
    o.out = "d";
    CHECK_EQ_INT(sl_options_check_required(opts, &o), SL_ERR_USAGE);
    CHECK_EQ_STR(sl_err_msg(), "--url URL is required");
    sl_strlist_push(&o.many, "u");
    CHECK_EQ_INT(sl_options_check_required(opts, &o), 0);
    sl_options_release(opts, &o);
    memset(&o, 0, sizeof(o));
    o.flag = 1;
    CHECK_EQ_INT(sl_options_check_required(opts, &o), 0);
}

/* The settings of a run come from the rows marked SL_OPTF_OUTPUT, in table order, with
 * their names, inversions, omissions and the values the command works out. */
TEST(options_settings_json)
{
    struct t_opts o = {
        .key = "text", .engine = "lexbor", .chain = "{\"filters\":[1,2]}", .level = 3, .thr = 0.8
    };
    struct sl_strlist rest = { 0 };
    struct sl_option opts[] = {
        SL_OPT_STRING('o', "out", out, "DIR", "output"),
        SL_SETTING(SL_OPT_JSON_, "config", chain),
        SL_OPT_FLAG_(0, "nfkc", nfkc, "NFKC", .flags = SL_OPTF_OUTPUT),
        SL_OPT_FLAG_(0, "no-mojibake", no_moji, "keep mojibake",
                     .flags = SL_OPTF_OUTPUT | SL_OPTF_INVERT, .setting = "mojibake"),
        SL_OPT_FLAG_(0, "no-entities", no_ent, "keep entities",
                     .flags = SL_OPTF_OUTPUT | SL_OPTF_INVERT, .setting = "entities",
                     .omit = "true"),
        SL_OPT_STRING(0, "text-key", key, "KEY", "text member", .flags = SL_OPTF_OUTPUT),
        SL_OPT_STRING(0, "rejected", rejected, "DIR", "rejected",
                      .flags = SL_OPTF_OUTPUT | SL_OPTF_GIVEN),
        SL_OPT_STRINGS(0, "json-key", many, "KEY", "keys", .flags = SL_OPTF_OUTPUT,
                       .setting = "keys"),
        SL_OPT_SIZE(0, "shard-size", size, "SIZE", "size", .flags = SL_OPTF_OUTPUT, .omit = "0"),
        SL_OPT_STRING(0, "id-prefix", prefix, "P", "prefix",
                      .flags = SL_OPTF_OUTPUT | SL_OPTF_PAIRED, .omit = "null"),
        SL_OPT_FLAG_(0, "reassign-ids", reassign, "reassign", .flags = SL_OPTF_OUTPUT,
                     .omit = "false"),
        SL_OPT_DOUBLE(0, "threshold", thr, "J", "threshold", .flags = SL_OPTF_OUTPUT),
        SL_OPT_ZSTD_LEVEL(level, .flags = SL_OPTF_OUTPUT, .omit = "3"),
        SL_SETTING(SL_OPT_STR, "html_engine", engine),
        SL_OPT_END_,
    };
    struct sl_buf b = SL_BUF_INIT;
    CHECK_EQ_INT(sl_options_settings_json(opts, &o, &b), 0);
    CHECK_EQ_STR(b.data, "{\"config\":{\"filters\":[1,2]},\"nfkc\":false,\"mojibake\":true,"
                         "\"text_key\":\"text\",\"rejected\":false,\"keys\":[],"
                         "\"threshold\":0.8,\"html_engine\":\"lexbor\"}");
    /* the same table parsed: given values change the settings, the omitted ones appear */
    const char *argv[] = { "cmd",
                           "--nfkc",
                           "--no-mojibake",
                           "--no-entities",
                           "--text-key",
                           "t\"x",
                           "--rejected",
                           "R",
                           "--json-key",
                           "a",
                           "--json-key",
                           "b",
                           "--shard-size",
                           "1K",
                           "--level",
                           "5",
                           "--threshold",
                           "0.123456789",
                           NULL };
    CHECK_EQ_INT(sl_parse_options(18, argv, opts, &o, &rest), 0);
    sl_buf_reset(&b);
    CHECK_EQ_INT(sl_options_settings_json(opts, &o, &b), 0);
    CHECK_EQ_STR(b.data, "{\"config\":{\"filters\":[1,2]},\"nfkc\":true,\"mojibake\":false,"
                         "\"entities\":false,\"text_key\":\"t\\\"x\",\"rejected\":true,"
                         "\"keys\":[\"a\",\"b\"],\"shard_size\":1024,\"threshold\":0.123457,"
                         "\"level\":5,\"html_engine\":\"lexbor\"}");
    /* paired rows: both written when either differs from its omit text */
    o.reassign = 1;
    sl_buf_reset(&b);
    sl_options_settings_json(opts, &o, &b);
    CHECK_CONTAINS(b.data, ",\"id_prefix\":null,\"reassign_ids\":true,");
    o.reassign = 0;
    o.prefix = "p";
    sl_buf_reset(&b);
    sl_options_settings_json(opts, &o, &b);
    CHECK_CONTAINS(b.data, ",\"id_prefix\":\"p\",\"reassign_ids\":false,");
    /* settings rows are not options: not parsed, not in -h */
    const char *bad[] = { "cmd", "--html-engine", "x", NULL };
    CHECK_EQ_INT(sl_parse_options(3, bad, opts, &o, &rest), SL_ERR_USAGE);
    char *help = NULL;
    size_t hn = 0;
    FILE *f = open_memstream(&help, &hn);
    const char *const usage[] = { "cmd [options]", NULL };
    sl_usage_print(f, usage, opts);
    fclose(f);
    CHECK(strstr(help, "--no-entities") != NULL);
    CHECK(strstr(help, "html_engine") == NULL && strstr(help, "config") == NULL);
    free(help);
    char k[64];
    CHECK_EQ_STR(sl_option_key(&opts[3], k, sizeof(k)), "no_mojibake");
    sl_buf_release(&b);
    sl_options_release(opts, &o);
    sl_strlist_release(&rest);
}
