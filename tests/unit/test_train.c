/* Tests for the trainer's building blocks: numpy-compatible shuffles, Megatron's split and
 * blending rules, the learning-rate schedule, the GEMM against a plain loop, the parameter
 * table (known model sizes), FLOPs per token, safetensors round trips and damaged files, and
 * the keys table of docs/trainer.md against the keys of the code (train/train_config.h). */
#include "tests/harness.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "dataset/blend.h"
#include "dataset/gpt_index.h"
#include "train/checkpoint.h"
#include "train/cpu_ops.h"
#include "train/model.h"
#include "train/optim.h"
#include "train/safetensors.h"
#include "train/train_config.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

TEST(mt19937_matches_numpy)
{
    struct mt19937 r;
    mt19937_seed(&r, 5489);
    CHECK_EQ_INT(mt19937_next32(&r), 3499211612u); /* the reference generator's first output */
    mt19937_seed(&r, 5);
    CHECK_EQ_INT(r.mt[1], 472231674u); /* numpy: RandomState(5).get_state()[1][1] */
    /* numpy: a = arange(10, dtype=int32); RandomState(seed).shuffle(a) */
    static const int32_t want1234[10] = { 7, 2, 9, 1, 0, 8, 4, 5, 6, 3 };
    static const int32_t want0[10] = { 2, 8, 4, 9, 1, 6, 7, 3, 0, 5 };
    int32_t a[10];
    for (int i = 0; i < 10; i++)
        a[i] = i;
    mt19937_seed(&r, 1234);
    mt19937_shuffle_i32(&r, a, 10);
    CHECK_EQ_MEM(a, sizeof(a), want1234, sizeof(want1234));
    for (int i = 0; i < 10; i++)
        a[i] = i;
    mt19937_seed(&r, 0);
    mt19937_shuffle_i32(&r, a, 10);
    CHECK_EQ_MEM(a, sizeof(a), want0, sizeof(want0));
    /* a longer one: RandomState(7).shuffle(arange(100000)) starts 33909 92307 89107 9538 */
    int64_t *b = malloc(100000 * sizeof(int64_t));
    for (int i = 0; i < 100000; i++)
        b[i] = i;
    mt19937_seed(&r, 7);
    mt19937_shuffle_i64(&r, b, 100000);
    CHECK(b[0] == 33909 && b[1] == 92307 && b[2] == 89107 && b[3] == 9538 && b[4] == 31008);
    free(b);
}

TEST(split_rule_and_parse)
{
    double w[3];
    REQUIRE(gpt_split_parse("969,30,1", w) == 0);
    uint64_t lo[3], hi[3];
    gpt_split_ranges(w, 1000, lo, hi);
    CHECK(lo[0] == 0 && hi[0] == 969 && lo[1] == 969 && hi[1] == 999 && lo[2] == 999 &&
          hi[2] == 1000);
    /* Python's round: halves go to even (0.5 -> 0, 1.5 -> 2, 2.5 -> 2) */
    REQUIRE(gpt_split_parse("1,1", w) == 0);
    gpt_split_ranges(w, 3, lo, hi);
    CHECK(hi[0] == 2 && lo[1] == 2 && hi[1] == 3 && lo[2] == 0 && hi[2] == 0);
    gpt_split_ranges(w, 5, lo, hi);
    CHECK(hi[0] == 2);
    CHECK_EQ_INT(gpt_split_parse("98, 2", w), 0);
    CHECK(fabs(w[0] - 0.98) < 1e-12 && w[2] == 0.0);
    CHECK_EQ_INT(gpt_split_parse("0,0,0", w), SL_ERR_CONFIG);
    CHECK_EQ_INT(gpt_split_parse("1,2,3,4", w), SL_ERR_CONFIG);
    CHECK_EQ_INT(gpt_split_parse("nothing", w), SL_ERR_CONFIG);
}

