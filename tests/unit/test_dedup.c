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
    for (int fam = 0; fam < 2; fam++) {
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
