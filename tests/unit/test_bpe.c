/* Tests for tokenize/bpe and tokenize/pretok: ids identical to tiktoken's on every
 * reference text (gpt2 from both file formats, cl100k_base, o200k_base), whole files,
 * decoding, invalid UTF-8, long pieces, the pre-tokenizers against PCRE2, bad files. */
#include "tests/harness.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "tokenize/bpe.h"
#include "tokenize/bpe_cache.h"
#include "tokenize/bpe_impl.h"
#include "tokenize/pretok.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <json-c/json.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

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


/* A rank file of OpenAI's ranks plus `extra` made-up tokens (six bytes each, starting with
 * 0xF8, which UTF-8 text never holds), shaped as Meta's tokenizer.model. */
static struct bpe *load_meta_shaped(const char *base, size_t extra)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char rel[64];
    snprintf(rel, sizeof(rel), "tokenizer/%s.tiktoken.zst", base);
    struct sl_buf f = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture(rel), &f) == 0);
    size_t nranks = 0;
    for (size_t i = 0; i < f.len; i++)
        nranks += f.data[i] == '\n';
    for (size_t k = 0; k < extra; k++) {
        unsigned char t[6] = { 0xF8, 0xF8, (unsigned char)(k >> 24), (unsigned char)(k >> 16),
                               (unsigned char)(k >> 8), (unsigned char)k };
        char line[32];
        int n = 0;
        for (int g = 0; g < 6; g += 3) {
            uint32_t v = (uint32_t)t[g] << 16 | (uint32_t)t[g + 1] << 8 | t[g + 2];
            for (int s = 18; s >= 0; s -= 6)
                line[n++] = b64[(v >> s) & 63];
        }
        n += snprintf(line + n, sizeof(line) - (size_t)n, " %zu\n", nranks + k);
        sl_buf_append(&f, line, (size_t)n);
    }
    struct bpe *b = NULL;
    if (bpe_load_tiktoken_mem(&b, f.data, f.len, -1, "/models/original/tokenizer.model"))
        fprintf(stderr, "load %s + %zu: %s\n", base, extra, sl_err_msg());
    sl_buf_release(&f);
    return b;
}

/* Meta's rank files hold 128,000 (Llama 3) or 200,000 (Llama 4) ranks under a name that
 * tells nothing: cl100k_base's or o200k_base's pattern, and Meta's special tokens after
 * the ranks (ids from llama_models' reference tokenizer). */
TEST(bpe_llama_rank_files)
{
    static const struct {
        const char *base; /* the OpenAI ranks it is made from */
        size_t extra;     /* made-up ranks after them */
        int pretok;
        uint32_t vocab;
        struct {
            const char *name;
            int64_t id;
        } spec[11];
    } meta[] = {
        { "cl100k_base", 128000 - 100256, PRETOK_CL100K, 128256,
          { { "<|begin_of_text|>", 128000 }, { "<|end_of_text|>", 128001 },
            { "<|reserved_special_token_1|>", 128003 }, { "<|start_header_id|>", 128006 },
            { "<|eot_id|>", 128009 }, { "<|image|>", 128011 },
            { "<|reserved_special_token_2|>", 128012 },
            { "<|reserved_special_token_245|>", 128255 }, { "<|endoftext|>", -1 } } },
        { "o200k_base", 2, PRETOK_O200K, 202048,
          { { "<|begin_of_text|>", 200000 }, { "<|end_of_text|>", 200001 }, { "<|eot|>", 200008 },
            { "<|finetune_right_pad|>", 200018 },
            { "<|text_post_train_reserved_special_token_68|>", 200079 },
            { "<|image_start|>", 200080 }, { "<|patch|>", 200092 },
            { "<|vision_reserved_special_token_1047|>", 201133 },
            { "<|reasoning_thinking_end|>", 201143 },
            { "<|reserved_special_token_903|>", 202047 }, { "<|endoftext|>", -1 } } },
    };
    for (size_t k = 0; k < sizeof(meta) / sizeof(meta[0]); k++) {
        struct bpe *b = load_meta_shaped(meta[k].base, meta[k].extra);
        REQUIRE(b);
        CHECK_EQ_INT(bpe_pretok(b), meta[k].pretok);
        CHECK_EQ_INT(bpe_vocab_size(b), meta[k].vocab);
        for (size_t i = 0; i < 11 && meta[k].spec[i].name; i++)
            CHECK_EQ_INT(bpe_special_id(b, meta[k].spec[i].name), meta[k].spec[i].id);
        check_cases(b, meta[k].base); /* the made-up tokens never occur */
        bpe_free(b);
    }
    /* another count still asks for a name or a sidecar */
    struct bpe *b = load_meta_shaped("cl100k_base", 1000);
    CHECK(b == NULL);
    CHECK_CONTAINS(sl_err_msg(), "cannot tell the pre-tokenizer");
    CHECK_CONTAINS(sl_err_msg(), "sidecar");
}

