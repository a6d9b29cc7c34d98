/* Tests for train/fp8.c against the formats' definitions: every value that an E4M3 or E5M2
 * code decodes to (sign, exponent field, mantissa, with the subnormals and the codes that
 * are not numbers) rounds to itself, a midpoint between two neighbours to the one whose code
 * is even and anything just off it to the nearer one, values past the largest saturate, NaN
 * stays NaN; the scales follow Transformer Engine's rules (max / amax / 2^margin, the
 * previous scale for an amax of 0 or not finite, delayed scaling over a history window). */
#include "tests/harness.h"

#include "train/fp8.h"

#include <math.h>
#include <string.h>

/* The value of code c (0..255) in format f from the definition, NaN for the codes of no
 * finite value (E4M3: S.1111.111; E5M2: exponent field 31). */
static float decode(int c, enum fp8_format f)
{
    int mant = f == FP8_E4M3 ? 3 : 2, bias = f == FP8_E4M3 ? 7 : 15;
    int ebits = 7 - mant, s = c >> 7, e = (c >> mant) & ((1 << ebits) - 1);
    int m = c & ((1 << mant) - 1);
    if (f == FP8_E4M3 && e == 15 && m == 7)
        return NAN;
    if (f == FP8_E5M2 && e == 31)
        return NAN;
    float v = e ? ldexpf(1.0f + (float)m / (float)(1 << mant), e - bias)
                : ldexpf((float)m / (float)(1 << mant), 1 - bias);
    return s ? -v : v;
}

static void check_format(enum fp8_format f, float want_max)
{
    /* the positive finite codes in increasing order are 0 .. last */
    int last = -1;
    for (int c = 0; c < 128; c++) {
        float v = decode(c, f);
        if (isnan(v))
            break;
        last = c;
        CHECK(fp8_round(v, f) == v);
        CHECK(fp8_round(-v, f) == -v);
    }
    CHECK(decode(last, f) == want_max);
    CHECK(fp8_max(f) == want_max);
    for (int c = 0; c < last; c++) {
        float a = decode(c, f), b = decode(c + 1, f), mid = (a + b) / 2;
        float even = c % 2 == 0 ? a : b;
        CHECK(fp8_round(mid, f) == even);
        CHECK(fp8_round(-mid, f) == -even);
        CHECK(fp8_round(nextafterf(mid, INFINITY), f) == b);
        CHECK(fp8_round(nextafterf(mid, -INFINITY), f) == a);
    }
    CHECK(fp8_round(want_max * 1.03f, f) == want_max);
    CHECK(fp8_round(-want_max * 7.0f, f) == -want_max);
    CHECK(fp8_round(INFINITY, f) == want_max);
    CHECK(fp8_round(-INFINITY, f) == -want_max);
    CHECK(isnan(fp8_round(NAN, f)));
    /* below half the smallest subnormal: zero, with its sign */
    float tiny = decode(1, f) / 2;
    CHECK(fp8_round(tiny, f) == 0.0f);
    CHECK(signbit(fp8_round(-tiny, f)));
}

TEST(fp8_formats_round_to_nearest_even_and_saturate)
{
    check_format(FP8_E4M3, 448.0f);
    check_format(FP8_E5M2, 57344.0f);
}

TEST(fp8_quantize_scales_then_rounds)
{
    float x[4] = { 1.0f, -3.0f, 0.1f, 1000.0f }, q[4];
    fp8_quantize(q, x, 4, 2.0f, FP8_E4M3);
    CHECK(q[0] == 2.0f);
    CHECK(q[1] == -6.0f);
    CHECK(q[2] == fp8_round(0.2f, FP8_E4M3));
    CHECK(q[3] == 448.0f);
    CHECK(fp8_amax(x, 4) == 1000.0f);
    x[2] = NAN;
    CHECK(isnan(fp8_amax(x, 4)));
}

TEST(fp8_scales_follow_transformer_engine)
{
    CHECK(fp8_scale_for(2.0f, FP8_E4M3, 0, 5.0f) == 224.0f);
    CHECK(fp8_scale_for(2.0f, FP8_E4M3, 1, 5.0f) == 112.0f);
    CHECK(fp8_scale_for(8.0f, FP8_E5M2, 2, 5.0f) == 57344.0f / 8 / 4);
    CHECK(fp8_scale_for(0.0f, FP8_E4M3, 0, 5.0f) == 5.0f);
    CHECK(fp8_scale_for(INFINITY, FP8_E4M3, 0, 5.0f) == 5.0f);
    CHECK(fp8_scale_for(NAN, FP8_E4M3, 0, 5.0f) == 5.0f);

    /* current scaling: each use from the tensor itself */
    struct fp8_scaling s;
    REQUIRE(fp8_scaling_init(&s, FP8_CURRENT, 1, 1024, 0) == 0);
    float x[2] = { 0.5f, -4.0f };
    CHECK(fp8_scaling_use(&s, 0, x, 2, FP8_E4M3) == 112.0f);
    CHECK(fp8_scaling_use(&s, 0, x, 2, FP8_E5M2) == 57344.0f / 4);
    fp8_scaling_release(&s);
}

static enum fp8_format all_e4m3(int i)
{
    (void)i;
    return FP8_E4M3;
}

TEST(fp8_delayed_scaling_uses_the_max_of_its_history)
{
    struct fp8_scaling s;
    REQUIRE(fp8_scaling_init(&s, FP8_DELAYED, 2, 3, 0) == 0);
    float a[1] = { 4.0f }, b[1] = { 1.0f }, c[1] = { 2.0f }, z[1] = { 0.0f };
    /* step 1: scale 1 (nothing seen); the step's amax is the max over its uses */
    CHECK(fp8_scaling_use(&s, 0, b, 1, FP8_E4M3) == 1.0f);
    CHECK(fp8_scaling_use(&s, 0, a, 1, FP8_E4M3) == 1.0f);
    CHECK(fp8_scaling_use(&s, 1, z, 1, FP8_E4M3) == 1.0f);
    fp8_scaling_step(&s, all_e4m3);
    CHECK(s.scale[0] == 448.0f / 4); /* history {4} */
    CHECK(s.scale[1] == 1.0f);       /* amax 0: kept */
    /* an evaluation's uses are not recorded */
    s.frozen = 1;
    CHECK(fp8_scaling_use(&s, 0, a, 1, FP8_E4M3) == 112.0f);
    s.frozen = 0;
    fp8_scaling_use(&s, 0, b, 1, FP8_E4M3);
    fp8_scaling_step(&s, all_e4m3);
    CHECK(s.scale[0] == 448.0f / 4); /* {4, 1} */
    fp8_scaling_use(&s, 0, c, 1, FP8_E4M3);
    fp8_scaling_step(&s, all_e4m3);
    CHECK(s.scale[0] == 448.0f / 4); /* {4, 1, 2} */
    fp8_scaling_use(&s, 0, b, 1, FP8_E4M3);
    fp8_scaling_step(&s, all_e4m3);
    CHECK(s.scale[0] == 448.0f / 2); /* {1, 2, 1}: the 4 left the window of 3 */
    fp8_scaling_use(&s, 0, b, 1, FP8_E4M3);
    fp8_scaling_step(&s, all_e4m3);
    fp8_scaling_use(&s, 0, b, 1, FP8_E4M3);
    fp8_scaling_step(&s, all_e4m3);
    CHECK(s.scale[0] == 448.0f); /* {1, 1, 1} */
    fp8_scaling_release(&s);
}