TEST(blend_greedy_rule)
{
    double w[2] = { 0.3, 0.7 };
    int16_t di[10];
    int64_t dsi[10];
    blend_build(w, 2, 10, di, dsi);
    /* as the Python port of helpers.cpp gives it (tests/oracle/megatron_index.py) */
    static const int16_t want[10] = { 1, 0, 1, 1, 0, 1, 1, 0, 1, 1 };
    CHECK_EQ_MEM(di, sizeof(di), want, sizeof(want));
    CHECK(dsi[0] == 0 && dsi[1] == 0 && dsi[2] == 1 && dsi[4] == 1 && dsi[9] == 6);
    CHECK_EQ_INT(blend_component_size(1000, 0.3, 0.005), 302); /* ceil(ceil(300) * 1.005) */
    char **p, *st;
    double *ws;
    int n;
    REQUIRE(blend_parse_prefix("0.3 a 0.7 b", 0, &p, &ws, &n, &st) == 0);
    CHECK(n == 2 && !strcmp(p[1], "b") && fabs(ws[0] - 0.3) < 1e-12);
    free(p), free(ws), free(st);
    CHECK_EQ_INT(blend_parse_prefix("0.3 a 0.3 b", 0, &p, &ws, &n, &st), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "sum to 0.6");
    REQUIRE(blend_parse_prefix("1 a 3 b", 1, &p, &ws, &n, &st) == 0);
    CHECK(ws[1] == 3.0); /* as given: the loader normalises */
    free(p), free(ws), free(st);
    /* Megatron's unweighted form: weights 0, set by the loader from the prefixes' sizes */
    REQUIRE(blend_parse_prefix("a b", 0, &p, &ws, &n, &st) == 0);
    CHECK(n == 2 && !strcmp(p[0], "a") && !strcmp(p[1], "b") && ws[0] == 0.0 && ws[1] == 0.0);
    free(p), free(ws), free(st);
    CHECK_EQ_INT(blend_parse_prefix("a 0.5 b", 0, &p, &ws, &n, &st), SL_ERR_CONFIG);
    CHECK_EQ_INT(blend_parse_prefix("-1 a 2 b", 1, &p, &ws, &n, &st), SL_ERR_CONFIG);
}

TEST(lr_schedules)
{
    struct lr_schedule s = { 1.0, 0.1, 10, 110, LR_COSINE, 0.2 };
    CHECK(fabs(lr_at(&s, 5) - 0.5) < 1e-12);
    CHECK(fabs(lr_at(&s, 10) - 1.0) < 1e-12);
    CHECK(fabs(lr_at(&s, 60) - 0.55) < 1e-12); /* halfway: the mean of lr and min_lr */
    CHECK(fabs(lr_at(&s, 110) - 0.1) < 1e-12);
    CHECK(fabs(lr_at(&s, 500) - 0.1) < 1e-12);
    s.style = LR_LINEAR;
    CHECK(fabs(lr_at(&s, 35) - 0.775) < 1e-12);
    s.style = LR_CONSTANT;
    CHECK(fabs(lr_at(&s, 100) - 1.0) < 1e-12);
    s.style = LR_WSD; /* flat until 110 - 22 = 88, then 1 - sqrt to min_lr */
    CHECK(fabs(lr_at(&s, 88) - 1.0) < 1e-12);
    CHECK(fabs(lr_at(&s, 99) - (0.1 + 0.9 * (1 - sqrt(0.5)))) < 1e-12);
    CHECK(fabs(lr_at(&s, 110) - 0.1) < 1e-12);
}

static void naive(int M, int N, int K, const float *A, ptrdiff_t sam, ptrdiff_t sak, const float *B,
                  ptrdiff_t sbk, ptrdiff_t sbn, double *C)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)A[m * sam + k * sak] * B[k * sbk + n * sbn];
            C[m * N + n] = s;
        }
}

TEST(gemm_matches_plain_loops)
{
    static const int shapes[][3] = {
        { 7, 37, 300 }, { 64, 16, 256 }, { 130, 70, 513 }, { 1, 1, 1 }, { 5, 3, 0 }
    };
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
        int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
        float *A = malloc(sizeof(float) * (M * K + 1)), *B = malloc(sizeof(float) * (K * N + 1));
        float *C = malloc(sizeof(float) * M * N), *bias = malloc(sizeof(float) * N);
        double *R = malloc(sizeof(double) * M * N);
        for (int i = 0; i < M * K; i++)
            A[i] = (float)((int)((unsigned)i * 7919u % 101u) - 50) / 50.0f;
        for (int i = 0; i < K * N; i++)
            B[i] = (float)((int)((unsigned)i * 104729u % 89u) - 44) / 44.0f;
        for (int i = 0; i < N; i++)
            bias[i] = (float)i;
        /* four layouts: A row-major or transposed, B row-major or transposed */
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                ptrdiff_t sam = ta ? 1 : K, sak = ta ? M : 1, sbk = tb ? 1 : N, sbn = tb ? K : 1;
                naive(M, N, K, A, sam, sak, B, sbk, sbn, R);
                for (int i = 0; i < M * N; i++)
                    C[i] = 1.0f;
                cpu_gemm(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 1, NULL);
                double worst = 0;
                for (int i = 0; i < M * N; i++)
                    worst = fmax(worst, fabs(C[i] - (R[i] + 1.0)));
                CHECK(worst < 1e-3);
                cpu_gemm(M, N, K, A, sam, sak, B, sbk, sbn, C, N, 0, bias);
                worst = 0;
                for (int i = 0; i < M * N; i++)
                    worst = fmax(worst, fabs(C[i] - (R[i] + bias[i % N])));
                CHECK(worst < 1e-3);
            }
        free(A), free(B), free(C), free(bias), free(R);
    }
}