/* ---- the pre-tokenizers against PCRE2 ------------------------------------------------ */

struct rx {
    pcre2_code *code;
    pcre2_match_data *md;
};

static void rx_init(struct rx *r, enum pretok_kind k)
{
    int err;
    PCRE2_SIZE off;
    r->code = pcre2_compile((PCRE2_SPTR)pretok_regex(k), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                            &err, &off, NULL);
    REQUIRE(r->code);
    pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE);
    r->md = pcre2_match_data_create_from_pattern(r->code, NULL);
}

static void rx_free(struct rx *r)
{
    pcre2_match_data_free(r->md);
    pcre2_code_free(r->code);
}

/* Compare the pieces of s; returns 0 when equal. */
static int compare_split(struct rx *r, enum pretok_kind k, const char *s, size_t n)
{
    size_t pos = 0;
    while (pos < n) {
        int rc = pcre2_match(r->code, (PCRE2_SPTR)s, n, pos, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, r->md, NULL);
        if (rc < 0)
            return -1;
        size_t end = pcre2_get_ovector_pointer(r->md)[1];
        size_t ours = pretok_next(k, (const unsigned char *)s + pos, (const unsigned char *)s + n);
        if (end != pos + ours)
            return (int)pos + 1;
        pos = end;
    }
    return 0;
}

TEST(pretok_equals_pcre2_on_reference_texts)
{
    struct sl_buf all = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("tokenizer/cases.jsonl.zst"), &all) == 0);
    for (int k = 0; k < 3; k++) {
        struct rx r;
        rx_init(&r, (enum pretok_kind)k);
        size_t bad = 0, n = 0;
        char *copy = sl_xstrndup(all.data, all.len), *line = copy;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            struct json_object *o = json_tokener_parse(line), *t;
            REQUIRE(o && json_object_object_get_ex(o, "text", &t));
            int rc = compare_split(&r, (enum pretok_kind)k, json_object_get_string(t),
                                   (size_t)json_object_get_string_len(t));
            if (rc && bad++ < 3)
                sl_test_fail(__FILE__, __LINE__, "%s: differs at %d in '%.50s'", pretok_name(k), rc,
                             json_object_get_string(t));
            json_object_put(o);
            n++;
            line = nl ? nl + 1 : NULL;
        }
        CHECK_EQ_INT(n, 741);
        CHECK_EQ_INT(bad, 0);
        free(copy);
        rx_free(&r);
    }
    sl_buf_release(&all);
}

TEST(pretok_equals_pcre2_on_random_texts)
{
    /* characters where the patterns' branches meet: contractions (and U+017F, which
     * case-folds to s), CR/LF and other spaces, upper/lower/title/modifier/other letters,
     * marks, numbers of three kinds, '/' and other punctuation */
    static const char *const alphabet[] = {
        "a", "B", "s", "S", "t", "T", "r", "e", "v", "m", "l", "L", "d", "'", "\xc5\xbf", " ", "  ",
        "\t", "\r", "\n", "\r\n", "\xc2\xa0", "\xc2\x85", "\xe3\x80\x80", "\xe2\x80\xa8", "0", "7",
        "\xc2\xbd", "\xe2\x85\xab", "\xd9\xa3", "\xc3\x89", "\xc3\xa9", "\xc7\x85", "\xca\xb0",
        "\xe6\x97\xa5", "\xcc\x81", "\xe0\xa4\xbe", "/", "!", ".", "-", "\xf0\x9f\x98\x80",
        "\xe2\x80\x8d", "_", "$", "\xd0\x96", "\xd0\xb6", "\xe1\x83\x90",
    };
    size_t na = sizeof(alphabet) / sizeof(alphabet[0]);
    uint64_t state = 12345;
    char buf[512];
    for (int k = 0; k < 3; k++) {
        struct rx r;
        rx_init(&r, (enum pretok_kind)k);
        size_t bad = 0;
        for (int iter = 0; iter < 20000; iter++) {
            size_t len = 0, parts = (size_t)(state % 24) + 1;
            for (size_t i = 0; i < parts; i++) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                const char *a = alphabet[(state >> 33) % na];
                size_t al = strlen(a);
                if (len + al >= sizeof(buf))
                    break;
                memcpy(buf + len, a, al);
                len += al;
            }
            int rc = compare_split(&r, (enum pretok_kind)k, buf, len);
            if (rc && bad++ < 3)
                sl_test_fail(__FILE__, __LINE__, "%s: differs at %d in '%.*s'", pretok_name(k), rc,
                             (int)len, buf);
        }
        CHECK_EQ_INT(bad, 0);
        rx_free(&r);
    }
}

/* ---- merging: long pieces, any bytes ------------------------------------------------ */

/* tiktoken's algorithm written plainly: the piece itself if it is a token, else merge the
 * adjacent pair whose concatenation has the lowest rank (= id), leftmost first. */
