/* Tests for tokenize/tokenizer: a spec's kind from TOKENIZER_SPEC_TABLE, its files checked
 * and copied by kind. */
#include "tests/harness.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/err.h"
#include "core/file.h"
#include "tokenize/tokenizer.h"

#include <stdlib.h>

/* Each kind's name is the prefix of a spec of that kind, from the table's first row. */
TEST(tokenizer_kind_names_from_the_table)
{
#define FIRST_(name, arg, kind, variant, opts)                                                     \
    if (!seen[kind]++)                                                                             \
        CHECK_EQ_STR(tokenizer_kind_name(kind), name);
    int seen[TOKENIZER_BERT + 1] = { 0 };
    TOKENIZER_SPEC_TABLE(FIRST_)
#undef FIRST_
    for (int k = 0; k <= TOKENIZER_BERT; k++)
        CHECK_EQ_INT(seen[k] > 0, 1);
    CHECK_EQ_STR(tokenizer_spec_path("bert-lower,extra-ids=100:v.txt"), "v.txt");
    CHECK(tokenizer_spec_path("bertx:v.txt") == NULL);
}

/* The copies of a spec's files: GPT-2's two, a BERT vocabulary under its own name (any
 * variant and option), a rank file with its sidecar; a missing file names the spec. */
TEST(tokenizer_copy_files_by_kind)
{
    const char *t = sl_test_tmpdir();
    char *gdir = sl_xasprintf("%s/g", t), *out = sl_xasprintf("%s/out", t);
    REQUIRE(sl_mkdir_p(gdir) == 0 && sl_mkdir_p(out) == 0);
    char *p = sl_xasprintf("%s/encoder.json", gdir);
    REQUIRE(sl_write_file_atomic(p, "{}", 2) == 0);
    free(p);
    p = sl_xasprintf("gpt2:%s", gdir);
    CHECK_EQ_INT(tokenizer_spec_check(p), SL_ERR_NOTFOUND); /* no vocab.bpe */
    CHECK_CONTAINS(sl_err_msg(), "vocab.bpe");
    free(p);
    p = sl_xasprintf("%s/vocab.bpe", gdir);
    REQUIRE(sl_write_file_atomic(p, "#\n", 2) == 0);
    free(p);
    char *rel = NULL, *spec = sl_xasprintf("gpt2:%s", gdir);
    CHECK_EQ_INT(tokenizer_copy_files(spec, out, &rel), 0);
    CHECK_EQ_STR(rel, "gpt2:.");
    free(rel);
    free(spec);
    char *v = sl_xasprintf("%s/vocab.bpe", out);
    CHECK_EQ_INT(sl_file_exists(v), 1);
    free(v);

    const char *vocab = sl_test_write("words.txt", "[PAD]\n", 6);
    spec = sl_xasprintf("bert-lower,extra-ids=2:%s", vocab);
    CHECK_EQ_INT(tokenizer_copy_files(spec, out, &rel), 0);
    CHECK_EQ_STR(rel, "bert-lower,extra-ids=2:vocab.txt");
    free(rel);
    free(spec);

    const char *ranks = sl_test_write("r.tiktoken", "YQ== 0\n", 7);
    spec = sl_xasprintf("tiktoken:%s", ranks);
    char *side = sl_xasprintf("%s.json", ranks);
    REQUIRE(sl_write_file_atomic(side, "{}", 2) == 0);
    CHECK_EQ_INT(tokenizer_copy_files(spec, out, &rel), 0);
    CHECK_EQ_STR(rel, "tiktoken:tokenizer.tiktoken");
    free(rel);
    char *copy = sl_xasprintf("%s/tokenizer.tiktoken.json", out);
    CHECK_EQ_INT(sl_file_exists(copy), 1);
    free(copy);
    free(side);
    free(spec);
    free(gdir);
    free(out);
}