static void cfg_gpt2(struct model_config *c)
{
    memset(c, 0, sizeof(*c));
    c->vocab_size = 50257;
    c->padded_vocab_size = 50304;
    c->max_seq_len = 1024;
    c->n_layers = 12, c->d_model = 768, c->n_heads = 12, c->n_kv_heads = 12, c->d_ff = 3072;
    c->head_dim = 64;
    c->norm = MODEL_LAYERNORM, c->act = MODEL_GELU_TANH, c->pos = MODEL_POS_LEARNED;
    c->bias = 1, c->tied_embeddings = 1, c->norm_eps = 1e-5f, c->init_std = 0.02f;
}

/* A small GPT of n layers for the checkpoint tests. */
static void cfg_small(struct model_config *c, int n)
{
    cfg_gpt2(c);
    c->vocab_size = 250, c->padded_vocab_size = 256, c->max_seq_len = 16, c->n_layers = n;
    c->d_model = 64, c->n_heads = 4, c->n_kv_heads = 4, c->d_ff = 128, c->head_dim = 16;
}

TEST(parameter_table_and_flops)
{
    struct model_config c;
    cfg_gpt2(&c);
    REQUIRE(model_config_check(&c) == 0);
    struct model_layout l;
    model_layout_init(&l, &c);
    /* GPT-2 small: 124,439,808 with the real vocabulary, + 47 padded rows of 768 */
    CHECK_EQ_INT(l.params, 124439808 + 47 * 768);
    CHECK_EQ_INT(l.n, 2 + 12 * 12 + 2);
    for (int i = 0; i < l.n; i++)
        CHECK(l.t[i].offset % MODEL_ALIGN == 0);
    CHECK(model_layout_find(&l, "layers.11.mlp.proj.bias") == l.n - 3);
    CHECK(l.t[model_layout_find(&l, "layers.0.attn.qkv.weight")].shape[0] == 2304);
    CHECK(!l.t[model_layout_find(&l, "layers.0.attn_norm.weight")].decay);
    CHECK(l.t[l.embed].decay);
    model_layout_release(&l);
    /* Llama 3 8B: 8,030,261,248 parameters; 57.9 GFLOP per token at 8192 (NeMo's formula) */
    struct model_config k = c;
    k.vocab_size = k.padded_vocab_size = 128256;
    k.max_seq_len = 8192, k.n_layers = 32, k.d_model = 4096, k.n_heads = 32, k.n_kv_heads = 8;
    k.d_ff = 14336, k.head_dim = 128, k.norm = MODEL_RMSNORM, k.act = MODEL_SWIGLU;
    k.pos = MODEL_POS_ROPE, k.bias = 0, k.tied_embeddings = 0, k.rope_theta = 500000;
    REQUIRE(model_config_check(&k) == 0);
    model_layout_init(&l, &k);
    CHECK_EQ_INT(l.params, 8030261248ll);
    model_layout_release(&l);
    double f = model_flops_per_token(&k, 8192);
    CHECK(fabs(f / 57.9e9 - 1.0) < 2e-3);
    /* dense GPT: 72 L D^2 + 12 L s D + 6 D V per token */
    double g = model_flops_per_token(&c, 1024);
    double want = 72.0 * 12 * 768 * 768 + 12.0 * 12 * 1024 * 768 + 6.0 * 768 * 50257;
    CHECK(fabs(g / want - 1.0) < 1e-12);
    /* Llama 3.1 RoPE scaling: high frequencies kept, low ones divided by the factor */
    k.rope_factor = 8, k.rope_low_freq_factor = 1, k.rope_high_freq_factor = 4;
    k.rope_original_max_pos = 8192;
    double inv[64];
    model_rope_inv_freq(&k, inv);
    CHECK(fabs(inv[0] - 1.0) < 1e-15);
    CHECK(fabs(inv[63] - pow(500000.0, -126.0 / 128) / 8) < 1e-18);
}

