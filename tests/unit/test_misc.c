/* Tests for core/counters, hash, rng, inputs and the single-rank world. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/counters.h"
#include "core/err.h"
#include "core/hash.h"
#include "core/inputs.h"
#include "core/rng.h"
#include "core/world.h"
#include "core/xxh3_avx2.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <xxhash.h>

TEST(counters_merge_and_text)
{
    struct sl_counters a, b;
    sl_counters_init(&a);
    sl_counters_init(&b);
    sl_counters_add(&a, "docs", 3);
    sl_counters_max(&a, "line_max", 10);
    sl_counters_add(&b, "docs", 4);
    sl_counters_max(&b, "line_max", 7);
    sl_counters_add(&b, "skipped", 1);
    sl_counters_merge(&a, &b);
    CHECK_EQ_INT(sl_counters_get(&a, "docs"), 7);
    CHECK_EQ_INT(sl_counters_get(&a, "line_max"), 10);
    CHECK_EQ_INT(sl_counters_get(&a, "skipped"), 1);
    struct sl_buf t = SL_BUF_INIT;
    sl_counters_serialize(&a, &t);
    struct sl_counters c;
    sl_counters_init(&c);
    CHECK_EQ_INT(sl_counters_parse(&c, t.data, t.len), 0);
    CHECK_EQ_INT(sl_counters_get(&c, "docs"), 7);
    sl_buf_release(&t);
    sl_counters_release(&a);
    sl_counters_release(&b);
    sl_counters_release(&c);
}

TEST(hash_known_values)
{
    /* XXH3-64 of the empty input with seed 0 (reference value from xxHash) */
    CHECK(sl_hash64("", 0, 0) == 0x2D06800538D394C2ull);
    struct sl_hash128 a = sl_hash128("abc", 3, 0), b = sl_hash128("abd", 3, 0);
    CHECK(a.lo != b.lo || a.hi != b.hi);
    char hex[33];
    sl_hash128_hex(a, hex);
    CHECK_EQ_INT(strlen(hex), 32);
    struct sl_hasher h;
    sl_hasher_init(&h, 0);
    sl_hasher_update(&h, "abc", 3);
    CHECK(sl_hasher_final(&h) == sl_hash64("abc", 3, 0));
}

/* sl_hash64 and sl_hasher (the AVX2 build of XXH3-64 where the CPU has it) equal the system
 * library's XXH3-64 on every length up to 2 KiB (the short, middle and long paths and the
 * stripe and block edges), on 1 MiB, with seeds, and streamed in uneven pieces. */
TEST(hash_equals_library)
{
    size_t big = 1 << 20;
    unsigned char *d = malloc(big);
    REQUIRE(d);
    struct sl_rng r;
    sl_rng_seed(&r, 77, 0);
    for (size_t i = 0; i < big; i++)
        d[i] = (unsigned char)sl_rng_u64(&r);
    size_t bad = 0;
    for (size_t n = 0; n <= 2048; n++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            const unsigned char *p = d + (n * 7) % 64; /* unaligned starts too */
            bad += sl_hash64(p, n, seed * 0x9E3779B97F4A7C15ull) !=
                   XXH3_64bits_withSeed(p, n, seed * 0x9E3779B97F4A7C15ull);
        }
    CHECK_EQ_INT(bad, 0);
    CHECK(sl_hash64(d, big, 5) == XXH3_64bits_withSeed(d, big, 5));
    for (size_t piece = 1; piece < 100000; piece = piece * 3 + 1) {
        struct sl_hasher h;
        sl_hasher_init(&h, 11);
        for (size_t at = 0; at < big;) {
            size_t n = big - at < piece ? big - at : piece;
            sl_hasher_update(&h, d + at, n);
            at += n;
        }
        CHECK(sl_hasher_final(&h) == XXH3_64bits_withSeed(d, big, 11));
    }
#if SL_XXH3_AVX2
    if (__builtin_cpu_supports("avx2")) {
        CHECK(sl_xxh3_avx2(d, big, 5) == XXH3_64bits_withSeed(d, big, 5));
        void *st = sl_xxh3_avx2_new(3);
        sl_xxh3_avx2_update(st, d, 1000);
        sl_xxh3_avx2_update(st, d + 1000, big - 1000);
        CHECK(sl_xxh3_avx2_final(st) == XXH3_64bits_withSeed(d, big, 3));
    }
#endif
    free(d);
}

