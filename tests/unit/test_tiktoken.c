/* Tests for tokenize/tiktoken: the family table against OpenAI's rank files (their names and
 * counts) and against its copy in docs/tokenizers.md. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/stream.h"
#include "tokenize/tiktoken.h"

#include <stdlib.h>

/* The fixture rank files, named by tiktoken's encoding names, are told by name and by count
 * as the family of that name. */
TEST(tiktoken_families_tell_openai_files)
{
    static const char *const names[] = { "r50k_base", "cl100k_base", "o200k_base" };
    for (size_t i = 0; i < 3; i++) {
        char rel[64];
        snprintf(rel, sizeof(rel), "tokenizer/%s.tiktoken.zst", names[i]);
        const char *path = sl_test_fixture(rel);
        const struct tiktoken_family *f = tiktoken_family_by_file(path);
        REQUIRE(f);
        CHECK_EQ_STR(f->name, names[i]);
        struct sl_buf b = SL_BUF_INIT;
        b.max = (size_t)64 << 20;
        REQUIRE(sl_read_file(path, &b) == 0);
        size_t lines = 0;
        for (size_t k = 0; k < b.len; k++)
            lines += b.data[k] == '\n';
        f = tiktoken_family_by_ranks(lines);
        REQUIRE(f);
        CHECK_EQ_STR(f->name, names[i]);
        CHECK(f->special && !f->after);
        CHECK_EQ_STR(f->special[0].name, f->eod);
        sl_buf_release(&b);
    }
    CHECK(tiktoken_family_by_file("/o200k/ranks.tiktoken") == NULL); /* the base name only */
    CHECK(tiktoken_family_by_ranks(12345) == NULL);
    /* every pattern has OpenAI's encoding of it */
    for (int k = 0; k < PRETOK_KINDS; k++) {
        const struct tiktoken_family *f = tiktoken_family_of_pattern((enum pretok_kind)k);
        CHECK_EQ_INT(f->pattern, k);
        CHECK(f->special != NULL);
    }
    /* the end-of-document tokens, each once */
    CHECK_EQ_STR(tiktoken_eod_token(0), "<|endoftext|>");
    CHECK_EQ_STR(tiktoken_eod_token(1), "<|end_of_text|>");
    CHECK(tiktoken_eod_token(2) == NULL);
}

static void cell(struct sl_buf *row, const char *text)
{
    sl_buf_printf(row, "| %s%s", text, *text ? " " : "");
}

/* "`<\|endoftext\|>`": a table cell's code, '|' escaped. */
static void code_cell(struct sl_buf *row, const char *s)
{
    struct sl_buf c = SL_BUF_INIT;
    sl_buf_puts(&c, "`");
    for (; *s; s++)
        sl_buf_puts(&c, *s == '|' ? "\\|" : (char[]){ *s, 0 });
    sl_buf_puts(&c, "`");
    cell(row, c.data);
    sl_buf_release(&c);
}

/* 199998 -> "199,998" */
static void count_cell(struct sl_buf *row, size_t n)
{
    char s[32];
    if (n >= 1000)
        snprintf(s, sizeof(s), "%zu,%03zu", n / 1000, n % 1000);
    else
        snprintf(s, sizeof(s), "%zu", n);
    cell(row, s);
}

/* The table in docs/tokenizers.md is the table of the code, row for row. */
TEST(tiktoken_families_docs_table)
{
    struct sl_buf doc = SL_BUF_INIT, want = SL_BUF_INIT;
    doc.max = (size_t)16 << 20;
    REQUIRE(sl_read_file(sl_test_fixture("../../docs/tokenizers.md"), &doc) == 0);
    REQUIRE(sl_buf_putc(&doc, 0) == 0);
    const char *a = strstr(doc.data, "<!-- tiktoken-families");
    REQUIRE(a);
    const char *b = strstr(a, "<!-- /tiktoken-families -->");
    REQUIRE(b);
    a = strstr(a, "|---");
    REQUIRE(a && a < b);
    a = strchr(a, '\n') + 1;
    for (size_t i = 0; i < tiktoken_n_families; i++) {
        const struct tiktoken_family *f = &tiktoken_families[i];
        code_cell(&want, f->name);
        struct sl_buf files = SL_BUF_INIT;
        for (const char *const *n = f->file_names; *n; n++)
            sl_buf_printf(&files, "%s`%s`", n == f->file_names ? "" : ", ", *n);
        cell(&want, files.data ? files.data : "");
        sl_buf_release(&files);
        count_cell(&want, f->ranks);
        code_cell(&want, pretok_name(f->pattern));
        size_t n = 0;
        if (f->special) {
            while (f->special[n].name)
                n++;
        } else {
            struct tiktoken_special *sp = tiktoken_specials_after(f, (uint32_t)f->ranks);
            while (sp[n].name)
                n++;
            tiktoken_specials_free(sp);
        }
        count_cell(&want, n);
        code_cell(&want, f->eod);
        sl_buf_puts(&want, "|\n");
    }
    CHECK_EQ_MEM(a, (size_t)(b - a), want.data, want.len);
    if ((size_t)(b - a) != want.len || memcmp(a, want.data, want.len))
        fprintf(stderr, "the table should read:\n%.*s", (int)want.len, want.data);
    sl_buf_release(&doc);
    sl_buf_release(&want);
}