TEST(config_checks)
{
    struct model_config c;
    cfg_gpt2(&c);
    c.n_heads = 7;
    c.head_dim = 768 / 7;
    CHECK_EQ_INT(model_config_check(&c), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "not a multiple of num_attention_heads");
    cfg_gpt2(&c);
    c.n_kv_heads = 5;
    CHECK_EQ_INT(model_config_check(&c), SL_ERR_CONFIG);
    struct sl_buf b = SL_BUF_INIT;
    cfg_gpt2(&c);
    REQUIRE(model_config_to_json(&c, &b) == 0);
    struct model_config d;
    REQUIRE(model_config_from_json(&d, b.data, b.len) == 0);
    CHECK(d.vocab_size == c.vocab_size && d.act == c.act && d.norm_eps == c.norm_eps);
    CHECK_EQ_INT(model_config_from_json(&d, "{\"vocab_size\": 3}", 17), SL_ERR_FORMAT);
    sl_buf_release(&b);
}

TEST(safetensors_round_trip_and_damage)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/t.safetensors", sl_test_tmpdir());
    float a[6] = { 1, 2, 3, 4, 5, 6 };
    int32_t b[2] = { -1, 7 };
    struct st_tensor t[2] = { { "a.weight", "F32", 2, { 2, 3 }, a, sizeof(a) },
                              { "b", "I32", 1, { 2 }, b, sizeof(b) } };
    const char *meta[] = { "format", "pt", NULL };
    REQUIRE(st_write(path, t, 2, meta) == 0);
    struct st_file *f;
    REQUIRE(st_open(&f, path) == 0);
    CHECK_EQ_INT(st_count(f), 2);
    CHECK_EQ_STR(st_metadata(f, "format"), "pt");
    float got[6];
    CHECK_EQ_INT(st_read_f32(f, "a.weight", got, 6), 0);
    CHECK_EQ_MEM(got, sizeof(got), a, sizeof(a));
    CHECK_EQ_INT(st_read_f32(f, "b", got, 2), SL_ERR_FORMAT);
    CHECK_EQ_INT(st_read_f32(f, "missing", got, 2), SL_ERR_NOTFOUND);
    st_close(f);
    /* every truncation is an error naming the file, never a crash */
    struct sl_buf raw = SL_BUF_INIT;
    FILE *fp = fopen(path, "rb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    for (size_t cut = 0; cut < n; cut++) {
        int rc = st_open_mem(&f, buf, cut, "cut.safetensors");
        CHECK(rc != 0);
        if (rc == 0)
            st_close(f);
    }
    CHECK_CONTAINS(sl_err_msg(), "cut.safetensors");
    CHECK_CONTAINS(sl_err_msg(), "truncated");
    /* a header that is not JSON, a shape that disagrees with the bytes */
    memcpy(buf + 8, "xx", 2);
    CHECK_EQ_INT(st_open_mem(&f, buf, n, "bad"), SL_ERR_FORMAT);
    static const char bad_shape[] =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}";
    char img[128] = { 0 };
    img[0] = (char)(sizeof(bad_shape) - 1);
    memcpy(img + 8, bad_shape, sizeof(bad_shape) - 1);
    CHECK_EQ_INT(st_open_mem(&f, img, 8 + sizeof(bad_shape) - 1 + 8, "bad"), SL_ERR_FORMAT);
    sl_buf_release(&raw);
}

/* st_write_fill (the GPU checkpoint writer's path: one tensor in memory at a time) writes the
 * same bytes as st_write; a fill that fails leaves no file. */
struct fill_src {
    const struct st_tensor *t;
    size_t fail_at; /* (size_t)-1: never */
    size_t calls;
};

