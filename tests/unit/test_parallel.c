/* Tests for the model-parallel layout (train/parallel.c): Megatron's rank order, the stage
 * split, and the shard table: slicing a full slab for every rank of a layout and placing the
 * parts back gives the slab again, every element held by exactly one owner; ZeRO-1's memory
 * estimate and its piecewise AdamW update. */
#include "tests/harness.h"

#include "train/optim.h"
#include "train/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void cfg_small(struct model_config *c, int llama)
{
    memset(c, 0, sizeof(*c));
    c->vocab_size = 97;
    c->padded_vocab_size = 128;
    c->max_seq_len = 16;
    c->n_layers = 3, c->d_model = 32, c->n_heads = 4, c->n_kv_heads = llama ? 2 : 4;
    c->d_ff = llama ? 48 : 128;
    c->head_dim = 8;
    c->norm = llama ? MODEL_RMSNORM : MODEL_LAYERNORM;
    c->act = llama ? MODEL_SWIGLU : MODEL_GELU_TANH;
    c->pos = llama ? MODEL_POS_ROPE : MODEL_POS_LEARNED;
    c->bias = !llama, c->tied_embeddings = !llama, c->norm_eps = 1e-5f;
    c->rope_theta = 10000;
    c->init_std = 0.02f;
}

TEST(parallel_rank_order_is_megatrons)
{
    struct parallel_config p = { 2, 2, 2, 0, 8, 0, 0 };
    struct parallel_coord c;
    parallel_coord_of(&p, 5, &c); /* 5 = tp 1 + 2 (dp 0 + 2 pp 1) */
    CHECK_EQ_INT(c.tp, 1);
    CHECK_EQ_INT(c.dp, 0);
    CHECK_EQ_INT(c.pp, 1);
    for (int r = 0; r < 8; r++) {
        parallel_coord_of(&p, r, &c);
        CHECK_EQ_INT(parallel_rank_of(&p, &c), r);
        CHECK_EQ_INT(c.tp, r % 2); /* tensor parallel fastest */
    }
    int first, n;
    struct parallel_config q = { 1, 3, 1, 0, 3, 0, 0 };
    parallel_stage_layers(&q, 8, 0, &first, &n);
    CHECK_EQ_INT(first, 0);
    CHECK_EQ_INT(n, 3);
    parallel_stage_layers(&q, 8, 2, &first, &n);
    CHECK_EQ_INT(first, 6);
    CHECK_EQ_INT(n, 2);
}

TEST(parallel_shards_cover_the_model_once)
{
    /* tensor, pipeline, virtual stages (5 layers for these: an uneven split) */
    static const int layouts[][3] = { { 1, 1, 1 }, { 2, 1, 1 }, { 1, 2, 1 }, { 2, 2, 1 },
                                      { 2, 3, 1 }, { 1, 2, 2 }, { 2, 2, 2 } };
    for (int llama = 0; llama < 2; llama++)
        for (size_t k = 0; k < sizeof(layouts) / sizeof(layouts[0]); k++) {
            struct model_config c;
            cfg_small(&c, llama);
            struct parallel_config p = { layouts[k][0], layouts[k][1], 1, 0, 0, 0, layouts[k][2] };
            p.world = p.tp * p.pp;
            if (p.vp > 1)
                c.n_layers = 5;
            REQUIRE(parallel_check(&p, &c) == 0);
            struct model_layout fl;
            model_layout_init(&fl, &c);
            float *full = calloc(fl.total, sizeof(float)), *back = calloc(fl.total, sizeof(float));
            int *count = calloc(fl.total, sizeof(int));
            REQUIRE(full && back && count);
            for (size_t i = 0; i < fl.total; i++)
                full[i] = (float)(i + 1); /* every element distinct */
            for (int r = 0; r < p.world; r++) {
                struct parallel_coord at;
                parallel_coord_of(&p, r, &at);
                struct model_shard s;
                model_shard_init(&s, &p, &at, &c, &fl);
                CHECK_EQ_INT(s.local.n_heads, c.n_heads / p.tp);
                CHECK_EQ_INT(s.local.n_kv_heads, c.n_kv_heads / p.tp);
                float *local = calloc(s.l.total, sizeof(float)),
                      *mark = calloc(fl.total, sizeof(float));
                REQUIRE(local && mark);
                model_shard_slice(&s, &fl, full, local);
                model_shard_place(&s, &fl, local, back, 0);
                /* count the elements this rank owns: place a slab of ones */
                for (size_t i = 0; i < s.l.total; i++)
                    local[i] = 1.0f;
                model_shard_place(&s, &fl, local, mark, 0);
                for (size_t i = 0; i < fl.total; i++)
                    count[i] += mark[i] != 0.0f;
                free(local);
                free(mark);
                model_shard_release(&s);
            }
            size_t wrong = 0, twice = 0;
            for (int i = 0; i < fl.n; i++)
                for (size_t e = 0; e < fl.t[i].numel; e++) {
                    size_t o = fl.t[i].offset + e;
                    wrong += back[o] != full[o];
                    twice += count[o] != 1;
                }
            CHECK(wrong == 0);
            CHECK(twice == 0);
            free(full);
            free(back);
            free(count);
            model_layout_release(&fl);
        }
}

