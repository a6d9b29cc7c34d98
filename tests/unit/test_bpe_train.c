/* Byte-level BPE training (tokenize/bpe_train.h) and its writers (tokenize/hf_write.h):
 * merges of a hand-checked example, the tie-break, the bounded count table, and the
 * written rank file read back by the tiktoken loader (encode/decode round trip). */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe_train.h"
#include "tokenize/hf_write.h"

#include <stdlib.h>
#include <string.h>

/* the token's bytes as a C string (test tokens are short) */
static const char *tok(const struct bpe_model *m, uint32_t id)
{
    static char s[8][64];
    static int k;
    k = (k + 1) % 8;
    size_t n = m->off[id + 1] - m->off[id];
    if (n > 63)
        n = 63;
    memcpy(s[k], m->bytes + m->off[id], n);
    s[k][n] = '\0';
    return s[k];
}

/* hug 10, pug 5, pun 12, bun 4, hugs 5 (the usual BPE example): "ug" (20), "un" (16),
 * "hug" (15), "pun" (12); then ("p","ug") and ("hug","s") both count 5 and the smaller
 * pair of ids wins ("p" is byte id 'p'-'!' = 79 + 1 special, "hug" is 259); then "hugs",
 * then "bun" (4). */
TEST(bpe_train_hand_checked_merges)
{
    struct bpe_counts *c = bpe_counts_new(PRETOK_GPT2, 1000, 100);
    bpe_counts_add_piece(c, "hug", 3, 10);
    bpe_counts_add_piece(c, "pug", 3, 5);
    bpe_counts_add_piece(c, "pun", 3, 12);
    bpe_counts_add_piece(c, "bun", 3, 4);
    bpe_counts_add_piece(c, "hugs", 4, 5);
    const char *sp[] = { "<|endoftext|>" };
    struct bpe_train_opts o = { 1 + 256 + 100, 0, sp, 1 };
    struct bpe_model m;
    REQUIRE(bpe_train(c, &o, &m) == 0);
    static const char *const want[][3] = { { "u", "g", "ug" },   { "u", "n", "un" },
                                           { "h", "ug", "hug" }, { "p", "un", "pun" },
                                           { "p", "ug", "pug" }, { "hug", "s", "hugs" },
                                           { "b", "un", "bun" } };
    CHECK_EQ_INT(m.n_merges, 7); /* then no pair is left */
    CHECK_EQ_INT(m.n_vocab, 1 + 256 + 7);
    for (uint32_t i = 0; i < m.n_merges && i < 7; i++) {
        CHECK_EQ_STR(tok(&m, m.merges[i][0]), want[i][0]);
        CHECK_EQ_STR(tok(&m, m.merges[i][1]), want[i][1]);
        CHECK_EQ_STR(tok(&m, m.merges[i][2]), want[i][2]);
        CHECK_EQ_INT(m.merges[i][2], 257 + i);
    }
    /* ids: the special, then the bytes by their character: '!' first, 'a' = 1 + 64 */
    CHECK_EQ_STR(tok(&m, 0), "<|endoftext|>");
    CHECK_EQ_STR(tok(&m, 1), "!");
    CHECK_EQ_STR(tok(&m, 65), "a");
    CHECK_EQ_INT(m.off[1 + 188 + 1] - m.off[1 + 188], 1);
    CHECK_EQ_INT(m.bytes[m.off[1 + 188]], 0); /* byte 0 is U+0100, the first after 0xFF */
    /* a smaller vocabulary stops early */
    bpe_model_release(&m);
    o.vocab_size = 1 + 256 + 3;
    REQUIRE(bpe_train(c, &o, &m) == 0);
    CHECK_EQ_INT(m.n_merges, 3);
    CHECK_EQ_STR(tok(&m, m.merges[2][2]), "hug");
    bpe_model_release(&m);
    /* min frequency: "bun" (4) is not merged at 5 */
    o.vocab_size = 1000;
    o.min_frequency = 5;
    REQUIRE(bpe_train(c, &o, &m) == 0);
    CHECK_EQ_INT(m.n_merges, 6);
    bpe_model_release(&m);
    /* too small a vocabulary, duplicate specials */
    o.vocab_size = 200;
    CHECK_EQ_INT(bpe_train(c, &o, &m), SL_ERR_USAGE);
    const char *dup[] = { "<s>", "<s>" };
    struct bpe_train_opts o2 = { 1000, 0, dup, 2 };
    CHECK_EQ_INT(bpe_train(c, &o2, &m), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "given twice");
    bpe_counts_free(c);
}

