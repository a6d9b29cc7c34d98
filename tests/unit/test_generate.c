/* Tests for generation: the key/value-cached decoder against the full forward pass (GPT and
 * Llama layouts; one token a step, and blocks of continuations as eval runs them), and the
 * sampler (greedy, seeds, temperature, top-k, top-p frequencies). */
#include "tests/harness.h"

#include "train/cpu_model.h"
#include "train/decode.h"
#include "train/model.h"
#include "train/sampler.h"

#include <math.h>
#include <stdlib.h>

static void cfg_small(struct model_config *c, int llama)
{
    memset(c, 0, sizeof(*c));
    c->vocab_size = 97;
    c->padded_vocab_size = 128;
    c->max_seq_len = 16;
    c->n_layers = 2, c->d_model = 32, c->n_heads = 4, c->n_kv_heads = llama ? 2 : 4;
    c->d_ff = llama ? 48 : 128;
    c->head_dim = 8;
    c->norm = llama ? MODEL_RMSNORM : MODEL_LAYERNORM;
    c->act = llama ? MODEL_SWIGLU : MODEL_GELU_TANH;
    c->pos = llama ? MODEL_POS_ROPE : MODEL_POS_LEARNED;
    c->bias = !llama, c->tied_embeddings = !llama, c->norm_eps = 1e-5f;
    c->rope_theta = 10000;
    c->init_std = 0.3f; /* large enough for peaked attention and logits */
}

TEST(decoder_matches_full_forward)
{
    for (int llama = 0; llama < 2; llama++) {
        struct model_config c;
        cfg_small(&c, llama);
        REQUIRE(model_config_check(&c) == 0);
        struct model_layout l;
        model_layout_init(&l, &c);
        float *params = aligned_alloc(64, l.total * sizeof(float));
        REQUIRE(params);
        model_init_params(&c, &l, params, 42 + (uint64_t)llama);
        enum { T = 16 };
        int32_t tokens[T], targets[T] = { 0 };
        for (int t = 0; t < T; t++)
            tokens[t] = (t * 37 + 11) % c.vocab_size;
        struct cpu_model *m;
        REQUIRE(cpu_model_new(&m, &c, &l, 1, T) == 0);
        cpu_model_forward(m, params, tokens, targets);
        const float *full = cpu_model_logits(m);
        struct decoder *d;
        REQUIRE(decoder_new(&d, &c, &l, params, T) == 0);
        for (int pass = 0; pass < 2; pass++) {
            double worst = 0, scale = 0;
            for (int t = 0; t < T; t++) {
                /* the second pass feeds all but the last token without logits */
                if (pass && t + 1 < T) {
                    REQUIRE(decoder_feed(d, tokens[t]) == 0);
                    continue;
                }
                const float *lg = decoder_step(d, tokens[t]);
                REQUIRE(lg);
                for (int v = 0; v < c.vocab_size; v++) {
                    worst = fmax(worst, fabs(lg[v] - full[(size_t)t * c.vocab_size + v]));
                    scale = fmax(scale, fabs(full[(size_t)t * c.vocab_size + v]));
                }
            }
            CHECK(scale > 0.1);
            if (!(worst <= 1e-6 * scale))
                sl_test_fail(__FILE__, __LINE__, "%s: decoder logits differ by %g (scale %g)",
                             llama ? "llama" : "gpt", worst, scale);
            CHECK_EQ_INT(decoder_len(d), T);
            CHECK(decoder_step(d, 1) == NULL); /* full */
            CHECK(decoder_feed(d, 1) != 0);
            decoder_reset(d);
        }
        decoder_free(d);
        d = NULL;
        CHECK(decoder_new(&d, &c, &l, params, T + 1) != 0 || !d);
        decoder_free(d);
        cpu_model_free(m);
        free(params);
        model_layout_release(&l);
    }
}

