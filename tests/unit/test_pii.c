/* curate/filter/pii.c: precision and recall of the pii scanners on the labelled sample in
 * tests/fixtures/pii/labelled.txt (personal data marked {{kind|value}}, look-alikes left
 * unmarked), placeholders, counts and config errors. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "curate/filter/chain.h"
#include "curate/filter/pii.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct sl_filter_chain *load(const char *yaml)
{
    struct sl_filter_chain *c = NULL;
    sl_filter_chain_load_string(&c, yaml, strlen(yaml), "t.yaml");
    return c;
}

struct gold {
    size_t off, len;
    int kind;
};

static int kind_of(const char *s, size_t n)
{
    for (int k = 0; sl_pii_kind_name(k); k++)
        if (strlen(sl_pii_kind_name(k)) == n && !memcmp(sl_pii_kind_name(k), s, n))
            return k;
    return -1;
}

/* Strip the {{kind|value}} marks of one line into text, recording the spans. */
static size_t parse_line(const char *s, size_t n, struct sl_buf *text, struct gold *g, size_t cap)
{
    size_t ng = 0;
    sl_buf_reset(text);
    for (size_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == '{' && s[i + 1] == '{') {
            const char *bar = memchr(s + i, '|', n - i);
            const char *close = bar ? strstr(bar, "}}") : NULL;
            REQUIRE(bar && close && close < s + n);
            int k = kind_of(s + i + 2, (size_t)(bar - s - i - 2));
            REQUIRE(k >= 0);
            REQUIRE(ng < cap);
            g[ng].off = text->len;
            g[ng].len = (size_t)(close - bar - 1);
            g[ng].kind = k;
            ng++;
            sl_buf_append(text, bar + 1, (size_t)(close - bar - 1));
            i = (size_t)(close - s) + 2;
        } else
            sl_buf_putc(text, s[i++]);
    }
    return ng;
}

TEST(pii_precision_recall_labelled)
{
    struct sl_filter_chain *c = load("filters:\n  - pii\n");
    REQUIRE(c);
    struct sl_buf file = SL_BUF_INIT, text = SL_BUF_INIT;
    REQUIRE(sl_read_file(sl_test_fixture("pii/labelled.txt"), &file) == 0);
    size_t tp[6] = { 0 }, fp[6] = { 0 }, fn[6] = { 0 }, lines = 0, golds = 0;
    const char *p = file.data, *end = file.data + file.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n && p[0] != '#') {
            struct gold g[16];
            size_t ng = parse_line(p, n, &text, g, 16);
            const struct sl_pii_match *m;
            size_t nm = sl_pii_scan(&c->f[0], text.data, text.len, &m);
            int *hit = calloc(ng + 1, sizeof(int));
            for (size_t i = 0; i < nm; i++) {
                size_t j = 0;
                while (j < ng &&
                       !(g[j].off == m[i].off && g[j].len == m[i].len && g[j].kind == m[i].kind))
                    j++;
                if (j < ng) {
                    tp[m[i].kind]++;
                    hit[j] = 1;
                } else {
                    fp[m[i].kind]++;
                    printf("  false positive %s '%.*s' in: %.*s\n", sl_pii_kind_name(m[i].kind),
                           (int)m[i].len, text.data + m[i].off, (int)text.len, text.data);
                }
            }
            for (size_t j = 0; j < ng; j++)
                if (!hit[j]) {
                    fn[g[j].kind]++;
                    printf("  missed %s '%.*s'\n", sl_pii_kind_name(g[j].kind), (int)g[j].len,
                           text.data + g[j].off);
                }
            free(hit);
            lines++;
            golds += ng;
        }
        p += n + 1;
    }
    size_t TP = 0, FP = 0, FN = 0;
    for (int k = 0; k < 6; k++) {
        printf("  %-6s tp %zu fp %zu fn %zu\n", sl_pii_kind_name(k), tp[k], fp[k], fn[k]);
        TP += tp[k];
        FP += fp[k];
        FN += fn[k];
        CHECK(tp[k] > 0); /* every kind is found on the sample */
    }
    double prec = (double)TP / (double)(TP + FP), rec = (double)TP / (double)(TP + FN);
    printf("  %zu lines, %zu labelled spans: precision %.3f recall %.3f\n", lines, golds, prec,
           rec);
    CHECK(lines >= 60 && golds >= 50);
    CHECK(prec >= 0.95);
    CHECK(rec >= 0.95);
    sl_buf_release(&file);
    sl_buf_release(&text);
    sl_filter_chain_free(c);
}