TEST(rng_deterministic_and_uniform)
{
    struct sl_rng a, b, c;
    sl_rng_seed(&a, 1234, 0);
    sl_rng_seed(&b, 1234, 0);
    sl_rng_seed(&c, 1234, 1);
    int same = 1, diff = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = sl_rng_u64(&a), y = sl_rng_u64(&b), z = sl_rng_u64(&c);
        same &= x == y;
        diff += x != z;
    }
    CHECK(same);
    CHECK(diff > 95);
    long hist[10] = { 0 };
    double sum = 0, sq = 0;
    for (int i = 0; i < 100000; i++) {
        hist[sl_rng_below(&a, 10)]++;
        double n = sl_rng_normal(&a);
        sum += n;
        sq += n * n;
    }
    for (int i = 0; i < 10; i++)
        CHECK(hist[i] > 9500 && hist[i] < 10500);
    CHECK(sum / 100000 > -0.02 && sum / 100000 < 0.02);
    CHECK(sq / 100000 > 0.97 && sq / 100000 < 1.03);
    int v[50];
    for (int i = 0; i < 50; i++)
        v[i] = i;
    sl_rng_shuffle(&a, v, 50, sizeof(int));
    int total = 0, moved = 0;
    for (int i = 0; i < 50; i++) {
        total += v[i];
        moved += v[i] != i;
    }
    CHECK_EQ_INT(total, 1225);
    CHECK(moved > 30);
}

TEST(assign_by_size_balances)
{
    uint64_t sizes[] = { 100, 90, 50, 40, 30, 20, 10, 10 };
    int owner[8];
    sl_assign_by_size(sizes, 8, 3, owner);
    uint64_t load[3] = { 0 };
    for (int i = 0; i < 8; i++)
        load[owner[i]] += sizes[i];
    /* LPT: 100|90+10|50+40+... the max load is within the largest item of the mean */
    uint64_t mx = load[0] > load[1] ? load[0] : load[1];
    mx = mx > load[2] ? mx : load[2];
    CHECK(mx <= 350 / 3 + 100);
    CHECK_EQ_INT(owner[0], 0);
    CHECK_EQ_INT(owner[1], 1);
    int owner1[8];
    sl_assign_by_size(sizes, 8, 1, owner1);
    for (int i = 0; i < 8; i++)
        CHECK_EQ_INT(owner1[i], 0);
}

TEST(inputs_expand)
{
    const char *dir = sl_test_tmpdir();
    char p[600];
    snprintf(p, sizeof(p), "%s/in", dir);
    mkdir(p, 0777);
    snprintf(p, sizeof(p), "%s/in/sub", dir);
    mkdir(p, 0777);
    sl_test_write("in/b.jsonl", "x", 1);
    sl_test_write("in/a.jsonl.zst", "xy", 2);
    sl_test_write("in/sub/c.json.gz", "xyz", 3);
    sl_test_write("in/notes.txt", "n", 1);
    sl_test_write("in/.hidden.jsonl", "h", 1);
    snprintf(p, sizeof(p), "%s/in", dir);
    const char *ops[] = { p };
    struct sl_inputs in;
    REQUIRE(sl_inputs_expand(&in, ops, 1, sl_jsonl_exts) == 0);
    REQUIRE(in.n == 3);
    CHECK_EQ_STR(in.v[0].rel, "a.jsonl.zst");
    CHECK_EQ_STR(in.v[1].rel, "b.jsonl");
    CHECK_EQ_STR(in.v[2].rel, "sub/c.json.gz");
    CHECK_EQ_INT(sl_inputs_total_size(&in), 6);
    sl_inputs_release(&in);

    snprintf(p, sizeof(p), "%s/empty", dir);
    mkdir(p, 0777);
    const char *ops2[] = { p };
    CHECK_EQ_INT(sl_inputs_expand(&in, ops2, 1, sl_jsonl_exts), SL_ERR_NOTFOUND);
    CHECK_CONTAINS(sl_err_msg(), "has no input files");
    const char *ops3[] = { "/nonexistent/input.jsonl" };
    CHECK_EQ_INT(sl_inputs_expand(&in, ops3, 1, sl_jsonl_exts), SL_ERR_NOTFOUND);
    CHECK_CONTAINS(sl_err_msg(), "/nonexistent/input.jsonl");
}

TEST(world_single_rank)
{
    struct sl_world w = { 0, 1, 0 };
    uint64_t v[2] = { 3, 4 };
    CHECK_EQ_INT(sl_world_allreduce_u64(&w, v, 2, SL_SUM), 0);
    CHECK_EQ_INT(v[1], 4);
    struct sl_buf all = SL_BUF_INIT;
    uint64_t counts[1];
    CHECK_EQ_INT(sl_world_allgather_bytes(&w, "abc", 3, &all, counts), 0);
    CHECK_EQ_STR(all.data, "abc");
    CHECK_EQ_INT(counts[0], 3);
    sl_buf_release(&all);
}
