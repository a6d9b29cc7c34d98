/* Tests for core/inputs: each directory walked and each file listed once (links, loops,
 * repeated operands). */
#include "tests/harness.h"

#include "core/inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *tpath(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", sl_test_tmpdir(), rel);
    return buf;
}

static void link_to(const char *target, const char *rel)
{
    char p[700];
    REQUIRE(symlink(target, tpath(p, sizeof(p), rel)) == 0);
}

TEST(inputs_links_walked_once)
{
    char p[700], q[700];
    mkdir(tpath(p, sizeof(p), "in"), 0777);
    mkdir(tpath(p, sizeof(p), "in/b"), 0777);
    sl_test_write("in/a.jsonl", "1\n", 2);
    sl_test_write("in/b/c.jsonl", "22\n", 3);
    link_to(".", "in/self");    /* a loop */
    link_to("..", "in/b/up");   /* a second loop, through the parent */
    link_to("b", "in/z-sib");   /* a sibling directory, sorted after b */
    link_to("b", "in/0-first"); /* a sibling directory, sorted before b: its name is kept */
    REQUIRE(link(tpath(p, sizeof(p), "in/a.jsonl"), tpath(q, sizeof(q), "in/hard.jsonl")) == 0);
    const char *ops[] = { tpath(p, sizeof(p), "in"), tpath(q, sizeof(q), "in/a.jsonl") };
    struct sl_inputs in;
    REQUIRE(sl_inputs_expand(&in, ops, 2, sl_jsonl_exts) == 0);
    REQUIRE(in.n == 2);
    CHECK_EQ_STR(in.v[0].rel, "0-first/c.jsonl");
    CHECK_EQ_STR(in.v[1].rel, "a.jsonl");
    CHECK_EQ_INT(sl_inputs_total_size(&in), 5);
    sl_inputs_release(&in);

    /* a directory reached first through b/up: given again afterwards, it adds nothing
     * (and is no error); its files keep the names found first */
    const char *ops2[] = { tpath(p, sizeof(p), "in/b"), tpath(q, sizeof(q), "in") };
    REQUIRE(sl_inputs_expand(&in, ops2, 2, sl_jsonl_exts) == 0);
    REQUIRE(in.n == 2);
    CHECK_EQ_STR(in.v[0].rel, "c.jsonl");
    CHECK_EQ_STR(in.v[1].rel, "up/a.jsonl");
    sl_inputs_release(&in);
}
