/* Tests for core/file: existence, size, the atomic copy, identity and directory listing. */
#include "tests/harness.h"

#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/file.h"
#include "core/options.h"
#include "core/stream.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(file_exists_is_a_regular_file)
{
    const char *f = sl_test_write("a.txt", "abc", 3);
    char link[4096], missing[4096];
    snprintf(link, sizeof(link), "%s/link", sl_test_tmpdir());
    snprintf(missing, sizeof(missing), "%s/none", sl_test_tmpdir());
    REQUIRE(symlink(f, link) == 0);
    CHECK_EQ_INT(sl_file_exists(f), 1);
    CHECK_EQ_INT(sl_file_exists(link), 1); /* after the link */
    CHECK_EQ_INT(sl_file_exists(sl_test_tmpdir()), 0);
    CHECK_EQ_INT(sl_file_exists(missing), 0);
}

TEST(file_size_or_zero)
{
    const char *f = sl_test_write("b.bin", "0123456789", 10);
    CHECK_EQ_INT(sl_file_size(f), 10);
    CHECK_EQ_INT(sl_file_size(sl_test_write("empty", "", 0)), 0);
    char missing[4096];
    snprintf(missing, sizeof(missing), "%s/none", sl_test_tmpdir());
    CHECK_EQ_INT(sl_file_size(missing), 0);
}

/* Names in the test's directory that start with '.' (a temporary left behind). */
static int hidden_files(void)
{
    DIR *d = opendir(sl_test_tmpdir());
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

TEST(file_copy_whole_bytes)
{
    /* past one read step (64 KiB), with every byte value and NULs */
    size_t n = 200000;
    unsigned char *data = malloc(n);
    REQUIRE(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (unsigned char)(i * 131 + i / 7);
    const char *from = sl_test_write("from.bin", data, n);
    char to[4096];
    snprintf(to, sizeof(to), "%s/to.bin", sl_test_tmpdir());
    REQUIRE(sl_write_file_atomic(to, "old", 3) == 0); /* replaced */
    CHECK_EQ_INT(sl_copy_file(from, to), 0);
    struct sl_buf b = SL_BUF_INIT;
    b.max = n + 1;
    REQUIRE(sl_read_file(to, &b) == 0);
    CHECK_EQ_MEM(b.data, b.len, data, n);
    CHECK_EQ_INT(hidden_files(), 0);
    sl_buf_release(&b);
    free(data);
}

TEST(file_copy_errors_name_the_file)
{
    char missing[4096], to[4096], bad[4096];
    snprintf(missing, sizeof(missing), "%s/none", sl_test_tmpdir());
    snprintf(to, sizeof(to), "%s/to", sl_test_tmpdir());
    CHECK_EQ_INT(sl_copy_file(missing, to), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "cannot open '");
    CHECK_CONTAINS(sl_err_msg(), missing);
    CHECK_EQ_INT(access(to, F_OK), -1);
    /* a source that cannot be read (a directory): nothing under the final name */
    CHECK_EQ_INT(sl_copy_file(sl_test_tmpdir(), to), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "cannot read '");
    CHECK_EQ_INT(access(to, F_OK), -1);
    CHECK_EQ_INT(hidden_files(), 0);
    /* a destination whose directory is not there */
    const char *from = sl_test_write("c", "x", 1);
    snprintf(bad, sizeof(bad), "%s/no/such/dir/to", sl_test_tmpdir());
    CHECK_EQ_INT(sl_copy_file(from, bad), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "cannot create '");
}

TEST(file_same_file_after_links)
{
    char a[4096], b[4096], link[4096], missing[4096];
    snprintf(a, sizeof(a), "%s", sl_test_write("same-a", "a", 1));
    snprintf(b, sizeof(b), "%s", sl_test_write("same-b", "a", 1)); /* equal bytes, another file */
    snprintf(link, sizeof(link), "%s/same-link", sl_test_tmpdir());
    snprintf(missing, sizeof(missing), "%s/none", sl_test_tmpdir());
    REQUIRE(symlink(sl_test_tmpdir(), link) == 0);
    CHECK_EQ_INT(sl_same_file(a, a), 1);
    CHECK_EQ_INT(sl_same_file(a, b), 0);
    CHECK_EQ_INT(sl_same_file(link, sl_test_tmpdir()), 1); /* a directory, after the link */
    CHECK_EQ_INT(sl_same_file(missing, missing), 0);
    CHECK_EQ_INT(sl_same_file(NULL, a), 0);
}

TEST(file_dir_list_sorted_without_dots)
{
    char dir[4096], missing[4096], p[4200];
    snprintf(dir, sizeof(dir), "%s/list", sl_test_tmpdir());
    snprintf(missing, sizeof(missing), "%s/none", sl_test_tmpdir());
    REQUIRE(mkdir(dir, 0755) == 0);
    const char *names[] = { "b", "a.txt", "C", "sub" }; /* strcmp order: C a.txt b sub */
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        REQUIRE(sl_write_file_atomic(p, "x", 1) == 0);
    }
    snprintf(p, sizeof(p), "%s/sub", dir);
    REQUIRE(mkdir(p, 0755) == 0);
    struct sl_strlist l = { 0 };
    sl_strlist_push(&l, "kept"); /* names are appended after what the list holds */
    CHECK_EQ_INT(sl_dir_list(dir, &l), 0);
    REQUIRE(l.n == 5);
    CHECK_EQ_STR(l.v[0], "kept");
    CHECK_EQ_STR(l.v[1], "C");
    CHECK_EQ_STR(l.v[2], "a.txt");
    CHECK_EQ_STR(l.v[3], "b");
    CHECK_EQ_STR(l.v[4], "sub");
    CHECK_EQ_INT(sl_dir_list(missing, &l), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "cannot read the directory '");
    CHECK_CONTAINS(sl_err_msg(), missing);
    CHECK_EQ_INT(l.n, 5);
    sl_strlist_release(&l);
}
