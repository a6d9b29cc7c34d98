/* A small unit-test harness: TEST(name) registers a test; CHECK* record failures and go
 * on; REQUIRE* stop the test. The runner prints failures and "N passed, N failed".
 * Run one test or a group: test_unit NAME-PREFIX. */
#ifndef SL_TEST_HARNESS_H
#define SL_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct sl_test {
    const char *name;
    void (*fn)(void);
    const char *file;
    struct sl_test *next;
};

void sl_test_register(struct sl_test *t);
void sl_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Abort the current test (after a failed REQUIRE). */
void sl_test_stop(void) __attribute__((noreturn));

/* A fresh temporary directory for this test (removed after it passes). */
const char *sl_test_tmpdir(void);
/* Path of a fixture file under tests/fixtures. */
const char *sl_test_fixture(const char *rel);
/* Write a file (for building inputs); returns its path in the test's tmpdir. */
const char *sl_test_write(const char *name, const void *data, size_t n);

#define TEST(name)                                                                         \
    static void test_##name(void);                                                         \
    static struct sl_test test_rec_##name = { #name, test_##name, __FILE__, NULL };        \
    __attribute__((constructor)) static void test_reg_##name(void)                         \
    {                                                                                      \
        sl_test_register(&test_rec_##name);                                                \
    }                                                                                      \
    static void test_##name(void)

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond))                                                                       \
            sl_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                          \
    } while (0)

#define REQUIRE(cond)                                                                      \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            sl_test_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond);                        \
            sl_test_stop();                                                                \
        }                                                                                  \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                 \
    do {                                                                                   \
        long long a_ = (long long)(a), b_ = (long long)(b);                                \
        if (a_ != b_)                                                                      \
            sl_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);    \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                 \
    do {                                                                                   \
        const char *a_ = (a), *b_ = (b);                                                   \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                             \
            sl_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,          \
                         a_ ? a_ : "(null)", b_ ? b_ : "(null)");                          \
    } while (0)

#define CHECK_EQ_MEM(a, alen, b, blen)                                                     \
    do {                                                                                   \
        size_t al_ = (alen), bl_ = (blen);                                                 \
        if (al_ != bl_ || memcmp((a), (b), al_) != 0)                                      \
            sl_test_fail(__FILE__, __LINE__, "%s == %s (lengths %zu, %zu)", #a, #b, al_,   \
                         bl_);                                                             \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                        \
    do {                                                                                   \
        const char *h_ = (hay), *n_ = (needle);                                            \
        if (!h_ || !strstr(h_, n_))                                                        \
            sl_test_fail(__FILE__, __LINE__, "\"%s\" should contain \"%s\"",               \
                         h_ ? h_ : "(null)", n_);                                          \
    } while (0)

#endif
