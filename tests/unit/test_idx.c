/* Tests for dataset/idx: the exact Megatron bytes, reading back, merging, bad files. */
#include "tests/harness.h"

#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "dataset/idx.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void prefix_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", sl_test_tmpdir(), name);
}

static void slurp(const char *path, struct sl_buf *b)
{
    sl_buf_reset(b);
    REQUIRE(sl_read_file(path, b) == 0);
}

TEST(idx_worked_example_bytes)
{
    /* docs [10, 11, 50256] and [12, 50256], GPT-2 vocab -> uint16 */
    char p[600], path[700];
    prefix_path(p, sizeof(p), "ex");
    struct idx_writer *w;
    REQUIRE(idx_writer_open(&w, p, idx_dtype_for_vocab(50257)) == 0);
    uint32_t d0[] = { 10, 11, 50256 }, d1[] = { 12, 50256 };
    REQUIRE(idx_writer_add_document(w, d0, 3) == 0);
    REQUIRE(idx_writer_add_document(w, d1, 2) == 0);
    REQUIRE(idx_writer_commit(w) == 0);
    struct sl_buf b = SL_BUF_INIT;
    snprintf(path, sizeof(path), "%s.bin", p);
    slurp(path, &b);
    CHECK_EQ_MEM(b.data, b.len, "\x0a\x00\x0b\x00\x50\xc4\x0c\x00\x50\xc4", 10);
    snprintf(path, sizeof(path), "%s.idx", p);
    slurp(path, &b);
    static const unsigned char want[82] = {
        'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0, /* magic */
        1, 0, 0, 0, 0, 0, 0, 0,                  /* version */
        8,                                       /* uint16 */
        2, 0, 0, 0, 0, 0, 0, 0,                  /* sequences */
        3, 0, 0, 0, 0, 0, 0, 0,                  /* document entries */
        3, 0, 0, 0, 2, 0, 0, 0,                  /* lengths */
        0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, /* pointers */
        0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0 /* doc idx */
    };
    CHECK_EQ_MEM(b.data, b.len, want, sizeof(want));
    sl_buf_release(&b);

    struct idx_reader *r;
    REQUIRE(idx_reader_open(&r, p) == 0);
    CHECK_EQ_INT(idx_reader_sequences(r), 2);
    CHECK_EQ_INT(idx_reader_documents(r), 2);
    CHECK_EQ_INT(idx_reader_tokens(r), 5);
    CHECK_EQ_INT(idx_reader_dtype(r), IDX_U16);
    uint32_t t[3];
    CHECK_EQ_INT(idx_reader_read(r, 0, 1, 2, t), 0);
    CHECK(t[0] == 11 && t[1] == 50256);
    CHECK_EQ_INT(idx_reader_read(r, 1, 1, 2, t), SL_ERR_TOOBIG);
    CHECK_EQ_INT(idx_reader_verify(r, 50257), 0);
    CHECK_EQ_INT(idx_reader_verify(r, 50000), SL_ERR_FORMAT);
    idx_reader_close(r);
}