TEST(pii_placeholders_and_kinds)
{
    struct sl_filter_chain *c = load("filters:\n  - pii:\n      kinds: [email, ssn]\n"
                                     "      placeholders: {email: '[mail]'}\n");
    REQUIRE(c);
    const char *t = "a x@example.com b 123-45-6789 c 8.8.8.8";
    struct sl_fctx ctx;
    sl_fctx_init(&ctx, &c->env);
    sl_fctx_begin(&ctx, NULL, t, strlen(t), NULL);
    struct sl_filter_result res[1];
    CHECK(sl_filter_chain_run(c, &ctx, 1, res) == -1);
    CHECK_EQ_MEM(ctx.text, ctx.len, "a [mail] b <US_SSN> c 8.8.8.8",
                 strlen("a [mail] b <US_SSN> c 8.8.8.8"));
    REQUIRE(res[0].ncounts == 6);
    CHECK(res[0].counts[0].n == 1 && !strcmp(res[0].counts[0].name, "email"));
    CHECK(res[0].counts[1].n == 0); /* ip not asked for */
    CHECK(res[0].counts[4].n == 1);
    REQUIRE(res[0].spans_json);
    CHECK_EQ_MEM(res[0].spans_json, res[0].spans_len,
                 "[[\"email\",2,15,\"x@example.com\"],[\"ssn\",18,29,\"123-45-6789\"]]",
                 strlen("[[\"email\",2,15,\"x@example.com\"],[\"ssn\",18,29,\"123-45-6789\"]]"));
    sl_fctx_release(&ctx);
    sl_filter_chain_free(c);

    /* public_ips_only keeps private addresses, as datatrove's default */
    c = load("filters:\n  - pii:\n      public_ips_only: true\n");
    REQUIRE(c);
    const struct sl_pii_match *m;
    const char *t2 = "10.1.2.3 8.8.4.4 192.168.0.1 100.64.1.1";
    CHECK(sl_pii_scan(&c->f[0], t2, strlen(t2), &m) == 1);
    sl_filter_chain_free(c);

    CHECK(!load("filters:\n  - pii:\n      kinds: [email, passport]\n"));
    CHECK_CONTAINS(sl_err_msg(), "unknown kind 'passport'");
    CHECK(!load("filters:\n  - pii:\n      placeholders: {emial: x}\n"));
    CHECK_CONTAINS(sl_err_msg(), "emial");
}

TEST(pii_linear_on_adversarial_input)
{
    /* long runs that a backtracking pattern would revisit: each is read a bounded number
     * of bytes per start, so these finish at once (no timing assertion: a hang fails) */
    struct sl_filter_chain *c = load("filters:\n  - pii\n");
    REQUIRE(c);
    size_t n = 1 << 20;
    char *s = malloc(n);
    const char *pat[] = { "a.", "1 ", "1.", "a@", "::", "1-", "(1) ", "DE89 " };
    for (size_t k = 0; k < sizeof(pat) / sizeof(pat[0]); k++) {
        size_t pl = strlen(pat[k]);
        for (size_t i = 0; i < n; i++)
            s[i] = pat[k][i % pl];
        const struct sl_pii_match *m;
        CHECK(sl_pii_scan(&c->f[0], s, n, &m) == 0);
    }
    free(s);
    sl_filter_chain_free(c);
}