static int fill_copy(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct fill_src *f = arg;
    f->calls++;
    if (i == f->fail_at)
        return sl_err_set(SL_ERR_IO, "fill failed at tensor %zu", i);
    if (nbytes != f->t[i].nbytes)
        return sl_err_set(SL_ERR_STATE, "fill asked %zu bytes for tensor %zu", nbytes, i);
    memcpy(buf, f->t[i].data, nbytes);
    return 0;
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return 0;
    size_t n = fread(buf, 1, cap, fp);
    fclose(fp);
    return n;
}

TEST(safetensors_fill_writer)
{
    char p1[600], p2[600], p3[600];
    snprintf(p1, sizeof(p1), "%s/plain.safetensors", sl_test_tmpdir());
    snprintf(p2, sizeof(p2), "%s/fill.safetensors", sl_test_tmpdir());
    snprintf(p3, sizeof(p3), "%s/failed.safetensors", sl_test_tmpdir());
    float a[6] = { 1, 2, 3, 4, 5, 6 }, c[1] = { -2 };
    int32_t b[2] = { -1, 7 };
    struct st_tensor t[4] = { { "a.weight", "F32", 2, { 2, 3 }, a, sizeof(a) },
                              { "empty", "F32", 1, { 0 }, NULL, 0 },
                              { "b", "I32", 1, { 2 }, b, sizeof(b) },
                              { "c", "F32", 1, { 1 }, c, sizeof(c) } };
    const char *meta[] = { "format", "pt", NULL };
    REQUIRE(st_write(p1, t, 4, meta) == 0);
    struct st_tensor nodata[4];
    memcpy(nodata, t, sizeof(t));
    for (int i = 0; i < 4; i++)
        nodata[i].data = NULL; /* the fill path must not read them */
    struct fill_src src = { t, (size_t)-1, 0 };
    REQUIRE(st_write_fill(p2, nodata, 4, meta, fill_copy, &src) == 0);
    CHECK_EQ_INT(src.calls, 3); /* not for the empty tensor */
    static char x[4096], y[4096];
    size_t nx = slurp(p1, x, sizeof(x)), ny = slurp(p2, y, sizeof(y));
    CHECK(nx > 0);
    CHECK_EQ_MEM(x, nx, y, ny);
    struct fill_src bad = { t, 2, 0 };
    CHECK_EQ_INT(st_write_fill(p3, nodata, 4, meta, fill_copy, &bad), SL_ERR_IO);
    CHECK_CONTAINS(sl_err_msg(), "fill failed at tensor 2");
    CHECK(access(p3, F_OK) != 0);
}

/* Fill functions over host slabs for ckpt_write_model_fill / ckpt_write_shard_fill. */
struct ckpt_fill {
    const struct model_layout *l;
    const float *src; /* params | m | v, n floats each */
    size_t n;
    const struct ckpt_range *ranges; /* the shard's, all non-empty */
};

static int fill_model(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct ckpt_fill *f = arg;
    memcpy(buf, f->src + f->l->t[i].offset, nbytes);
    return 0;
}

static int fill_shard(void *arg, size_t i, void *buf, size_t nbytes)
{
    struct ckpt_fill *f = arg;
    const struct ckpt_range *r = &f->ranges[i / 3];
    if (nbytes != r->n * sizeof(float))
        return sl_err_set(SL_ERR_STATE, "shard tensor %zu: %zu bytes", i, nbytes);
    memcpy(buf, f->src + (i % 3) * f->n + r->first, nbytes);
    return 0;
}

/* Shards whose ranges overlap (with the lengths summing to the model's size) or leave a
 * gap are refused with the elements named, never read with some elements left zero. */
