/* Tests for core/inputs: each directory walked and each file listed once (links, loops,
 * repeated operands), and inputs read as planned (appends not read, a shrunk file an
 * error, a FIFO read to its end). */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/inputs.h"
#include "core/jsonl.h"
#include "core/stream.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* Read a whole input through sl_input_source: its bytes, or the error. */
static int read_input(const struct sl_input *in, struct sl_buf *b)
{
    struct sl_reader *r;
    int rc = sl_input_reader(&r, in, NULL);
    if (!rc)
        rc = sl_reader_read_all(r, b);
    sl_reader_close(r);
    return rc;
}

TEST(inputs_read_as_planned)
{
    char p[700];
    sl_test_write("grow.jsonl", "{\"text\":\"a\"}\n", 13);
    struct sl_input in;
    REQUIRE(sl_input_from_path(&in, tpath(p, sizeof(p), "grow.jsonl")) == 0);
    CHECK_EQ_INT(in.size, 13);
    FILE *f = fopen(p, "a");
    REQUIRE(f);
    fputs("{\"text\":\"appended\"}\n", f);
    fclose(f);
    struct sl_buf b = SL_BUF_INIT;
    REQUIRE(read_input(&in, &b) == 0);
    CHECK_EQ_INT(b.len, 13); /* the planned size, not what is there now */
    sl_buf_release(&b);

    /* the JSONL reader the same: one document */
    struct sl_jsonl_reader *jr;
    REQUIRE(sl_input_jsonl(&jr, &in, NULL) == 0);
    struct sl_doc d;
    sl_doc_init(&d);
    CHECK_EQ_INT(sl_jsonl_next(jr, &d), 1);
    CHECK_EQ_INT(sl_jsonl_next(jr, &d), 0);
    sl_doc_release(&d);
    sl_jsonl_close(jr);

    /* shorter than planned: an error naming it, not a quiet end */
    REQUIRE(truncate(p, 5) == 0);
    sl_buf_init(&b, 0);
    CHECK_EQ_INT(read_input(&in, &b), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "is shorter than when the run began: it ends at byte 5 of 13");
    sl_buf_release(&b);
    sl_input_release(&in);

    /* unreadable: named as such */
    struct sl_input gone = { 0 };
    gone.path = "/nonexistent/x.jsonl";
    gone.mode = S_IFREG;
    struct sl_source *src;
    CHECK_EQ_INT(sl_input_source(&src, &gone), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "cannot read input '/nonexistent/x.jsonl': No such file");
}

TEST(inputs_fifo_read_to_its_end)
{
    char p[700];
    REQUIRE(mkfifo(tpath(p, sizeof(p), "f.jsonl"), 0666) == 0);
    struct sl_input in;
    REQUIRE(sl_input_from_path(&in, p) == 0);
    CHECK(S_ISFIFO((mode_t)in.mode));
    CHECK_EQ_INT(in.size, 0);
    CHECK_CONTAINS(sl_input_kind(&in), "FIFO");
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(p, O_WRONLY);
        int ok = fd >= 0 && write(fd, "abcdef\n", 7) == 7;
        _exit(ok ? 0 : 1);
    }
    struct sl_buf b = SL_BUF_INIT;
    CHECK_EQ_INT(read_input(&in, &b), 0);
    CHECK_EQ_INT(b.len, 7);
    int status = 0;
    waitpid(pid, &status, 0);
    sl_buf_release(&b);
    sl_input_release(&in);
}