TEST(idx_int32_empty_docs_and_merge)
{
    char a[600], b[600], m[600];
    prefix_path(a, sizeof(a), "a");
    prefix_path(b, sizeof(b), "b");
    prefix_path(m, sizeof(m), "m");
    struct idx_writer *w;
    REQUIRE(idx_writer_open(&w, a, idx_dtype_for_vocab(128256)) == 0);
    uint32_t big[] = { 100000, 128000 };
    idx_writer_add_document(w, big, 2);
    idx_writer_end_document(w); /* an empty document repeats the bookend */
    idx_writer_add_document(w, big, 1);
    REQUIRE(idx_writer_commit(w) == 0);
    REQUIRE(idx_writer_open(&w, b, IDX_I32) == 0);
    idx_writer_add_document(w, big + 1, 1);
    REQUIRE(idx_writer_commit(w) == 0);

    REQUIRE(idx_writer_open(&w, m, IDX_I32) == 0);
    REQUIRE(idx_writer_append_shard(w, a) == 0);
    REQUIRE(idx_writer_append_shard(w, b) == 0);
    REQUIRE(idx_writer_commit(w) == 0);
    struct idx_reader *r;
    REQUIRE(idx_reader_open(&r, m) == 0);
    CHECK_EQ_INT(idx_reader_sequences(r), 3);
    CHECK_EQ_INT(idx_reader_documents(r), 4);
    CHECK_EQ_INT(idx_reader_doc_index(r, 1), 1);
    CHECK_EQ_INT(idx_reader_doc_index(r, 2), 1);
    CHECK_EQ_INT(idx_reader_doc_index(r, 3), 2);
    CHECK_EQ_INT(idx_reader_doc_index(r, 4), 3);
    CHECK_EQ_INT(idx_reader_seq_ptr(r, 2), 12);
    uint32_t t;
    CHECK_EQ_INT(idx_reader_read(r, 2, 0, 1, &t), 0);
    CHECK_EQ_INT(t, 128000);
    CHECK_EQ_INT(idx_reader_verify(r, 0), 0);
    /* past the last sequence: the message gives the valid range, not "sequence 3 of 3" */
    CHECK_EQ_INT(idx_reader_read(r, 3, 0, 1, &t), SL_ERR_TOOBIG);
    CHECK_CONTAINS(sl_err_msg(), "no sequence 3 (the shard has 3: 0..2)");
    idx_reader_close(r);

    /* a uint16 writer refuses ids that do not fit */
    REQUIRE(idx_writer_open(&w, m, IDX_U16) == 0);
    CHECK_EQ_INT(idx_writer_add_document(w, big, 1), SL_ERR_FORMAT);
    CHECK_EQ_INT(idx_writer_append_shard(w, a), SL_ERR_FORMAT);
    idx_writer_abort(w);
}

/* A one-part output takes the part's files by hard links: the same file under the output's
 * names (no copy), readable and verified; the wrong dtype or a damaged part is refused with
 * nothing left under the output's names; an existing output is replaced whole. */
TEST(idx_link_shard_names_the_part)
{
    char a[600], out[600], path[700];
    prefix_path(a, sizeof(a), "part_l");
    prefix_path(out, sizeof(out), "linked");
    struct idx_writer *w;
    uint32_t d[] = { 5, 6, 7 };
    REQUIRE(idx_writer_open(&w, a, IDX_U16) == 0);
    idx_writer_add_document(w, d, 3);
    idx_writer_add_document(w, d, 1);
    REQUIRE(idx_writer_commit(w) == 0);
    /* an older output under the names, and a stale temporary under this process's name */
    sl_test_write("linked.bin", "old", 3);
    sl_test_write("linked.idx", "old", 3);
    snprintf(path, sizeof(path), "%s.bin", out);
    char *stale = sl_atomic_tmp_name(path);
    FILE *sf = fopen(stale, "w");
    REQUIRE(sf != NULL);
    fputs("stale", sf);
    fclose(sf);

    CHECK_EQ_INT(idx_link_shard(a, out, IDX_I32), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "dtype");
    REQUIRE(idx_link_shard(a, out, IDX_U16) == 0);
    for (int i = 0; i < 2; i++) {
        struct stat sa, so;
        snprintf(path, sizeof(path), "%s.%s", a, i ? "idx" : "bin");
        REQUIRE(stat(path, &sa) == 0);
        snprintf(path, sizeof(path), "%s.%s", out, i ? "idx" : "bin");
        REQUIRE(stat(path, &so) == 0);
        CHECK(sa.st_ino == so.st_ino && sa.st_dev == so.st_dev);
        CHECK_EQ_INT(so.st_nlink, 2);
    }
    CHECK(access(stale, F_OK) != 0);
    /* again, as a resumed run does: the names are already this file; no temporary is left */
    REQUIRE(idx_link_shard(a, out, IDX_U16) == 0);
    CHECK(access(stale, F_OK) != 0);
    free(stale);
    snprintf(path, sizeof(path), "%s.idx", out);
    stale = sl_atomic_tmp_name(path);
    CHECK(access(stale, F_OK) != 0);
    free(stale);
    struct idx_reader *r;
    REQUIRE(idx_reader_open(&r, out) == 0);
    CHECK_EQ_INT(idx_reader_documents(r), 2);
    CHECK_EQ_INT(idx_reader_tokens(r), 4);
    CHECK_EQ_INT(idx_reader_verify(r, 0), 0);
    idx_reader_close(r);

    /* a part whose .bin is shorter than its index: refused, the output's names untouched */
    prefix_path(out, sizeof(out), "linked2");
    snprintf(path, sizeof(path), "%s.bin", a);
    REQUIRE(truncate(path, 2) == 0);
    CHECK_EQ_INT(idx_link_shard(a, out, IDX_U16), SL_ERR_CORRUPT);
    snprintf(path, sizeof(path), "%s.bin", out);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof(path), "%s.idx", out);
    CHECK(access(path, F_OK) != 0);
}