TEST(checkpoint_shards_must_tile)
{
    struct model_config c;
    cfg_small(&c, 1);
    REQUIRE(model_config_check(&c) == 0);
    struct model_layout l;
    model_layout_init(&l, &c);
    size_t n = l.total;
    float *src = calloc(3 * n, sizeof(float)), *dst = calloc(3 * n, sizeof(float));
    REQUIRE(src && dst);
    const char *dir = sl_test_tmpdir();
    struct ckpt_state st;
    memset(&st, 0, sizeof(st));
    st.adam_step = 1;
    /* [0, n/2) twice (n/2 + n/2 = n: the old check, a sum of lengths, passed), then a gap */
    size_t h = n / 2;
    struct ckpt_range both[2][2] = {
        { { 0, h, src, src + n, src + 2 * n }, { 0, n - h, src, src + n, src + 2 * n } },
        { { 0, h, src, src + n, src + 2 * n },
          { h + 8, n - h - 8, src + h + 8, src + n + h + 8, src + 2 * n + h + 8 } },
    };
    const char *want[2] = { "hold twice", "leave out" };
    for (int k = 0; k < 2; k++) {
        st.step = k + 1;
        REQUIRE(ckpt_begin(dir, st.step) == 0);
        REQUIRE(ckpt_write_model(dir, st.step, &l, src) == 0);
        REQUIRE(ckpt_write_shard(dir, st.step, 0, 2, &both[k][0], 1) == 0);
        REQUIRE(ckpt_write_shard(dir, st.step, 1, 2, &both[k][1], 1) == 0);
        REQUIRE(ckpt_commit(dir, &c, &st, "{}", "{}", 1, 2) == 0);
        char *path = NULL;
        REQUIRE(ckpt_find_latest(dir, &path) == 0 && path);
        CHECK(ckpt_load(path, &l, dst, dst + n, dst + 2 * n) == SL_ERR_CORRUPT);
        CHECK_CONTAINS(sl_err_msg(), want[k]);
        free(path);
    }
    model_layout_release(&l);
    free(src);
    free(dst);
}

/* The GPU trainer's sharded checkpoints: any number of writers, read back by ranges or whole
 * (the CPU path's ckpt_load) exactly; per-tensor checkpoints read by ranges too. */