static size_t naive_bpe(const struct bpe *b, const unsigned char *p, size_t n, uint32_t *out)
{
    int64_t whole = bpe_token_id(b, p, n);
    if (whole >= 0) {
        out[0] = (uint32_t)whole;
        return 1;
    }
    size_t *start = malloc((n + 1) * sizeof(size_t)), m = n;
    for (size_t i = 0; i <= n; i++)
        start[i] = i;
    for (;;) {
        int64_t best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < m; i++) {
            int64_t r = bpe_token_id(b, p + start[i], start[i + 2] - start[i]);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = i;
            }
        }
        if (best < 0)
            break;
        memmove(start + at + 1, start + at + 2, (m - at - 1) * sizeof(size_t));
        m--;
    }
    for (size_t i = 0; i < m; i++)
        out[i] = (uint32_t)bpe_token_id(b, p + start[i], start[i + 1] - start[i]);
    free(start);
    return m;
}

TEST(bpe_long_pieces_and_any_bytes)
{
    struct bpe *b = load("cl100k_base");
    REQUIRE(b);
    struct bpe_enc *e = bpe_enc_new(b);
    struct tok_ids ids = { 0 };
    struct sl_buf dec = SL_BUF_INIT;
    uint32_t *ref = malloc(4096 * sizeof(uint32_t));
    uint64_t state = 99;
    unsigned char text[4096];
    /* letter runs up to 450 bytes (one piece each): linear and heap merges */
    for (int iter = 0; iter < 150; iter++) {
        size_t n = (size_t)(iter * 3 + 1);
        for (size_t i = 0; i < n; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            text[i] = (unsigned char)("etaoinshrdlucmfwypvbgkqjxz"[(state >> 33) % (iter % 3 ? 26 : 4)]);
        }
        ids.n = 0;
        CHECK_EQ_INT(bpe_encode(e, (const char *)text, n, &ids), 0);
        size_t m = naive_bpe(b, text, n, ref);
        if (m != ids.n || memcmp(ref, ids.v, m * 4)) {
            sl_test_fail(__FILE__, __LINE__, "piece of %zu letters: %zu ids, naive %zu", n, ids.n, m);
            break;
        }
    }
    /* random bytes (mostly invalid UTF-8) round-trip exactly under every encoding */
    bpe_enc_free(e);
    bpe_free(b);
    const char *names[] = { "gpt2", "r50k_base", "o200k_base" };
    for (int k = 0; k < 3; k++) {
        b = load(names[k]);
        REQUIRE(b);
        e = bpe_enc_new(b);
        for (int iter = 0; iter < 200; iter++) {
            size_t n = (size_t)(state % 4000);
            for (size_t i = 0; i < n; i++) {
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                text[i] = (unsigned char)(state >> 56);
            }
            ids.n = 0;
            CHECK_EQ_INT(bpe_encode(e, (const char *)text, n, &ids), 0);
            sl_buf_reset(&dec);
            CHECK_EQ_INT(bpe_decode(b, ids.v, ids.n, &dec), 0);
            CHECK_EQ_MEM(dec.data ? dec.data : "", dec.len, text, n);
        }
        bpe_enc_free(e);
        bpe_free(b);
    }
    /* a 2 MB piece without a break finishes (heap merge) and round-trips */
    b = load("gpt2");
    e = bpe_enc_new(b);
    size_t big = 2u << 20;
    char *s = malloc(big);
    for (size_t i = 0; i < big; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        s[i] = (char)('a' + (state >> 33) % 26);
    }
    ids.n = 0;
    CHECK_EQ_INT(bpe_encode(e, s, big, &ids), 0);
    sl_buf_reset(&dec);
    CHECK_EQ_INT(bpe_decode(b, ids.v, ids.n, &dec), 0);
    CHECK_EQ_MEM(dec.data, dec.len, s, big);
    /* an id cap is honoured */
    struct tok_ids capped = { 0 };
    capped.max = 10;
    CHECK_EQ_INT(bpe_encode(e, s, 1000, &capped), SL_ERR_TOOBIG);
    tok_ids_release(&capped);
    free(s);
    free(ref);
    bpe_enc_free(e);
    bpe_free(b);
    tok_ids_release(&ids);
    sl_buf_release(&dec);
}

/* `nwords` words of Latin and Cyrillic letters (pieces of up to 60 bytes) from a generator
 * state; the state after them is returned. */
static uint64_t random_words(struct sl_buf *text, size_t nwords, uint64_t state)
{
    for (size_t w = 0; w < nwords; w++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = 3 + (state >> 40) % 28;
        int cyr = (state >> 20) % 3 == 0;
        sl_buf_putc(text, ' ');
        for (size_t i = 0; i < len; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            unsigned r = (unsigned)(state >> 33) % 26;
            if (cyr) {
                char c[2] = { (char)0xD0, (char)(0xB0 + r % 16) }; /* а..п */
                sl_buf_append(text, c, 2);
            } else {
                sl_buf_putc(text, "etaoinshrdlucmfwypvbgkqjxz"[r]);
            }
        }
    }
    return state;
}