TEST(idx_bad_files)
{
    char p[600], path[700];
    prefix_path(p, sizeof(p), "x");
    struct idx_writer *w;
    REQUIRE(idx_writer_open(&w, p, IDX_U16) == 0);
    uint32_t d[] = { 1, 2, 3, 4 };
    idx_writer_add_document(w, d, 4);
    idx_writer_add_document(w, d, 2);
    REQUIRE(idx_writer_commit(w) == 0);
    struct sl_buf idx = SL_BUF_INIT, bin = SL_BUF_INIT;
    snprintf(path, sizeof(path), "%s.idx", p);
    slurp(path, &idx);
    snprintf(path, sizeof(path), "%s.bin", p);
    slurp(path, &bin);
    struct idx_reader *r;

    /* missing */
    CHECK_EQ_INT(idx_reader_open(&r, "/nonexistent/prefix"), SL_ERR_NOTFOUND);
    CHECK_CONTAINS(sl_err_msg(), "/nonexistent/prefix.idx");
    /* truncated .idx */
    sl_test_write("t1.idx", idx.data, idx.len - 5);
    sl_test_write("t1.bin", bin.data, bin.len);
    prefix_path(path, sizeof(path), "t1");
    CHECK_EQ_INT(idx_reader_open(&r, path), SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "t1.idx");
    /* .bin shorter than the index says */
    sl_test_write("t2.idx", idx.data, idx.len);
    sl_test_write("t2.bin", bin.data, bin.len - 2);
    prefix_path(path, sizeof(path), "t2");
    CHECK_EQ_INT(idx_reader_open(&r, path), SL_ERR_CORRUPT);
    CHECK_CONTAINS(sl_err_msg(), "t2.bin");
    /* a fairseq index: same magic, no document count */
    struct sl_buf fs = SL_BUF_INIT;
    sl_buf_append(&fs, idx.data, 18);
    sl_buf_append(&fs, "\x02\0\0\0\0\0\0\0", 8);
    sl_buf_append(&fs, idx.data + 34, 4 * 2 + 8 * 2);
    sl_test_write("t3.idx", fs.data, fs.len);
    sl_test_write("t3.bin", bin.data, bin.len);
    prefix_path(path, sizeof(path), "t3");
    CHECK_EQ_INT(idx_reader_open(&r, path), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "fairseq");
    /* bad magic */
    static const char bad_idx[40] = "NOTANIDX"; /* zero-padded: 40 readable bytes */
    sl_test_write("t4.idx", bad_idx, sizeof(bad_idx));
    sl_test_write("t4.bin", "", 0);
    prefix_path(path, sizeof(path), "t4");
    CHECK_EQ_INT(idx_reader_open(&r, path), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "bad magic");
    sl_buf_release(&idx);
    sl_buf_release(&bin);
    sl_buf_release(&fs);
}