TEST(parallel_interleaved_chunks)
{
    /* 5 layers over 2 stages x 2 virtual stages: virtual stage v = chunk x 2 + stage takes
     * layers [2, 1, 1, 1][v], in order; stage 0 holds layers 0, 1 and 3, stage 1 2 and 4 */
    struct parallel_config p = { 1, 2, 1, 0, 2, 0, 2 };
    static const int want[2][2][2] = { { { 0, 2 }, { 3, 1 } }, { { 2, 1 }, { 4, 1 } } };
    for (int st = 0; st < 2; st++)
        for (int ch = 0; ch < 2; ch++) {
            int first, n;
            parallel_chunk_layers(&p, 5, st, ch, &first, &n);
            CHECK_EQ_INT(first, want[st][ch][0]);
            CHECK_EQ_INT(n, want[st][ch][1]);
        }
    struct model_config c;
    cfg_small(&c, 1);
    c.n_layers = 5;
    struct model_layout fl;
    model_layout_init(&fl, &c);
    struct parallel_coord at = { 0, 0, 0 };
    struct model_shard s;
    model_shard_init(&s, &p, &at, &c, &fl);
    CHECK_EQ_INT(s.local.n_layers, 3);
    CHECK_EQ_INT(s.nchunks, 2);
    CHECK_EQ_INT(s.chunk_local[1], 2);
    CHECK(model_layout_find(&s.l, "layers.2.attn.qkv.weight") >= 0); /* local layer 2 */
    CHECK_EQ_INT(s.t[model_layout_find(&s.l, "layers.2.attn.qkv.weight")].full,
                 model_layout_find(&fl, "layers.3.attn.qkv.weight"));
    model_shard_release(&s);
    model_layout_release(&fl);
    /* refused: too few layers, virtual stages without a pipeline */
    c.n_layers = 3;
    CHECK(parallel_check(&p, &c) != 0);
    c.n_layers = 5;
    p.pp = 1;
    p.world = 1;
    CHECK(parallel_check(&p, &c) != 0);
}

TEST(parallel_refuses_impossible_layouts)
{
    struct model_config c;
    cfg_small(&c, 1); /* 2 KV heads */
    struct parallel_config p = { 4, 1, 1, 0, 4, 0, 0 };
    CHECK(parallel_check(&p, &c) != 0); /* KV heads are not replicated */
    p = (struct parallel_config){ 2, 1, 1, 0, 3, 0, 0 };
    CHECK(parallel_check(&p, &c) != 0); /* 3 ranks */
    p = (struct parallel_config){ 1, 4, 1, 0, 4, 0, 0 };
    CHECK(parallel_check(&p, &c) != 0); /* 4 stages, 3 layers */
    p = (struct parallel_config){ 1, 1, 1, 1, 1, 0, 0 };
    CHECK(parallel_check(&p, &c) != 0); /* SP without TP */
    p = (struct parallel_config){ 2, 3, 1, 1, 6, 0, 0 };
    CHECK(parallel_check(&p, &c) == 0);
}

TEST(parallel_zero_memory_and_pieces)
{
    struct model_config c;
    cfg_small(&c, 1);
    struct parallel_config p = { 2, 1, 4, 0, 8, 0, 0 };
    struct parallel_memory a, z;
    parallel_memory_estimate(&p, &c, 2, 16, 4, 0, -1, &a);
    p.zero = 1;
    parallel_memory_estimate(&p, &c, 2, 16, 4, 0, -1, &z);
    CHECK(a.params == z.params && a.act_bytes == z.act_bytes);
    CHECK(a.weights_bytes == 16.0 * (double)a.params);
    CHECK(z.weights_bytes == 10.0 * (double)a.params); /* 8 + 8 / 4 */
    /* ZeRO-1's update of a tensor in pieces (any cut) = the whole update, bit for bit */
    enum { N = 1003 };
    float p0[N], g[N], m0[N], v0[N], p1[N], m1[N], v1[N];
    for (int i = 0; i < N; i++) {
        p0[i] = p1[i] = sinf((float)i) * 0.1f;
        g[i] = cosf((float)i * 0.7f) * 1e-2f;
        m0[i] = m1[i] = g[i] * 0.3f;
        v0[i] = v1[i] = g[i] * g[i] * 0.5f;
    }
    struct adamw o = { 0.9, 0.95, 1e-8, 0.1 };
    adamw_step_range(&o, 1, p0, g, m0, v0, N, 3e-4, 7);
    size_t cut[] = { 0, 250, 501, 752, N };
    for (int k = 0; k < 4; k++)
        adamw_step_range(&o, 1, p1 + cut[k], g + cut[k], m1 + cut[k], v1 + cut[k],
                         cut[k + 1] - cut[k], 3e-4, 7);
    CHECK(memcmp(p0, p1, sizeof(p0)) == 0);
    CHECK(memcmp(m0, m1, sizeof(m0)) == 0);
    CHECK(memcmp(v0, v1, sizeof(v0)) == 0);
}
