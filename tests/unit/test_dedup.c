/* Tests for curate/dedup: normalisation, shingles, MinHash, LSH pairs, union-find and
 * components, the index files. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/rng.h"
#include "core/world.h"
#include "curate/dedup/components.h"
#include "curate/dedup/lsh.h"
#include "curate/dedup/lsh_index.h"
#include "curate/dedup/minhash.h"
#include "curate/dedup/normalize.h"
#include "curate/dedup/shingle.h"
#include "curate/dedup/unionfind.h"

#include <math.h>
#include <stdlib.h>

static const char *norm(const char *s, unsigned flags)
{
    static struct sl_buf b;
    sl_buf_reset(&b);
    dd_normalize(s, strlen(s), flags, &b);
    return b.data ? b.data : "";
}

TEST(dedup_normalize)
{
    CHECK_EQ_STR(norm("  Hello,   World!  ", DD_NORM_ALL), "hello world");
    CHECK_EQ_STR(norm("Ça coûte 12,50 €", DD_NORM_ALL), "ca coute 00 00 €");
    CHECK_EQ_STR(norm("ΆΛΦΑ Ωμέγα", DD_NORM_LOWER), "άλφα ωμέγα");
    CHECK_EQ_STR(norm("ΆΛΦΑ", DD_NORM_LOWER | DD_NORM_ACCENTS), "αλφα");
    CHECK_EQ_STR(norm("ПРИВЕТ Мир", DD_NORM_LOWER), "привет мир");
    CHECK_EQ_STR(norm("e\xCC\x81t\xC3\xA9", DD_NORM_ACCENTS), "ete");
    CHECK_EQ_STR(norm("a\t\n b", DD_NORM_SPACE), "a b");
    CHECK_EQ_STR(norm("a\t\n b", 0), "a\t\n b");
    CHECK_EQ_STR(norm("x\xff y", DD_NORM_ALL), "x\xff y"); /* invalid byte kept */
    CHECK_EQ_STR(norm("", DD_NORM_ALL), "");
    unsigned f;
    CHECK_EQ_INT(dd_norm_parse("lower,digits", &f), 0);
    CHECK_EQ_INT(f, DD_NORM_LOWER | DD_NORM_DIGITS);
    CHECK_EQ_INT(dd_norm_parse("lower,bogus", &f), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "'bogus'");
    char nm[64];
    CHECK_EQ_STR(dd_norm_name(DD_NORM_ALL, nm, sizeof(nm)), "lower,punct,space,digits,accents");
}

TEST(dedup_shingles)
{
    struct dd_shingler s;
    REQUIRE(dd_shingler_parse(&s, "words:3", 1) == 0);
    struct dd_u64s a = { 0 };
    int whole = -1;
    CHECK_EQ_INT(dd_shingle(&s, "a b c d e", 9, &a, &whole), 3);
    CHECK_EQ_INT(whole, 0);
    /* the same words give the same shingles wherever they are */
    struct dd_u64s b = { 0 };
    dd_shingle(&s, "x c d e", 7, &b, &whole);
    CHECK_EQ_INT(b.n, 2);
    CHECK(a.v[2] == b.v[1]);
    /* shorter than one shingle: hashed whole */
    a.n = 0;
    CHECK_EQ_INT(dd_shingle(&s, " a b ", 5, &a, &whole), 1);
    CHECK_EQ_INT(whole, 1);
    a.n = 0;
    CHECK_EQ_INT(dd_shingle(&s, "   ", 3, &a, &whole), 0);
    REQUIRE(dd_shingler_parse(&s, "chars:3", 1) == 0);
    a.n = 0;
    CHECK_EQ_INT(dd_shingle(&s, "h\xC3\xA9llo", 6, &a, &whole), 3); /* 5 code points */
    a.n = 0;
    CHECK_EQ_INT(dd_shingle(&s, "h\xC3\xA9", 3, &a, &whole), 1);
    CHECK_EQ_INT(whole, 1);
    CHECK_EQ_INT(dd_shingler_parse(&s, "words:0", 1), SL_ERR_USAGE);
    CHECK_EQ_INT(dd_shingler_parse(&s, "lines:3", 1), SL_ERR_USAGE);
    CHECK_EQ_INT(dd_shingler_parse(&s, "chars:", 1), SL_ERR_USAGE);
    dd_u64s_release(&a);
    dd_u64s_release(&b);
}

