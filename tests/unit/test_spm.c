/* Tests for tokenize/spm: ids, pieces and decoded text identical to SentencePiece 0.1.97's
 * on every reference case of the three models (unigram, Japanese unigram, BPE with byte
 * fallback), special ids, piece lookup, corrupt models, invalid UTF-8. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "tokenize/spm.h"

#include <json-c/json.h>
#include <stdlib.h>

static struct spm *load(const char *model)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "tokenizer/%s.zst", model);
    struct spm *s = NULL;
    if (spm_load(&s, sl_test_fixture(rel)))
        fprintf(stderr, "%s\n", sl_err_msg());
    return s;
}

TEST(spm_reference_cases)
{
    static const char *const models[] = { "test_model.model", "test_ja_model.model",
                                          "c4_en_301_5Mexp2_spm.model" };
    struct spm *sp[3];
    for (int i = 0; i < 3; i++)
        REQUIRE((sp[i] = load(models[i])));
    struct sl_buf all = SL_BUF_INIT, dec = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("tokenizer/sentencepiece_cases.jsonl.zst"), &all) == 0);
    struct tok_ids ids = { 0 };
    size_t ncases = 0, nbad = 0, per[3] = { 0 };
    char *line = all.data;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        struct json_object *o = json_tokener_parse(line), *m, *t, *want, *pieces, *decoded;
        REQUIRE(o && json_object_object_get_ex(o, "model", &m) &&
                json_object_object_get_ex(o, "text", &t) && json_object_object_get_ex(o, "ids", &want) &&
                json_object_object_get_ex(o, "pieces", &pieces) &&
                json_object_object_get_ex(o, "decoded", &decoded));
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(json_object_get_string(m), models[i]))
                k = i;
        REQUIRE(k >= 0);
        per[k]++;
        ids.n = 0;
        CHECK_EQ_INT(spm_encode(sp[k], json_object_get_string(t), (size_t)json_object_get_string_len(t), &ids), 0);
        size_t wn = json_object_array_length(want);
        int same = wn == ids.n;
        for (size_t i = 0; same && i < wn; i++) {
            same = (uint32_t)json_object_get_int64(json_object_array_get_idx(want, i)) == ids.v[i];
            /* the reference lists an unknown piece by its surface text */
            same = same && (ids.v[i] == (uint32_t)spm_unk_id(sp[k]) ||
                            !strcmp(spm_id_to_piece(sp[k], ids.v[i]),
                                    json_object_get_string(json_object_array_get_idx(pieces, i))));
        }
        if (!same && nbad++ < 5)
            sl_test_fail(__FILE__, __LINE__, "%s: '%.60s': %zu ids, want %zu", models[k],
                         json_object_get_string(t), ids.n, wn);
        sl_buf_reset(&dec);
        CHECK_EQ_INT(spm_decode(sp[k], ids.v, ids.n, &dec), 0);
        CHECK_EQ_MEM(dec.data ? dec.data : "", dec.len, json_object_get_string(decoded),
                     (size_t)json_object_get_string_len(decoded));
        json_object_put(o);
        ncases++;
        line = nl ? nl + 1 : NULL;
    }
    CHECK_EQ_INT(ncases, 1260);
    CHECK(per[0] && per[1] && per[2]);
    CHECK_EQ_INT(nbad, 0);

    /* special ids and types (SOURCE.md of the models) */
    CHECK_EQ_INT(spm_vocab_size(sp[0]), 1000);
    CHECK_EQ_INT(spm_unk_id(sp[0]), 0);
    CHECK_EQ_INT(spm_bos_id(sp[0]), 1);
    CHECK_EQ_INT(spm_eos_id(sp[0]), 2);
    CHECK_EQ_INT(spm_pad_id(sp[0]), -1);
    CHECK_EQ_STR(spm_model_type(sp[0]), "unigram");
    CHECK_EQ_INT(spm_vocab_size(sp[2]), 50257);
    CHECK_EQ_INT(spm_pad_id(sp[2]), 0);
    CHECK_EQ_INT(spm_eos_id(sp[2]), 1);
    CHECK_EQ_INT(spm_unk_id(sp[2]), 2);
    CHECK_EQ_INT(spm_bos_id(sp[2]), -1);
    CHECK_EQ_STR(spm_model_type(sp[2]), "bpe");
    CHECK_EQ_INT(spm_piece_to_id(sp[2], "<0x41>") >= 0, 1);
    CHECK_EQ_INT(spm_piece_to_id(sp[0], "no such piece at all"), -1);
    CHECK_EQ_STR(spm_id_to_piece(sp[0], 2), "</s>");
    CHECK(spm_id_to_piece(sp[0], 1000) == NULL);
    uint32_t bad = 1000;
    CHECK_EQ_INT(spm_decode(sp[0], &bad, 1, &dec), SL_ERR_FORMAT);

    /* an invalid byte is U+FFFD, not normalized further, and reported: spm_encode gives
     * "▁ab <0xEF> <0xBF> <0xBD> cd" (while a literal U+FFFD is mapped by the model's
     * normalizer) */
    static const char *const want_pieces[] = { "\xe2\x96\x81" "ab", "<0xEF>", "<0xBF>", "<0xBD>", "cd" };
    ids.n = 0;
    CHECK_EQ_INT(spm_encode(sp[2], "ab\xff" "cd", 5, &ids), 1);
    CHECK_EQ_INT(ids.n, 5);
    for (size_t i = 0; i < ids.n && i < 5; i++)
        CHECK_EQ_STR(spm_id_to_piece(sp[2], ids.v[i]), want_pieces[i]);

    tok_ids_release(&ids);
    for (int i = 0; i < 3; i++)
        spm_free(sp[i]);
    sl_buf_release(&all);
    sl_buf_release(&dec);
}

TEST(spm_corrupt_model)
{
    struct spm *s;
    const char *p = sl_test_write("bad.model", "this is not a protobuf at all", 29);
    CHECK_EQ_INT(spm_load(&s, p), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "bad.model");
    CHECK_CONTAINS(sl_err_msg(), "not a SentencePiece model");
    /* a truncated real model */
    struct sl_buf m = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("tokenizer/test_model.model.zst"), &m) == 0);
    p = sl_test_write("cut.model", m.data, m.len / 2);
    CHECK(spm_load(&s, p) < 0);
    CHECK_CONTAINS(sl_err_msg(), "cut.model");
    CHECK_EQ_INT(spm_load(&s, "/nonexistent/x.model"), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "/nonexistent/x.model");
    sl_buf_release(&m);
}