/* The piece cache's two levels (a direct-mapped first level for pieces of up to 24
 * bytes, a hash table of every piece met for up to 255): 300k distinct words, Latin and
 * Cyrillic (pieces of up to 60 bytes), more than the second level holds before it starts
 * over, encoded twice by one encoder: the second pass (answered from the cache where the
 * piece is still there) gives the ids of the first, and the first 2,000 words' ids are
 * those of a naive merge. */
TEST(bpe_piece_cache_levels)
{
    struct bpe *b = load("cl100k_base");
    REQUIRE(b);
    struct bpe_enc *e = bpe_enc_new(b);
    struct sl_buf text = SL_BUF_INIT;
    uint64_t state = random_words(&text, 2000, 7);
    size_t check_bytes = text.len;
    random_words(&text, 298000, state);
    struct tok_ids first = { 0 }, second = { 0 };
    CHECK_EQ_INT(bpe_encode(e, text.data, text.len, &first), 0);
    CHECK_EQ_INT(bpe_encode(e, text.data, text.len, &second), 0);
    CHECK_EQ_INT(second.n, first.n);
    CHECK(first.n == second.n && memcmp(first.v, second.v, first.n * 4) == 0);
    /* the first words against the naive merge, word by word */
    uint32_t *ref = malloc(4096 * sizeof(uint32_t));
    const unsigned char *p = (const unsigned char *)text.data, *end = p + check_bytes;
    size_t at = 0, bad = 0;
    while (p < end) {
        const unsigned char *q = p + 1;
        while (q < end && *q != ' ')
            q++;
        size_t m = naive_bpe(b, p, (size_t)(q - p), ref);
        if (at + m > second.n || memcmp(ref, second.v + at, m * 4) != 0)
            bad++;
        at += m;
        p = q;
    }
    CHECK_EQ_INT(bad, 0);
    free(ref);
    tok_ids_release(&first);
    tok_ids_release(&second);
    sl_buf_release(&text);
    bpe_enc_free(e);
    bpe_free(b);
}

/* The first level starts small and moves to its large table after 16,384 pieces, taking
 * its entries with it: 1,000 words encoded again and again by one encoder are merged in the
 * first two passes only (the long ones enter the second level when met the second time),
 * never again after the move, and every pass gives the same ids. */