TEST(dedup_sort_and_jaccard)
{
    struct dd_u64s a = { 0 };
    struct sl_rng r;
    sl_rng_seed(&r, 5, 0);
    for (int i = 0; i < 5000; i++)
        dd_u64s_push(&a, sl_rng_u64(&r) % 3000);
    dd_u64s_sort_unique(&a);
    for (size_t i = 1; i < a.n; i++)
        CHECK(a.v[i - 1] < a.v[i]);
    uint64_t x[] = { 1, 2, 3, 4 }, y[] = { 3, 4, 5, 6 };
    CHECK(fabs(dd_jaccard(x, 4, y, 4) - 2.0 / 6.0) < 1e-12);
    CHECK(dd_jaccard(x, 0, y, 0) == 1.0);
    dd_u64s_release(&a);
}

/* MinHash estimates the Jaccard similarity within a few standard errors, for both
 * families. */
TEST(dedup_minhash_estimates_jaccard)
{
    for (int fam = 0; fam < 3; fam++) {
        struct minhash mh;
        REQUIRE(minhash_init(&mh, 256, 1, (enum dd_mh_family)fam) == 0);
        uint64_t A[1000], B[1000];
        struct sl_rng r;
        sl_rng_seed(&r, 9, 0);
        for (int i = 0; i < 1000; i++)
            A[i] = B[i] = sl_rng_u64(&r);
        for (int i = 0; i < 250; i++)
            B[i] = sl_rng_u64(&r); /* J = 750 / 1250 = 0.6 */
        uint64_t sa[256], sb[256];
        minhash_sign(&mh, A, 1000, sa);
        minhash_sign(&mh, B, 1000, sb);
        int eq = 0;
        for (int i = 0; i < 256; i++)
            eq += sa[i] == sb[i];
        double est = eq / 256.0;
        CHECK(fabs(est - 0.6) < 0.1);
        /* identical sets, identical signatures; band keys match */
        minhash_sign(&mh, A, 1000, sb);
        uint64_t ka[16], kb[16];
        minhash_band_keys(sa, 16, 16, 1, ka);
        minhash_band_keys(sb, 16, 16, 1, kb);
        CHECK(memcmp(ka, kb, sizeof(ka)) == 0);
        /* disjoint sets share no band */
        minhash_sign(&mh, B, 250, sb);
        minhash_band_keys(sb, 16, 16, 1, kb);
        int same = 0;
        for (int i = 0; i < 16; i++)
            same += ka[i] == kb[i];
        CHECK_EQ_INT(same, 0);
        minhash_release(&mh);
    }
    CHECK(fabs(minhash_candidate_prob(0.8, 20, 13) - 0.6807) < 0.01);
}

TEST(dedup_lsh_pairs_anchors)
{
    /* one bucket with members 5 < 7 < 9 < 11, another with a single member */
    struct lsh_rec r[] = { { 42, 9, 0, 0 }, { 42, 5, 0, 0 }, { 43, 1, 0, 0 }, { 42, 11, 0, 0 },
                           { 42, 7, 0, 0 }, { 42, 7, 1, 0 } };
    lsh_sort(r, 6);
    struct dd_edge *e = NULL;
    size_t ne = 0, cap = 0;
    CHECK_EQ_INT(lsh_pairs(r, 6, 1, 0, &e, &ne, &cap), 3); /* star around 5 */
    CHECK(e[0].u == 5 && e[0].v == 7 && e[2].u == 5 && e[2].v == 11);
    ne = 0;
    CHECK_EQ_INT(lsh_pairs(r, 6, 100, 0, &e, &ne, &cap), 6); /* every pair */
    ne = 0;
    CHECK_EQ_INT(lsh_pairs(r, 6, 2, 0, &e, &ne, &cap), 5); /* 11 pairs with 5 and 7 only */
    ne = 0;
    CHECK_EQ_INT(lsh_pairs(r, 6, 100, 9, &e, &ne, &cap), 5); /* pairs of the new 9 and 11 */
    free(e);
}

