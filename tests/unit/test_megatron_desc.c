/* Tests for core/md5 and the pieces of dataset/megatron_desc that the golden descriptions
 * of tests/cli/t_megatron_cache.sh exercise only in part: Python's float repr, the
 * tokenizer specs, bad split strings. */
#include "tests/harness.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/md5.h"
#include "dataset/megatron_desc.h"

#include <stdlib.h>
#include <string.h>

TEST(md5_rfc1321_vectors)
{
    /* the test suite of RFC 1321, appendix A.5 */
    static const char *const v[][2] = {
        { "", "d41d8cd98f00b204e9800998ecf8427e" },
        { "a", "0cc175b9c0f1b6a831c399e269772661" },
        { "abc", "900150983cd24fb0d6963f7d28e17f72" },
        { "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
        { "abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b" },
        { "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
          "d174ab98d277d9f5a5611c2c9f419d9f" },
        { "1234567890123456789012345678901234567890123456789012345678901234567890123456789"
          "0",
          "57edf4a22be3c955ac49da2e2107b67a" },
    };
    char hex[33];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        sl_md5_hex(v[i][0], strlen(v[i][0]), hex);
        CHECK_EQ_STR(hex, v[i][1]);
    }
}

TEST(python_float_repr)
{
    /* what Python 3's repr() prints for each value */
    static const struct {
        double v;
        const char *repr;
    } c[] = {
        { 0.1 + 0.2, "0.30000000000000004" }, { 1e-05, "1e-05" },      { 1e16, "1e+16" },
        { 1e15, "1000000000000000.0" },        { 0.969, "0.969" },      { 1.0, "1.0" },
        { 5e-324, "5e-324" },                  { 1.7976931348623157e308, "1.7976931348623157e+308" },
        { 0.0001, "0.0001" },                  { 2.5, "2.5" },          { -0.0, "-0.0" },
    };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        struct sl_buf b = SL_BUF_INIT;
        mdesc_py_float(&b, c[i].v);
        CHECK_EQ_STR(b.data, c[i].repr);
        sl_buf_release(&b);
    }
}

TEST(megatron_tokenizer_specs)
{
    char *j = NULL;
    REQUIRE(mdesc_tokenizer("NullTokenizer:050", &j) == 0);
    CHECK_CONTAINS(j, "\"vocab_size\": \"50\""); /* Megatron str()s the int */
    free(j);
    REQUIRE(mdesc_tokenizer("legacy:GPT2BPETokenizer:v.json,m.txt", &j) == 0);
    CHECK_CONTAINS(j, "[\"v.json\", \"m.txt\"]");
    free(j);
    CHECK_EQ_INT(mdesc_tokenizer("GPT2BPETokenizer:only-one", &j), SL_ERR_CONFIG);
    CHECK_CONTAINS(sl_err_msg(), "GPT2BPETokenizer:VOCAB_FILE,MERGE_FILE");
    CHECK_EQ_INT(mdesc_tokenizer("NullTokenizer:x", &j), SL_ERR_CONFIG);
    CHECK_EQ_INT(mdesc_tokenizer("{not json", &j), SL_ERR_CONFIG);
    double b[3][2];
    int present[3];
    CHECK_EQ_INT(mdesc_split_matrix("1,2,3,4", b, present), SL_ERR_CONFIG);
    CHECK_EQ_INT(mdesc_split_matrix("0,0", b, present), SL_ERR_CONFIG);
    REQUIRE(mdesc_split_matrix("0,1", b, present) == 0);
    CHECK(!present[0] && present[1] && !present[2] && b[1][0] == 0.0 && b[1][1] == 1.0);
}