/* Overlapping pairs: "aaaa" merges (a, a) twice, not three times. */
TEST(bpe_train_overlapping_pairs)
{
    struct bpe_counts *c = bpe_counts_new(PRETOK_GPT2, 1000, 100);
    bpe_counts_add_piece(c, "aaaa", 4, 3);
    bpe_counts_add_piece(c, "aaa", 3, 1);
    struct bpe_train_opts o = { 256 + 10, 0, NULL, 0 };
    struct bpe_model m;
    REQUIRE(bpe_train(c, &o, &m) == 0);
    /* (a,a): 3*3 + 2 = 11 -> "aa"; then aaaa = [aa, aa] (3), aaa = [aa, a] (1) */
    REQUIRE(m.n_merges == 3);
    CHECK_EQ_STR(tok(&m, m.merges[0][2]), "aa");
    CHECK_EQ_STR(tok(&m, m.merges[1][2]), "aaaa");
    CHECK_EQ_STR(tok(&m, m.merges[2][2]), "aaa");
    bpe_model_release(&m);
    bpe_counts_free(c);
}

/* The table keeps at most max_entries pre-tokens; frequent ones keep exact counts. */
TEST(bpe_counts_bounded)
{
    struct bpe_counts *c = bpe_counts_new(PRETOK_GPT2, 64, 8);
    char w[16];
    for (int i = 0; i < 5000; i++) {
        bpe_counts_add_piece(c, "the", 3, 1);
        snprintf(w, sizeof(w), "w%d", i);
        bpe_counts_add_piece(c, w, strlen(w), 1);
    }
    bpe_counts_add_piece(c, "toolongpiece", 12, 1);
    struct bpe_counts_stats st;
    bpe_counts_stats(c, &st);
    CHECK(st.distinct <= 64);
    CHECK(st.prunings > 0);
    CHECK_EQ_INT(st.too_long, 1);
    CHECK_EQ_INT(st.pieces, 10001);
    /* "the" kept its 5000: ("t","h") and ("h","e") tie at 5000, the smaller ids win */
    struct bpe_train_opts o = { 257, 0, NULL, 0 };
    struct bpe_model m;
    REQUIRE(bpe_train(c, &o, &m) == 0);
    REQUIRE(m.n_merges == 1);
    CHECK_EQ_STR(tok(&m, m.merges[0][2]), "he");
    bpe_model_release(&m);
    bpe_counts_free(c);
}

/* Trained on text, written as ranks + sidecar, read by the tiktoken loader: decode(encode)
 * is the identity, every token encodes to itself, the specials are where the sidecar says. */