TEST(dedup_unionfind_and_components_agree)
{
    struct sl_world w1 = { 0, 1, 0 };
    struct sl_rng r;
    sl_rng_seed(&r, 3, 0);
    for (int round = 0; round < 20; round++) {
        size_t nv = 50 + sl_rng_below(&r, 200), ne = sl_rng_below(&r, nv);
        struct dd_edge *e1 = malloc((ne + 1) * sizeof(*e1)), *e2 = malloc((ne + 1) * sizeof(*e2));
        struct unionfind uf;
        unionfind_init(&uf, nv);
        for (size_t i = 0; i < ne; i++) {
            uint64_t a = sl_rng_below(&r, nv), b = sl_rng_below(&r, nv);
            if (a == b)
                b = (a + 1) % nv;
            e1[i].u = a < b ? a : b;
            e1[i].v = a < b ? b : a;
            e2[i] = e1[i];
            unionfind_union(&uf, (uint32_t)a, (uint32_t)b);
        }
        for (int star = 0; star < 2; star++) {
            struct dd_edge *lab;
            size_t nl;
            unsigned rounds;
            REQUIRE(dd_components(&w1, star ? e2 : e1, ne, star, &lab, &nl, &rounds) == 0);
            for (size_t i = 0; i < nl; i++)
                CHECK_EQ_INT(lab[i].v, unionfind_find(&uf, (uint32_t)lab[i].u));
            free(lab);
        }
        unionfind_release(&uf);
    }
}

TEST(dedup_index_files_round_trip)
{
    const char *dir = sl_test_tmpdir();
    char path[512];
    snprintf(path, sizeof(path), "%s/bands-00000.sldx.zst", dir);
    struct dd_index_writer iw;
    REQUIRE(dd_index_writer_open(&iw, path, DD_INDEX_MAGIC_BANDS) == 0);
    struct lsh_rec r[3] = { { 1, 2, 0, 0 }, { 3, 4, 1, 0 }, { 5, 6, 2, 0 } };
    REQUIRE(dd_index_write_recs(&iw, r, 3) == 0);
    REQUIRE(dd_index_writer_commit(&iw) == 0);
    struct lsh_rec *back = NULL;
    size_t n = 0, cap = 0;
    REQUIRE(dd_index_read_recs(path, NULL, NULL, &back, &n, &cap) == 0);
    CHECK_EQ_INT(n, 3);
    CHECK(back[2].key == 5 && back[2].gid == 6 && back[2].band == 2);
    free(back);
    /* an ids file is not a bands file */
    snprintf(path, sizeof(path), "%s/ids.sldx.zst", dir);
    REQUIRE(dd_index_writer_open(&iw, path, DD_INDEX_MAGIC_IDS) == 0);
    REQUIRE(dd_index_write_id(&iw, 7, "\"x\"", 3) == 0);
    REQUIRE(dd_index_writer_commit(&iw) == 0);
    back = NULL;
    n = cap = 0;
    CHECK_EQ_INT(dd_index_read_recs(path, NULL, NULL, &back, &n, &cap), SL_ERR_FORMAT);
    CHECK_CONTAINS(sl_err_msg(), "not a sluice dedup index file");
    CHECK_EQ_INT(dd_index_write_meta(dir, "{\"a\":1}", 3, 2, "memory", NULL), 0);
    char *s = NULL, *be = NULL, *pre = NULL;
    uint64_t gen;
    int parts;
    REQUIRE(dd_index_read_meta(dir, &s, &gen, &parts, &be, &pre) == 0);
    CHECK_EQ_STR(s, "{\"a\":1}");
    CHECK_EQ_INT(gen, 3);
    CHECK_EQ_INT(parts, 2);
    CHECK(pre == NULL);
    free(s);
    free(be);
}

static int cmp_rec_ref(const void *pa, const void *pb)
{
    const struct lsh_rec *a = pa, *b = pb;
    if (a->band != b->band)
        return a->band < b->band ? -1 : 1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->gid < b->gid ? -1 : a->gid > b->gid;
}

TEST(dedup_lsh_sort_matches_qsort)
{
    struct sl_rng r;
    sl_rng_seed(&r, 77, 0);
    size_t sizes[] = { 0, 1, 5, 255, 256, 5000 };
    for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
        size_t n = sizes[t];
        struct lsh_rec *a = calloc(n + 1, sizeof(*a)), *b = calloc(n + 1, sizeof(*b));
        for (size_t i = 0; i < n; i++) {
            a[i].band = (uint32_t)sl_rng_below(&r, 20);
            a[i].key = sl_rng_below(&r, 4) ? sl_rng_u64(&r) : 12345; /* some shared buckets */
            a[i].gid = (1ull << 36) * sl_rng_below(&r, 3) + sl_rng_below(&r, 100000);
            b[i] = a[i];
        }
        lsh_sort(a, n);
        if (n > 1)
            qsort(b, n, sizeof(*b), cmp_rec_ref);
        CHECK(n == 0 || memcmp(a, b, n * sizeof(*a)) == 0);
        free(a);
        free(b);
    }
}