TEST(sampler_greedy_and_seeds)
{
    float lg[6] = { 0.1f, 2.0f, -1.0f, 2.0f, NAN, 1.5f };
    struct sampler s;
    REQUIRE(sampler_init(&s, 6, 0.0, 0, 1.0, 1) == 0);
    CHECK(sampler_greedy(&s));
    CHECK_EQ_INT(sampler_pick(&s, lg), 1); /* ties: the lowest id */
    sampler_release(&s);
    REQUIRE(sampler_init(&s, 6, 1.0, 1, 1.0, 1) == 0);
    CHECK_EQ_INT(sampler_pick(&s, lg), 1);
    sampler_release(&s);
    REQUIRE(sampler_init(&s, 6, 1.0, 0, 0.0, 1) == 0);
    CHECK_EQ_INT(sampler_pick(&s, lg), 1);
    sampler_release(&s);
    CHECK(sampler_init(&s, 6, -1.0, 0, 1.0, 1) != 0);
    CHECK(sampler_init(&s, 6, 1.0, -2, 1.0, 1) != 0);
    CHECK(sampler_init(&s, 6, 1.0, 0, NAN, 1) != 0);
    /* same seed, same draws; another seed, other draws; NaN never drawn */
    int32_t a[64], b[64], c[64];
    uint64_t seeds[3] = { 7, 7, 8 };
    int32_t *outs[3] = { a, b, c };
    for (int k = 0; k < 3; k++) {
        REQUIRE(sampler_init(&s, 6, 2.0, 0, 1.0, seeds[k]) == 0);
        for (int i = 0; i < 64; i++)
            outs[k][i] = sampler_pick(&s, lg);
        sampler_release(&s);
    }
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    CHECK(memcmp(a, c, sizeof(a)) != 0);
    for (int i = 0; i < 64; i++)
        CHECK(a[i] != 4 && c[i] != 4);
}

/* Frequencies of n draws over 4 tokens. */
static void freqs(double temperature, int top_k, double top_p, double f[4])
{
    float lg[4] = { logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f) };
    struct sampler s;
    REQUIRE(sampler_init(&s, 4, temperature, top_k, top_p, 99) == 0);
    int n = 40000, cnt[4] = { 0 };
    for (int i = 0; i < n; i++)
        cnt[sampler_pick(&s, lg)]++;
    for (int i = 0; i < 4; i++)
        f[i] = (double)cnt[i] / n;
    sampler_release(&s);
}

static int near(const double f[4], double a, double b, double c, double d)
{
    double w[4] = { a, b, c, d };
    for (int i = 0; i < 4; i++)
        if (fabs(f[i] - w[i]) > 0.01)
            return 0;
    return 1;
}

TEST(sampler_distributions)
{
    double f[4];
    freqs(1.0, 0, 1.0, f);
    CHECK(near(f, 0.5, 0.3, 0.15, 0.05));
    freqs(1.0, 2, 1.0, f); /* top-k 2: 0.5 and 0.3 renormalised */
    CHECK(near(f, 0.625, 0.375, 0, 0));
    freqs(1.0, 0, 0.6, f); /* top-p 0.6: 0.5 + 0.3 reach it */
    CHECK(near(f, 0.625, 0.375, 0, 0));
    freqs(1.0, 0, 0.5, f); /* 0.5 alone reaches 0.5 */
    CHECK(near(f, 1, 0, 0, 0));
    freqs(1.0, 3, 0.9, f); /* k 3 then p 0.9 of 0.95: all three */
    CHECK(near(f, 0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0));
    /* temperature 0.5 squares the probabilities */
    double z = 0.25 + 0.09 + 0.0225 + 0.0025;
    freqs(0.5, 0, 1.0, f);
    CHECK(near(f, 0.25 / z, 0.09 / z, 0.0225 / z, 0.0025 / z));
}

/* Blocks (eval's path): a context in two committed blocks, then two continuations of it in
 * one block, each row's logits equal to the full forward pass over context + continuation. */