TEST(bpe_train_ranks_round_trip)
{
    static const char text[] =
        "It was the best of times, it was the worst of times; it was the age of wisdom, "
        "it was the age of foolishness. Ünïcödé 12345 don't   spaces\n\nnew\tlines "
        "\xff\xfe invalid bytes, emoji \xf0\x9f\x98\x80!";
    for (int kind = 0; kind < 3; kind++) {
        struct bpe_counts *c = bpe_counts_new((enum pretok_kind)kind, 1 << 16, 1024);
        for (int i = 0; i < 3; i++)
            bpe_counts_add_text(c, text, sizeof(text) - 1);
        const char *sp[] = { "<|endoftext|>", "<pad>" };
        struct bpe_train_opts o = { 2 + 256 + 80, 0, sp, 2 };
        struct bpe_model m;
        REQUIRE(bpe_train(c, &o, &m) == 0);
        CHECK_EQ_INT(m.n_vocab, 2 + 256 + 80);
        struct sl_buf ranks = SL_BUF_INIT, side = SL_BUF_INIT, js = SL_BUF_INIT;
        REQUIRE(hf_write_tiktoken(&m, &ranks, &side) == 0);
        REQUIRE(hf_write_tokenizer_json(&m, &js) == 0);
        CHECK_CONTAINS(js.data, "\"merges\": [");
        CHECK_CONTAINS(side.data, "\"<pad>\": 1");
        const char *rp = sl_test_write("t.tiktoken", ranks.data, ranks.len);
        char *sp_path = malloc(strlen(rp) + 6);
        sprintf(sp_path, "%s.json", rp);
        FILE *f = fopen(sp_path, "wb");
        REQUIRE(f);
        fwrite(side.data, 1, side.len, f);
        fclose(f);
        struct bpe *b;
        REQUIRE(bpe_load_tiktoken(&b, rp, -1) == 0);
        CHECK_EQ_INT(bpe_pretok(b), kind);
        CHECK_EQ_INT(bpe_vocab_size(b), m.n_vocab);
        CHECK_EQ_INT(bpe_special_id(b, "<|endoftext|>"), 0);
        CHECK_EQ_INT(bpe_special_id(b, "<pad>"), 1);
        struct bpe_enc *e = bpe_enc_new(b);
        struct tok_ids ids;
        memset(&ids, 0, sizeof(ids));
        REQUIRE(bpe_encode(e, text, sizeof(text) - 1, &ids) == 0);
        CHECK(ids.n < sizeof(text) / 2);
        struct sl_buf back = SL_BUF_INIT;
        REQUIRE(bpe_decode(b, ids.v, ids.n, &back) == 0);
        CHECK_EQ_MEM(back.data, back.len, text, sizeof(text) - 1);
        /* (ASCII tokens: a token with part of a character is not one piece alone) */
        for (uint32_t id = 2; id < m.n_vocab; id++) {
            int ascii = 1;
            for (uint32_t k = m.off[id]; k < m.off[id + 1]; k++)
                ascii &= m.bytes[k] < 0x80;
            if (!ascii)
                continue;
            ids.n = 0;
            bpe_encode(e, (const char *)m.bytes + m.off[id], m.off[id + 1] - m.off[id], &ids);
            if (!(ids.n == 1 && ids.v[0] == id))
                sl_test_fail(__FILE__, __LINE__,
                             "token %u '%s' does not encode to itself (%zu ids: %u %u)", id,
                             tok(&m, id), ids.n, ids.v[0], ids.n > 1 ? ids.v[1] : 0);
        }
        /* the model read back from the loaded ranks has the trained merges */
        struct bpe_model back_m;
        REQUIRE(hf_model_from_bpe(b, &back_m) == 0);
        CHECK_EQ_INT(back_m.n_merges, m.n_merges);
        CHECK(back_m.n_merges == m.n_merges &&
              !memcmp(back_m.merges, m.merges, m.n_merges * sizeof(*m.merges)));
        struct sl_buf js2 = SL_BUF_INIT;
        REQUIRE(hf_write_tokenizer_json(&back_m, &js2) == 0);
        CHECK_EQ_MEM(js2.data, js2.len, js.data, js.len);
        sl_buf_release(&js2);
        bpe_model_release(&back_m);
        sl_buf_release(&back);
        tok_ids_release(&ids);
        bpe_enc_free(e);
        bpe_free(b);
        free(sp_path);
        sl_buf_release(&ranks);
        sl_buf_release(&side);
        sl_buf_release(&js);
        bpe_model_release(&m);
        bpe_counts_free(c);
    }
}

/* A sidecar that names an id a rank already has is refused, naming the file. */
TEST(bpe_tiktoken_sidecar_errors)
{
    const char *rp = sl_test_write("bad.tiktoken", "YQ== 0\n", 7);
    char *sp = malloc(strlen(rp) + 6);
    sprintf(sp, "%s.json", rp);
    FILE *f = fopen(sp, "wb");
    REQUIRE(f);
    fputs("{\"pattern\": \"gpt2\", \"special_tokens\": {\"<s>\": 0}}", f);
    fclose(f);
    struct bpe *b = NULL;
    CHECK(bpe_load_tiktoken(&b, rp, -1) < 0);
    CHECK_CONTAINS(sl_err_msg(), "appears twice");
    f = fopen(sp, "wb");
    fputs("{\"pattern\": \"gpt3\"}", f);
    fclose(f);
    CHECK_EQ_INT(bpe_load_tiktoken(&b, rp, -1), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "bad.tiktoken.json");
    free(sp);
}