TEST(bpe_piece_cache_grows)
{
    struct bpe *b = load("gpt2");
    REQUIRE(b);
    struct bpe_enc *e = bpe_enc_new(b);
    struct sl_buf text = SL_BUF_INIT;
    random_words(&text, 1000, 11);
    struct tok_ids first = { 0 }, ids = { 0 };
    CHECK_EQ_INT(bpe_encode(e, text.data, text.len, &first), 0);
    CHECK_EQ_INT(bpe_encode(e, text.data, text.len, &ids), 0);
    uint64_t slow = bpe_enc_slow_count(e);
    CHECK(slow >= 1000);
    size_t bad = 0;
    for (int pass = 0; pass < 30; pass++) { /* 30,000 pieces */
        ids.n = 0;
        CHECK_EQ_INT(bpe_encode(e, text.data, text.len, &ids), 0);
        if (ids.n != first.n || memcmp(ids.v, first.v, first.n * 4) != 0)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(bpe_enc_slow_count(e), slow);
    tok_ids_release(&first);
    tok_ids_release(&ids);
    sl_buf_release(&text);
    bpe_enc_free(e);
    bpe_free(b);
}

struct shared_job {
    struct bpe *b;
    struct bpe_shared *sh;
    const struct sl_buf *text;
    const struct tok_ids *ref;
    int bad;
};

static void *shared_worker(void *arg)
{
    struct shared_job *j = arg;
    struct bpe_enc *e = bpe_enc_new_shared(j->b, j->sh);
    for (int round = 0; round < 3; round++) {
        struct tok_ids ids = { 0 };
        if (bpe_encode(e, j->text->data, j->text->len, &ids) || ids.n != j->ref->n ||
            memcmp(ids.v, j->ref->v, ids.n * 4) != 0)
            j->bad++;
        tok_ids_release(&ids);
    }
    bpe_enc_free(e);
    return NULL;
}

/* Encoders sharing a second level: a piece met again by another encoder is merged once
 * and then found by every encoder (the third encoder merges nothing; an encoder of its own
 * merges every piece again), with the ids of an encoder of its own; four threads encoding
 * at once through one shared table get those ids every time. */
TEST(bpe_shared_piece_cache)
{
    const char *vocabs[] = { "gpt2", "cl100k_base" };
    for (size_t v = 0; v < 2; v++) {
        struct bpe *b = load(vocabs[v]);
        REQUIRE(b);
        struct sl_buf text = SL_BUF_INIT;
        random_words(&text, 20000, 11 + v);
        struct tok_ids ref = { 0 };
        struct bpe_enc *own = bpe_enc_new(b);
        REQUIRE(bpe_encode(own, text.data, text.len, &ref) == 0);
        uint64_t own_slow = bpe_enc_slow_count(own);
        CHECK(own_slow > 10000);

        struct bpe_shared *sh = bpe_shared_new();
        struct bpe_enc *enc[3];
        uint64_t slow[3];
        for (int i = 0; i < 3; i++) {
            enc[i] = bpe_enc_new_shared(b, sh);
            struct tok_ids ids = { 0 };
            CHECK_EQ_INT(bpe_encode(enc[i], text.data, text.len, &ids), 0);
            CHECK(ids.n == ref.n && memcmp(ids.v, ref.v, ref.n * 4) == 0);
            slow[i] = bpe_enc_slow_count(enc[i]);
            tok_ids_release(&ids);
        }
        CHECK_EQ_INT(slow[0], own_slow); /* every piece first met */
        CHECK(slow[1] > 0);              /* met again: merged once more and shared */
        CHECK_EQ_INT(slow[2], 0);        /* all found in the shared table */
        /* without the shared table another encoder merges them all again */
        struct bpe_enc *other = bpe_enc_new(b);
        struct tok_ids ids = { 0 };
        CHECK_EQ_INT(bpe_encode(other, text.data, text.len, &ids), 0);
        CHECK_EQ_INT(bpe_enc_slow_count(other), own_slow);
        tok_ids_release(&ids);
        bpe_enc_free(other);
        for (int i = 0; i < 3; i++)
            bpe_enc_free(enc[i]);
        bpe_shared_free(sh);

        sh = bpe_shared_new();
        struct shared_job jobs[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            jobs[i] = (struct shared_job){ b, sh, &text, &ref, 0 };
            REQUIRE(pthread_create(&th[i], NULL, shared_worker, &jobs[i]) == 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            CHECK_EQ_INT(jobs[i].bad, 0);
        }
        bpe_shared_free(sh);
        tok_ids_release(&ref);
        bpe_enc_free(own);
        sl_buf_release(&text);
        bpe_free(b);
    }
}

TEST(bpe_bad_files)
{
    struct bpe *b;
    const char *vocab = "{\"a\": 0, \"b\": 1}";
    /* no byte tokens */
    CHECK_EQ_INT(bpe_load_gpt2_mem(&b, vocab, strlen(vocab), "", 0, "v.json"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "no token for byte");
    /* not JSON */
    CHECK_EQ_INT(bpe_load_gpt2_mem(&b, "[1,2", 4, "", 0, "v.json"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "v.json");
    /* a merge the vocabulary does not have */
    char v[1024];
    char m[1024];
    snprintf(v, sizeof(v), "%s", sl_test_fixture("tokenizer/encoder.json.zst"));
    struct sl_buf vb = SL_BUF_INIT;
    REQUIRE(sl_read_file(v, &vb) == 0);
    snprintf(m, sizeof(m), "#version: 0.2\nh e\n\xc4\xa0 t\nq zzz\n");
    CHECK_EQ_INT(bpe_load_gpt2_mem(&b, vb.data, vb.len, m, strlen(m), "enc.json"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "line 4");
    CHECK_CONTAINS(sl_err_msg(), "not in the vocabulary");
    snprintf(m, sizeof(m), "#version: 0.2\nh e x\n");
    CHECK_EQ_INT(bpe_load_gpt2_mem(&b, vb.data, vb.len, m, strlen(m), "enc.json"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "line 2");
    sl_buf_release(&vb);
    /* rank files */
    CHECK_EQ_INT(bpe_load_tiktoken_mem(&b, "YQ== 0\nnot base64!! 1\n", 22, PRETOK_GPT2, "r.tiktoken"),
                 SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "r.tiktoken");
    CHECK_CONTAINS(sl_err_msg(), "line 2");
    CHECK_EQ_INT(bpe_load_tiktoken_mem(&b, "YQ== 0\nYQ== 1\n", 14, PRETOK_GPT2, "r.tiktoken"), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "same bytes");
    CHECK_EQ_INT(bpe_load_tiktoken_mem(&b, "YQ== 0\n", 7, -1, "mystery"), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "cannot tell the pre-tokenizer");
    CHECK_EQ_INT(bpe_load_tiktoken(&b, "/nonexistent/cl100k_base.tiktoken", -1), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "/nonexistent/cl100k_base.tiktoken");
}

/* tiktoken takes a piece that is a token as that token, also where merging its bytes does
 * not reach it: ranks 256 "bc" and 257 "abcd" (no "abc", "bcd"): BPE of "abcd" stops at
 * a|bc|d, tiktoken gives 257; "abcde" is merged (a|bc|d|e). */
TEST(bpe_tiktoken_unreachable_token)
{
    struct sl_buf f = SL_BUF_INIT;
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int c = 0; c < 256; c++) {
        char line[32];
        int n = snprintf(line, sizeof(line), "%c%c== %d\n", b64[c >> 2], b64[(c & 3) << 4], c);
        sl_buf_append(&f, line, (size_t)n);
    }
    sl_buf_append(&f, "YmM= 256\nYWJjZA== 257\n", 22); /* "bc", "abcd" */
    struct bpe *b = NULL;
    REQUIRE(bpe_load_tiktoken_mem(&b, f.data, f.len, PRETOK_GPT2, "t.tiktoken") == 0);
    struct bpe_enc *e = bpe_enc_new(b);
    struct tok_ids ids = { 0 };
    for (int round = 0; round < 2; round++) { /* the second from the piece cache */
        ids.n = 0;
        CHECK_EQ_INT(bpe_encode(e, "abcd", 4, &ids), 0);
        CHECK_EQ_INT(ids.n, 1);
        CHECK_EQ_INT(ids.v[0], 257);
        ids.n = 0;
        CHECK_EQ_INT(bpe_encode(e, "abcde", 5, &ids), 0);
        CHECK_EQ_INT(ids.n, 4);
        CHECK_EQ_INT(ids.v[0], 'a');
        CHECK_EQ_INT(ids.v[1], 256);
        CHECK_EQ_INT(ids.v[2], 'd');
        CHECK_EQ_INT(ids.v[3], 'e');
    }
    tok_ids_release(&ids);
    bpe_enc_free(e);
    bpe_free(b);
    sl_buf_release(&f);
}

/* ---- the compiled-vocabulary cache ---------------------------------------------------- */

/* Number of bpe-*.bin files in dir. */
static int cache_files(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "ls '%s' 2>/dev/null | grep -c '^bpe-.*\\.bin$'", dir);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

/* The one cache file in dir (static buffer). */
static const char *cache_file(const char *dir)
{
    static char path[1200];
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "ls -d '%s'/bpe-*.bin | head -1", dir);
    FILE *p = popen(cmd, "r");
    path[0] = 0;
    if (p) {
        if (!fgets(path, sizeof(path), p))
            path[0] = 0;
        pclose(p);
    }
    path[strcspn(path, "\n")] = 0;
    return path;
}

/* A vocabulary loaded a second time comes from the cache and gives the reference ids; a
 * damaged, cut or foreign file is not used (and is written again); a file loaded with
 * another pre-tokenizer has its own entry; SLUICE_CACHE_DIR= turns it off. */
TEST(bpe_vocabulary_cache)
{
    char dir[1100];
    snprintf(dir, sizeof(dir), "%s/cache", sl_test_tmpdir());
    setenv("SLUICE_CACHE_DIR", dir, 1);
    static const char *const which[] = { "gpt2", "o200k_base" };
    for (int w = 0; w < 2; w++) {
        char cmd[1200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        CHECK_EQ_INT(system(cmd), 0);
        struct bpe *b = load(which[w]);
        REQUIRE(b);
        CHECK_EQ_INT(bpe_from_cache(b), 0);
        bpe_free(b);
        CHECK_EQ_INT(cache_files(dir), 1);
        b = load(which[w]);
        REQUIRE(b);
        CHECK_EQ_INT(bpe_from_cache(b), 1);
        check_cases(b, w == 0 ? "gpt2" : "o200k_base");
        CHECK_EQ_INT(bpe_special_id(b, "<|endoftext|>"), w == 0 ? 50256 : 199999);
        bpe_free(b);
        /* damaged in the middle, then cut: built again, and the file written again */
        struct sl_buf f = SL_BUF_INIT;
        char path[1200];
        snprintf(path, sizeof(path), "%s", cache_file(dir));
        REQUIRE(sl_read_file(path, &f) == 0);
        f.data[f.len / 2] ^= 0x40;
        FILE *o = fopen(path, "wb");
        REQUIRE(o && fwrite(f.data, 1, f.len, o) == f.len);
        fclose(o);
        b = load(which[w]);
        REQUIRE(b);
        CHECK_EQ_INT(bpe_from_cache(b), 0);
        bpe_free(b);
        b = load(which[w]);
        CHECK_EQ_INT(bpe_from_cache(b), 1);
        bpe_free(b);
        CHECK_EQ_INT(truncate(path, (off_t)(f.len - 100)), 0);
        b = load(which[w]);
        CHECK_EQ_INT(bpe_from_cache(b), 0);
        bpe_free(b);
        sl_buf_release(&f);
    }
    /* the o200k_base ranks with GPT-2's pre-tokenizer are another vocabulary */
    struct bpe *b = NULL;
    REQUIRE(bpe_load_tiktoken(&b, sl_test_fixture("tokenizer/o200k_base.tiktoken.zst"), PRETOK_GPT2) == 0);
    CHECK_EQ_INT(bpe_from_cache(b), 0);
    CHECK_EQ_INT(bpe_pretok(b), PRETOK_GPT2);
    bpe_free(b);
    CHECK_EQ_INT(cache_files(dir), 2);
    /* off */
    setenv("SLUICE_CACHE_DIR", "", 1);
    b = load("cl100k_base");
    CHECK_EQ_INT(bpe_from_cache(b), 0);
    bpe_free(b);
    b = load("cl100k_base");
    CHECK_EQ_INT(bpe_from_cache(b), 0);
    bpe_free(b);
    CHECK_EQ_INT(cache_files(dir), 2);
}

/* The file's 8 bytes equal to v (a table entry), searched on 8-byte boundaries. */
static size_t find_u64(const struct sl_buf *f, uint64_t v)
{
    for (size_t at = 0; at + 8 <= f->len; at += 8)
        if (!memcmp(f->data + at, &v, 8))
            return at;
    return SIZE_MAX;
}

/* A u64 written at a file offset; the file read back without its checksum: 0 or an error. */
static int read_patched(struct sl_buf *f, size_t at, uint64_t v, struct bpe_cache_key key)
{
    uint64_t save;
    memcpy(&save, f->data + at, 8);
    memcpy(f->data + at, &v, 8);
    struct bpe *c = NULL;
    int rc = bpe_cache_read_mem(&c, f->data, f->len, key, 0);
    bpe_free(c);
    memcpy(f->data + at, &save, 8);
    return rc;
}

/* The bounds of the large tables, at the edge: a pair naming the last id or the last rank is taken, one past either refused; a token
 * slot naming the last id is taken, one past refused (for GPT-2's merges.txt, whose merged
 * ids come from the rank, and a rank file's). */
TEST(bpe_vocabulary_cache_bounds)
{
    static const char *const which[] = { "gpt2", "r50k_base" };
    for (int w = 0; w < 2; w++) {
        struct bpe *b = load(which[w]);
        REQUIRE(b);
        struct bpe_cache_key key = bpe_cache_key("test", 0, "a", 1, NULL, 0);
        struct sl_buf f = SL_BUF_INIT;
        bpe_cache_write_buf(b, key, &f);
        uint64_t n = b->n_vocab;
        uint64_t nrank = b->merge_id ? b->n_merges : n - b->merge_off;
        uint64_t pair = PAIR_EMPTY, slot = 0;
        for (uint64_t i = 0; i <= b->pmask && pair == PAIR_EMPTY; i++)
            pair = b->ptab[i];
        for (uint64_t i = 0; i <= b->vmask && !slot; i++)
            if (b->vtab[i].id1)
                memcpy(&slot, &b->vtab[i], 8);
        size_t pat = find_u64(&f, pair), vat = find_u64(&f, slot);
        REQUIRE(pat != SIZE_MAX && vat != SIZE_MAX);
        uint64_t key_of = pair >> BPE_RANK_BITS, l = key_of >> BPE_ID_BITS;
        uint64_t rank = pair & ((1u << BPE_RANK_BITS) - 1);
        CHECK_EQ_INT(read_patched(&f, pat, ((l << BPE_ID_BITS | (n - 1)) << BPE_RANK_BITS) | rank, key), 0);
        CHECK_EQ_INT(read_patched(&f, pat, ((l << BPE_ID_BITS | n) << BPE_RANK_BITS) | rank, key),
                     SL_ERR_FORMAT);
        CHECK_CONTAINS(sl_err_msg(), "pair");
        CHECK_EQ_INT(read_patched(&f, pat, ((n - 1) << BPE_ID_BITS | (n - 1)) << BPE_RANK_BITS | rank, key), 0);
        CHECK_EQ_INT(read_patched(&f, pat, (n << BPE_ID_BITS | 0) << BPE_RANK_BITS | rank, key),
                     SL_ERR_FORMAT);
        CHECK_EQ_INT(read_patched(&f, pat, key_of << BPE_RANK_BITS | (nrank - 1), key), 0);
        CHECK_EQ_INT(read_patched(&f, pat, key_of << BPE_RANK_BITS | nrank, key), SL_ERR_FORMAT);
        uint64_t tag = slot & UINT32_MAX;
        CHECK_EQ_INT(read_patched(&f, vat, n << 32 | tag, key), 0);
        CHECK_EQ_INT(read_patched(&f, vat, (n + 1) << 32 | tag, key), SL_ERR_FORMAT);
        CHECK_CONTAINS(sl_err_msg(), "vocabulary slot");
        sl_buf_release(&f);
        bpe_free(b);
    }
}

/* The key of files hashed as they are read equals the key of their bytes in memory, for a
 * compressed file the bytes it holds; a missing second file differs from an empty one; a
 * missing file is an error naming it. */
TEST(bpe_cache_key_of_files)
{
    struct sl_buf v = SL_BUF_INIT;
    sl_buf_init(&v, 64u << 20);
    REQUIRE(sl_read_file(sl_test_fixture("tokenizer/o200k_base.tiktoken.zst"), &v) == 0);
    REQUIRE(v.len > 1000000); /* several of the 64 KiB pieces */
    /* (sl_test_write's path is overwritten by its next call) */
    char *plain = sl_xstrdup(sl_test_write("ranks.tiktoken", v.data, v.len));
    char *side = sl_xstrdup(sl_test_write("ranks.tiktoken.json", "{}", 2));
    char *empty = sl_xstrdup(sl_test_write("empty", "", 0));
    struct bpe_cache_key k, want = bpe_cache_key("tiktoken", 2, v.data, v.len, NULL, 0);
    REQUIRE(bpe_cache_key_files(&k, "tiktoken", 2, plain, NULL) == 0);
    CHECK(k.lo == want.lo && k.hi == want.hi);
    REQUIRE(bpe_cache_key_files(&k, "tiktoken", 2,
                                sl_test_fixture("tokenizer/o200k_base.tiktoken.zst"), NULL) == 0);
    CHECK(k.lo == want.lo && k.hi == want.hi);
    want = bpe_cache_key("tiktoken", 2, v.data, v.len, "{}", 2);
    REQUIRE(bpe_cache_key_files(&k, "tiktoken", 2, plain, side) == 0);
    CHECK(k.lo == want.lo && k.hi == want.hi);
    struct bpe_cache_key none, zero;
    REQUIRE(bpe_cache_key_files(&none, "gpt2", 0, side, NULL) == 0);
    REQUIRE(bpe_cache_key_files(&zero, "gpt2", 0, side, empty) == 0);
    CHECK(none.lo != zero.lo);
    want = bpe_cache_key("gpt2", 0, "{}", 2, "", 0);
    CHECK(zero.lo == want.lo && zero.hi == want.hi);
    CHECK(bpe_cache_key_files(&k, "gpt2", 0, side, "/nonexistent/merges.txt") != 0);
    CHECK_CONTAINS(sl_err_msg(), "/nonexistent/merges.txt");
    free(plain);
    free(side);
    free(empty);
    sl_buf_release(&v);
}

/* The reader refuses a file whose tables name ids outside the vocabulary even when its
 * checksum is not checked (what a fuzzer sees), and one made from other files. */
TEST(bpe_vocabulary_cache_checks)
{
    struct bpe *b = load("r50k_base");
    REQUIRE(b);
    struct bpe_cache_key key = bpe_cache_key("test", 0, "a", 1, NULL, 0);
    struct sl_buf f = SL_BUF_INIT;
    bpe_cache_write_buf(b, key, &f);
    struct bpe *c = NULL;
    REQUIRE(bpe_cache_read_mem(&c, f.data, f.len, key, 1) == 0);
    CHECK_EQ_INT(bpe_from_cache(c), 1);
    CHECK_EQ_INT(bpe_vocab_size(c), bpe_vocab_size(b));
    bpe_free(c);
    struct bpe_cache_key other = bpe_cache_key("test", 1, "a", 1, NULL, 0);
    CHECK_EQ_INT(bpe_cache_read_mem(&c, f.data, f.len, other, 1), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "other files");
    CHECK_EQ_INT(bpe_cache_read_mem(&c, f.data, f.len - 1, key, 1), SL_ERR_FORMAT);
    /* 4-byte words of the file set to 0xFFFFFFFF in turn (all of the header, then a sample): the
     * reader without its checksum refuses it or gives a vocabulary that encodes */
    size_t refused = 0, tried = 0;
    for (size_t at = 0; at + 4 <= f.len; at += 4 + (at / 4096) * 4096) {
        uint32_t save;
        memcpy(&save, f.data + at, 4);
        if (save == UINT32_MAX)
            continue; /* an empty slot already */
        memset(f.data + at, 0xFF, 4);
        tried++;
        if (bpe_cache_read_mem(&c, f.data, f.len, key, 0) == 0) {
            struct bpe_enc *e = bpe_enc_new(c);
            struct tok_ids ids = { 0 };
            CHECK_EQ_INT(bpe_encode(e, "Hello, world! 12345 \xff\xfe", 21, &ids), 0);
            tok_ids_release(&ids);
            bpe_enc_free(e);
            bpe_free(c);
        } else {
            refused++;
        }
        CHECK_EQ_INT(bpe_cache_read_mem(&c, f.data, f.len, key, 1), SL_ERR_FORMAT);
        memcpy(f.data + at, &save, 4);
    }
    CHECK(refused > 0 && tried > 100);
    sl_buf_release(&f);
    bpe_free(b);
}