TEST(checkpoint_shards_any_rank_count)
{
    struct model_config c;
    cfg_small(&c, 2);
    REQUIRE(model_config_check(&c) == 0);
    struct model_layout l;
    model_layout_init(&l, &c);
    size_t n = l.total;
    float *src = calloc(3 * n, sizeof(float)), *dst = calloc(3 * n, sizeof(float));
    REQUIRE(src && dst);
    for (int i = 0; i < l.n; i++) /* gaps between tensors stay 0 */
        for (size_t k = 0; k < l.t[i].numel; k++)
            for (int p = 0; p < 3; p++)
                src[p * n + l.t[i].offset + k] =
                    (float)(p + 1) * 0.001f * (float)(l.t[i].offset + k) + 0.5f;
    const char *dir = sl_test_tmpdir();
    struct ckpt_state st;
    memset(&st, 0, sizeof(st));
    st.step = 5;
    st.adam_step = 5;
    st.consumed_samples = 40;
    /* 3 writers; cut [0, n) into 7 uneven ranges dealt round-robin, like ZeRO-1 bucket slices */
    size_t cuts[8] = { 0, 1, n / 7, n / 3, n / 3 + 64, n / 2, n - 5, n };
    REQUIRE(ckpt_begin(dir, st.step) == 0);
    /* the model and writer 1 through the tensor-by-tensor writers the GPU trainer uses */
    struct ckpt_fill cf = { &l, src, n, NULL };
    REQUIRE(ckpt_write_model_fill(dir, st.step, &l, fill_model, &cf) == 0);
    for (int r = 0; r < 3; r++) {
        struct ckpt_range rg[3];
        size_t nr = 0;
        for (int k = r; k < 7; k += 3, nr++)
            rg[nr] = (struct ckpt_range){ cuts[k], cuts[k + 1] - cuts[k], src + cuts[k],
                                          src + n + cuts[k], src + 2 * n + cuts[k] };
        if (r == 1) {
            cf.ranges = rg;
            REQUIRE(ckpt_write_shard_fill(dir, st.step, r, 3, rg, nr, fill_shard, &cf) == 0);
        } else {
            REQUIRE(ckpt_write_shard(dir, st.step, r, 3, rg, nr) == 0);
        }
    }
    REQUIRE(ckpt_commit(dir, &c, &st, "{}", "{}", 1, 3) == 0);
    char *path = NULL;
    REQUIRE(ckpt_find_latest(dir, &path) == 0 && path);
    CHECK(ckpt_is_sharded(path));
    struct model_config c2;
    struct ckpt_state st2;
    REQUIRE(ckpt_read_meta(path, &c2, &st2) == 0);
    CHECK_EQ_INT(st2.adam_step, 5);
    CHECK_EQ_INT(st2.consumed_samples, 40);
    /* whole, as the CPU trainer resumes */
    REQUIRE(ckpt_load(path, &l, dst, dst + n, dst + 2 * n) == 0);
    CHECK_EQ_MEM(dst, 3 * n * sizeof(float), src, 3 * n * sizeof(float));
    /* by ranges, as a GPU rank of another world size resumes */
    struct ckpt_range want[2] = { { 3, 100, NULL, NULL, NULL },
                                  { n / 3 - 10, 200, NULL, NULL, NULL } };
    for (int p = 0; p < 3; p++) {
        float a[100], b[200];
        float *d[2] = { a, b };
        REQUIRE(ckpt_read_ranges(path, &l, (enum ckpt_part)p, want, 2, d) == 0);
        CHECK_EQ_MEM(a, sizeof(a), src + p * n + 3, sizeof(a));
        CHECK_EQ_MEM(b, sizeof(b), src + p * n + n / 3 - 10, sizeof(b));
    }
    /* a per-tensor (CPU) checkpoint read by ranges */
    st.step = 6;
    REQUIRE(ckpt_save(dir, &c, &l, src, src + n, src + 2 * n, &st, "{}", "{}") == 0);
    free(path);
    REQUIRE(ckpt_find_latest(dir, &path) == 0 && path);
    CHECK(!ckpt_is_sharded(path));
    for (int p = 0; p < 3; p++) {
        float a[100], b[200];
        float *d[2] = { a, b };
        REQUIRE(ckpt_read_ranges(path, &l, (enum ckpt_part)p, want, 2, d) == 0);
        CHECK_EQ_MEM(a, sizeof(a), src + p * n + 3, sizeof(a));
        CHECK_EQ_MEM(b, sizeof(b), src + p * n + n / 3 - 10, sizeof(b));
    }
    /* weights only with no AdamW update (sluice import hf): zero moments, by ranges (the
     * GPU resume) and whole (the CPU resume); after updates, missing moments are an error */
    struct ckpt_state st0 = st;
    st0.step = 7;
    st0.adam_step = 0;
    REQUIRE(ckpt_save(dir, &c, &l, src, NULL, NULL, &st0, "{}", NULL) == 0);
    free(path);
    REQUIRE(ckpt_find_latest(dir, &path) == 0 && path);
    for (int p = 1; p < 3; p++) {
        float a[100], b[200];
        float *d[2] = { a, b };
        memset(a, 0xff, sizeof(a));
        REQUIRE(ckpt_read_ranges(path, &l, (enum ckpt_part)p, want, 2, d) == 0);
        CHECK(a[0] == 0.0f && a[99] == 0.0f && b[199] == 0.0f);
    }
    memset(dst, 0, n * sizeof(float));
    memset(dst + n, 0xff, 2 * n * sizeof(float));
    REQUIRE(ckpt_load(path, &l, dst, dst + n, dst + 2 * n) == 0);
    CHECK_EQ_MEM(dst, n * sizeof(float), src, n * sizeof(float));
    CHECK(dst[n] == 0.0f && dst[3 * n - 1] == 0.0f);
    st0.step = 8;
    st0.adam_step = 3;
    REQUIRE(ckpt_save(dir, &c, &l, src, NULL, NULL, &st0, "{}", NULL) == 0);
    free(path);
    REQUIRE(ckpt_find_latest(dir, &path) == 0 && path);
    CHECK(ckpt_load(path, &l, dst, dst + n, dst + 2 * n) != 0);
    CHECK_CONTAINS(sl_err_msg(), "no optimizer.safetensors after 3 AdamW updates");
    /* a missing shard is an error that says so */
    free(path);
    path = sl_xasprintf("%s/step-%08d", dir, 5);
    char *shard = sl_xasprintf("%s/optimizer-00001-of-00003.safetensors", path);
    REQUIRE(unlink(shard) == 0);
    CHECK(ckpt_load(path, &l, dst, dst + n, dst + 2 * n) != 0);
    CHECK_CONTAINS(sl_err_msg(), "shard file missing");
    free(shard);
    free(path);
    free(src);
    free(dst);
    model_layout_release(&l);
}

/* A checkpoint operand: a step directory is itself; a checkpoint directory gives its newest
 * complete step (one without checkpoint.json is not complete); anything else is an error
 * naming it. */
