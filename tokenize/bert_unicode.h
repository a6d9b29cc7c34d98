/* What Python's `unicodedata` and `str` say about a code point, as BERT's BasicTokenizer
 * asks it (tokenize/bert.h): one byte of flags from a two-stage table, the lower case, the
 * canonical decomposition and combining class. The data is generated from one Python
 * (tokenize/gen/bert_unicode_gen.py -> tokenize/bert_unicode_table.h; its version is
 * bert_unicode_version()): characters assigned by later Unicode versions are unassigned
 * here, as they are to that Python. */
#ifndef SL_TOKENIZE_BERT_UNICODE_H
#define SL_TOKENIZE_BERT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum {
    BU_DROP = 1,   /* _clean_text removes it: U+0000, U+FFFD, Cc and Cf but \t \n \r */
    BU_SPACE = 2,  /* ends a word: space, \t \n \r, Zs, U+2028, U+2029 */
    BU_PUNCT = 4,  /* _is_punctuation: ASCII non-alphanumerics, P* */
    BU_MN = 8,     /* category Mn */
    BU_CASED = 16, /* Cased (meaningful when not BU_IGN) */
    BU_IGN = 32,   /* Case_Ignorable */
    BU_LOWER = 64, /* str.lower() changes it */
    BU_NFD = 128,  /* NFD changes it, or its combining class is not 0 */
};

extern const uint8_t bert_stage1[0x110000 >> 8];
extern const uint8_t bert_stage2[][256];

/* The BU_* flags of cp (0 above U+10FFFF). */
static inline unsigned bert_uflags(uint32_t cp)
{
    return cp > 0x10FFFF ? 0 : bert_stage2[bert_stage1[cp >> 8]][cp & 255];
}

/* A CJK ideograph (BERT's _is_chinese_char: the CJK Unified Ideographs blocks and
 * extensions A-F, the compatibility ideographs). */
static inline int bert_is_cjk(uint32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* The lower case of a BU_LOWER code point other than U+0130 (whose str.lower() is two
 * code points, "i" U+0307) and U+03A3 (whose lower case depends on its neighbours). */
uint32_t bert_lower(uint32_t cp);
/* str.isspace(): what str.strip() removes. */
int bert_py_isspace(uint32_t cp);
/* The canonical decomposition of a BU_NFD code point (Hangul syllables included) into
 * out[0..4): its length; 0 when cp has none (only a combining class). */
size_t bert_decompose(uint32_t cp, uint32_t out[4]);
/* The canonical combining class of a BU_NFD code point (0 for the others). */
unsigned bert_ccc(uint32_t cp);
/* The Unicode and Python versions the tables were made from ("14.0.0", "3.11.7"). */
const char *bert_unicode_version(void);
const char *bert_python_version(void);

#endif