TEST(decoder_block_matches_full_forward)
{
    for (int llama = 0; llama < 2; llama++) {
        struct model_config c;
        cfg_small(&c, llama);
        REQUIRE(model_config_check(&c) == 0);
        struct model_layout l;
        model_layout_init(&l, &c);
        float *params = aligned_alloc(64, l.total * sizeof(float));
        REQUIRE(params);
        model_init_params(&c, &l, params, 7 + (uint64_t)llama);
        enum { T = 16, P = 7, NA = 5, NB = 4 };
        int32_t seq[2][T], targets[T] = { 0 };
        for (int t = 0; t < T; t++) {
            seq[0][t] = (t * 37 + 11) % c.vocab_size;
            seq[1][t] = t < P ? seq[0][t] : (t * 53 + 5) % c.vocab_size;
        }
        float *full[2];
        struct cpu_model *m;
        REQUIRE(cpu_model_new(&m, &c, &l, 1, T) == 0);
        for (int k = 0; k < 2; k++) {
            cpu_model_forward(m, params, seq[k], targets);
            full[k] = malloc((size_t)T * c.vocab_size * sizeof(float));
            REQUIRE(full[k]);
            memcpy(full[k], cpu_model_logits(m), (size_t)T * c.vocab_size * sizeof(float));
        }
        struct decoder *d;
        REQUIRE(decoder_new_rows(&d, &c, &l, params, T, 10) == 0);
        /* the context: rows 0..3 then 4..6, the logits of the last */
        int last = 3;
        REQUIRE(decoder_block(d, seq[0], NULL, 4, NULL, 0, 1));
        last = 2;
        const float *lg = decoder_block(d, seq[0] + 4, NULL, 3, &last, 1, 1);
        REQUIRE(lg);
        CHECK_EQ_INT(decoder_len(d), P);
        double worst = 0, scale = 0;
        for (int v = 0; v < c.vocab_size; v++) {
            worst = fmax(worst, fabs(lg[v] - full[0][(size_t)(P - 1) * c.vocab_size + v]));
            scale = fmax(scale, fabs(full[0][(size_t)(P - 1) * c.vocab_size + v]));
        }
        /* both continuations in one block: rows 0..4 continue with seq[0], 5..8 with seq[1] */
        int32_t tok[NA + NB];
        int seg[NA + NB], out[NA + NB];
        for (int r = 0; r < NA + NB; r++) {
            int k = r >= NA, t = P + (k ? r - NA : r);
            tok[r] = seq[k][t];
            seg[r] = k ? NA : 0;
            out[r] = r;
        }
        lg = decoder_block(d, tok, seg, NA + NB, out, NA + NB, 0);
        REQUIRE(lg);
        CHECK_EQ_INT(decoder_len(d), P); /* not committed */
        for (int r = 0; r < NA + NB; r++) {
            int k = r >= NA, t = P + (k ? r - NA : r);
            for (int v = 0; v < c.vocab_size; v++) {
                double want = full[k][(size_t)t * c.vocab_size + v];
                worst = fmax(worst, fabs(lg[(size_t)r * c.vocab_size + v] - want));
                scale = fmax(scale, fabs(want));
            }
        }
        CHECK(scale > 0.1);
        if (!(worst <= 1e-6 * scale))
            sl_test_fail(__FILE__, __LINE__, "%s: block logits differ by %g (scale %g)",
                         llama ? "llama" : "gpt", worst, scale);
        /* blocks that do not fit or are malformed */
        CHECK(decoder_block(d, tok, NULL, 11, NULL, 0, 0) == NULL);        /* more rows than room */
        CHECK(decoder_block(d, tok, NULL, T - P + 1, NULL, 0, 0) == NULL); /* past max_len */
        CHECK(decoder_block(d, tok, seg, 2, NULL, 0, 1) == NULL);          /* commit with runs */
        int bad[3] = { 0, 2, 0 };
        CHECK(decoder_block(d, tok, bad, 3, NULL, 0, 0) == NULL); /* a run ahead of its row */
        int gap[3] = { 0, 0, 1 }; /* row 2 would continue row 1 whose run starts at 0 */
        CHECK(decoder_block(d, tok, gap, 3, NULL, 0, 0) == NULL);
        decoder_free(d);
        d = NULL;
        CHECK(decoder_new_rows(&d, &c, &l, params, T, T + 1) != 0 || !d);
        decoder_free(d);
        cpu_model_free(m);
        free(full[0]);
        free(full[1]);
        free(params);
        model_layout_release(&l);
    }
}