TEST(checkpoint_resolve_operand)
{
    char *dir = sl_xasprintf("%s/ck", sl_test_tmpdir());
    const int steps[] = { 1, 3, 5 };
    for (int i = 0; i < 3; i++) {
        char *s = sl_xasprintf("%s/step-%08d", dir, steps[i]);
        REQUIRE(sl_mkdir_p(s) == 0);
        char *j = sl_xasprintf("%s/checkpoint.json", s);
        if (steps[i] != 5)
            REQUIRE(sl_write_file_atomic(j, "{}", 2) == 0);
        free(j);
        free(s);
    }
    char *step = NULL, *want = sl_xasprintf("%s/step-%08d", dir, 3);
    CHECK_EQ_INT(ckpt_resolve(dir, &step), 0);
    CHECK_EQ_STR(step, want);
    free(step);
    char *one = sl_xasprintf("%s/step-%08d", dir, 1);
    CHECK_EQ_INT(ckpt_resolve(one, &step), 0);
    CHECK_EQ_STR(step, one);
    free(step);
    /* not there, a file, a directory with no complete step */
    char *missing = sl_xasprintf("%s/none", dir), *file = sl_xasprintf("%s/f", dir);
    char *empty = sl_xasprintf("%s/step-%08d", dir, 5);
    REQUIRE(sl_write_file_atomic(file, "x", 1) == 0);
    CHECK_EQ_INT(ckpt_resolve(missing, &step), SL_ERR_NOTFOUND);
    CHECK(step == NULL);
    CHECK_CONTAINS(sl_err_msg(), "cannot open checkpoint '");
    CHECK_EQ_INT(ckpt_resolve(file, &step), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "is not a directory");
    CHECK_EQ_INT(ckpt_resolve(empty, &step), SL_ERR_NOTFOUND);
    CHECK_CONTAINS(sl_err_msg(), "holds no checkpoint");
    CHECK(step == NULL);
    free(missing);
    free(file);
    free(empty);
    free(one);
    free(want);
    free(dir);
}

/* The names in `backticks` of the first cell of each row of the table under "## Configuration
 * keys" in docs/trainer.md, each as "\nNAME\n" in out. */
static void doc_keys(const char *doc, struct sl_buf *out)
{
    const char *a = strstr(doc, "\n## Configuration keys\n");
    REQUIRE(a);
    const char *end = strstr(a + 1, "\n## ");
    REQUIRE(end);
    sl_buf_putc(out, '\n');
    for (const char *line = a + 1; line && line < end; line = strchr(line, '\n')) {
        line++;
        if (strncmp(line, "| `", 3) != 0)
            continue;
        const char *cell_end = strstr(line + 2, " |");
        REQUIRE(cell_end && cell_end < end);
        for (const char *q = strchr(line, '`'); q && q < cell_end; q = strchr(q, '`')) {
            const char *close = strchr(q + 1, '`');
            REQUIRE(close && close < cell_end);
            sl_buf_printf(out, "%.*s\n", (int)(close - q - 1), q + 1);
            q = close + 1;
        }
    }
}

/* Every key of train_keys has its row in docs/trainer.md (and a line of help), and the page
 * names no other. */
TEST(train_keys_docs_table)
{
    struct sl_buf doc = SL_BUF_INIT, listed = SL_BUF_INIT, known = SL_BUF_INIT;
    doc.max = (size_t)16 << 20;
    REQUIRE(sl_read_file(sl_test_fixture("../../docs/trainer.md"), &doc) == 0);
    REQUIRE(sl_buf_putc(&doc, 0) == 0);
    doc_keys(doc.data, &listed);
    sl_buf_putc(&known, '\n');
    for (const struct train_key *k = train_keys; k->path; k++) {
        char *want = sl_xasprintf("\n%s\n", k->path);
        if (!strstr(listed.data, want))
            fprintf(stderr, "docs/trainer.md: no row for the key '%s'\n", k->path);
        CHECK(strstr(listed.data, want) != NULL);
        CHECK(k->help && k->help[0]);
        free(want);
        sl_buf_printf(&known, "%s\n", k->path);
    }
    for (const char *n = listed.data + 1; *n; n = strchr(n, '\n') + 1) {
        size_t len = strcspn(n, "\n");
        char *want = sl_xasprintf("\n%.*s\n", (int)len, n);
        if (!strstr(known.data, want))
            fprintf(stderr, "docs/trainer.md: '%.*s' is no key of train_keys\n", (int)len, n);
        CHECK(strstr(known.data, want) != NULL);
        free(want);
    }
    sl_buf_release(&doc);
    sl_buf_release(&listed);
    sl_buf_release(&known);
}
