/* Tests for tokenize/bpe and tokenize/pretok: ids identical to tiktoken's on every
 * reference text (gpt2 from both file formats, cl100k_base, o200k_base), whole files,
 * decoding, invalid UTF-8, long pieces, the pre-tokenizers against PCRE2, bad files. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "tokenize/bpe.h"
#include "tokenize/pretok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <json-c/json.h>
#include <pcre2.h>
#include <stdlib.h>

static struct bpe *load(const char *which)
{
    struct bpe *b = NULL;
    int rc;
    if (!strcmp(which, "gpt2")) {
        char v[1024]; /* sl_test_fixture returns a static buffer */
        snprintf(v, sizeof(v), "%s", sl_test_fixture("tokenizer/encoder.json.zst"));
        rc = bpe_load_gpt2(&b, v, sl_test_fixture("tokenizer/vocab.bpe.zst"));
    } else {
        char rel[64];
        snprintf(rel, sizeof(rel), "tokenizer/%s.tiktoken.zst", which);
        rc = bpe_load_tiktoken(&b, sl_test_fixture(rel), -1);
    }
    if (rc)
        fprintf(stderr, "load %s: %s\n", which, sl_err_msg());
    return b;
}

/* Every case of cases.jsonl under one encoding. */
static void check_cases(struct bpe *b, const char *field)
{
    struct sl_buf all = SL_BUF_INIT, dec = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("tokenizer/cases.jsonl.zst"), &all) == 0);
    struct bpe_enc *e = bpe_enc_new(b);
    struct tok_ids ids = { 0 };
    size_t ncases = 0, nbad = 0;
    char *line = all.data;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        struct json_object *o = json_tokener_parse(line), *t, *want;
        REQUIRE(o && json_object_object_get_ex(o, "text", &t) &&
                json_object_object_get_ex(o, field, &want));
        const char *text = json_object_get_string(t);
        size_t n = (size_t)json_object_get_string_len(t);
        ids.n = 0;
        CHECK_EQ_INT(bpe_encode(e, text, n, &ids), 0);
        size_t wn = json_object_array_length(want);
        int same = wn == ids.n;
        for (size_t i = 0; same && i < wn; i++)
            same = (uint32_t)json_object_get_int64(json_object_array_get_idx(want, i)) == ids.v[i];
        if (!same && nbad++ < 5) {
            struct json_object *id;
            json_object_object_get_ex(o, "id", &id);
            sl_test_fail(__FILE__, __LINE__, "%s: case %s: %zu ids, want %zu", field,
                         json_object_get_string(id), ids.n, wn);
        }
        sl_buf_reset(&dec);
        CHECK_EQ_INT(bpe_decode(b, ids.v, ids.n, &dec), 0);
        CHECK_EQ_MEM(dec.data ? dec.data : "", dec.len, text, n);
        json_object_put(o);
        ncases++;
        line = nl ? nl + 1 : NULL;
    }
    CHECK_EQ_INT(ncases, 741);
    CHECK_EQ_INT(nbad, 0);
    tok_ids_release(&ids);
    bpe_enc_free(e);
    sl_buf_release(&all);
    sl_buf_release(&dec);
}

TEST(bpe_gpt2_reference_cases)
{
    struct bpe *b = load("gpt2");
    REQUIRE(b);
    CHECK_EQ_INT(bpe_vocab_size(b), 50257);
    CHECK_EQ_INT(bpe_special_id(b, "<|endoftext|>"), 50256);
    check_cases(b, "gpt2");
    bpe_free(b);
    b = load("r50k_base");
    REQUIRE(b);
    CHECK_EQ_INT(bpe_vocab_size(b), 50257);
    CHECK_EQ_INT(bpe_special_id(b, "<|endoftext|>"), 50256);
    check_cases(b, "gpt2");
    bpe_free(b);
}

TEST(bpe_cl100k_reference_cases)
{
    struct bpe *b = load("cl100k_base");
    REQUIRE(b);
    CHECK_EQ_INT(bpe_vocab_size(b), 100277);
    CHECK_EQ_INT(bpe_special_id(b, "<|endoftext|>"), 100257);
    CHECK_EQ_INT(bpe_pretok(b), PRETOK_CL100K);
    check_cases(b, "cl100k_base");
    bpe_free(b);
}

TEST(bpe_o200k_reference_cases)
{
    struct bpe *b = load("o200k_base");
    REQUIRE(b);
    CHECK_EQ_INT(bpe_vocab_size(b), 200019);
    CHECK_EQ_INT(bpe_special_id(b, "<|endoftext|>"), 199999);
    CHECK_EQ_INT(bpe_pretok(b), PRETOK_O200K);
    check_cases(b, "o200k_base");
    bpe_free(b);
}