/* An id that does not fit a uint16 shard is refused, whatever its place in the sequence
 * (its rows are written in one pass); int32 rows are written as they are. */
TEST(idx_writer_id_too_large)
{
    char p[600];
    uint32_t ok[40], back[40];
    for (uint32_t i = 0; i < 40; i++)
        ok[i] = i * 1000;
    prefix_path(p, sizeof(p), "big16");
    struct idx_writer *w;
    REQUIRE(idx_writer_open(&w, p, IDX_U16) == 0);
    CHECK_EQ_INT(idx_writer_add_sequence(w, ok, 40), 0);
    ok[33] = 65536;
    CHECK_EQ_INT(idx_writer_add_sequence(w, ok, 40), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "65536");
    idx_writer_abort(w);
    prefix_path(p, sizeof(p), "big32");
    REQUIRE(idx_writer_open(&w, p, IDX_I32) == 0);
    CHECK_EQ_INT(idx_writer_add_document(w, ok, 40), 0);
    REQUIRE(idx_writer_commit(w) == 0);
    struct idx_reader *r;
    REQUIRE(idx_reader_open(&r, p) == 0);
    CHECK_EQ_INT(idx_reader_read(r, 0, 0, 40, back), 0);
    CHECK_EQ_MEM(back, sizeof(back), ok, sizeof(ok));
    idx_reader_close(r);
}

/* 16-bit rows are narrowed 8 ids at a time where the CPU allows: every length (the tail
 * after the last full 8), ids with the top bit of 16 set (kept exactly, not saturated), and
 * an id that does not fit at every place, for both 16-bit dtypes. */
TEST(idx_writer_narrows_16_bit_rows)
{
    static const struct {
        enum idx_dtype dtype;
        uint32_t limit;
    } kinds[] = { { IDX_U16, 65535 }, { IDX_I16, 32767 } };
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        char p[600];
        prefix_path(p, sizeof(p), kinds[k].dtype == IDX_U16 ? "narrow16u" : "narrow16i");
        struct idx_writer *w;
        REQUIRE(idx_writer_open(&w, p, kinds[k].dtype) == 0);
        uint32_t ids[41][41];
        for (size_t n = 0; n <= 40; n++) {
            for (size_t i = 0; i < n; i++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                uint32_t v = (uint32_t)(seed >> 33) % (kinds[k].limit + 1);
                ids[n][i] = i % 5 == 0 ? kinds[k].limit - (uint32_t)i : v; /* high ids too */
            }
            CHECK_EQ_INT(idx_writer_add_document(w, ids[n], n), 0);
        }
        for (size_t at = 0; at < 40; at++) {
            uint32_t bad[40];
            memcpy(bad, ids[40], sizeof(bad));
            bad[at] = at % 2 ? kinds[k].limit + 1 : 0x80000000u;
            CHECK_EQ_INT(idx_writer_add_sequence(w, bad, 40), SL_ERR_FORMAT);
            CHECK_CONTAINS(sl_err_msg(), "does not fit");
        }
        REQUIRE(idx_writer_commit(w) == 0);
        struct idx_reader *r;
        REQUIRE(idx_reader_open(&r, p) == 0);
        CHECK_EQ_INT(idx_reader_sequences(r), 41);
        for (size_t n = 0; n <= 40; n++) {
            uint32_t back[41] = { 0 };
            CHECK_EQ_INT(idx_reader_seq_len(r, n), n);
            CHECK_EQ_INT(idx_reader_read(r, n, 0, n, back), 0);
            CHECK_EQ_MEM(back, n * sizeof(uint32_t), ids[n], n * sizeof(uint32_t));
        }
        idx_reader_close(r);
    }
}
