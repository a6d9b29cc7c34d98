/* The character classes of NLTK's Punkt as NLTK 3.10.4 sees them: its regular expressions
 * run on the `regex` module (\s, \w, \d of that module's Unicode tables), the rest on
 * Python's str methods (isspace, isupper, islower, lower). One byte of flags per code point
 * from a generated two-stage table (tokenize/punkt_uni_table.h, written by
 * tokenize/gen/punkt_uni_gen.py from those very modules; its source is PUNKT_UNI_SOURCE).
 *
 * Text is UTF-8. A byte that does not start a valid sequence is one character of its own,
 * with no flags (not a space, not a word character) and no lower case: it is copied as
 * is. sluice's JSONL reader repairs invalid UTF-8 first, so texts from documents never
 * hold one; the rule only keeps any byte string safe to split. */
#ifndef SL_TOKENIZE_PUNKT_UNI_H
#define SL_TOKENIZE_PUNKT_UNI_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

enum {
    PK_RS = 1,     /* regex \s */
    PK_RW = 2,     /* regex \w */
    PK_RD = 4,     /* regex \d */
    PK_PS = 8,     /* str.isspace() (strip, rstrip) */
    PK_UP = 16,    /* str.isupper() */
    PK_LO = 32,    /* str.islower() */
    PK_CASED = 64, /* cased and not case-ignorable (Final_Sigma) */
    PK_CI = 128,   /* case-ignorable (Final_Sigma) */
};

/* An invalid byte's "code point": no flags, never equal to a character. */
#define PUNKT_UNI_INVALID 0x110000u

extern const unsigned char punkt_uni_stage1[0x110000 >> 8];
extern const unsigned char punkt_uni_stage2[][256];

/* The flags of code point cp (0 for PUNKT_UNI_INVALID). */
static inline unsigned punkt_uni_class(uint32_t cp)
{
    return cp > 0x10FFFF ? 0 : punkt_uni_stage2[punkt_uni_stage1[cp >> 8]][cp & 255];
}

/* The character at s (n >= 1 bytes): its code point in *cp, its length in bytes. */
size_t punkt_uni_next_slow(const char *s, size_t n, uint32_t *cp);
static inline size_t punkt_uni_next(const char *s, size_t n, uint32_t *cp)
{
    if ((unsigned char)s[0] < 0x80) {
        *cp = (unsigned char)s[0];
        return 1;
    }
    return punkt_uni_next_slow(s, n, cp);
}

/* The flags of the character at s (n >= 1 bytes); its length in *len. */
static inline unsigned punkt_uni_at(const char *s, size_t n, size_t *len)
{
    uint32_t cp;
    *len = punkt_uni_next(s, n, &cp);
    return punkt_uni_class(cp);
}

/* Start of the character that ends at s + n (n >= 1): the last lead byte, or the last
 * byte when that is not part of a valid sequence. */
size_t punkt_uni_prev(const char *s, size_t n);

/* Number of characters in s[0..n). */
size_t punkt_uni_count(const char *s, size_t n);

/* Append s[0..n) in lower case to out, as Python's str.lower() on that string: the full
 * mappings (U+0130 -> "i\u0307") and Final_Sigma (U+03A3 -> U+03C2 after a cased letter
 * and not before one, case-ignorable characters between skipped). */
void punkt_uni_lower(const char *s, size_t n, struct sl_buf *out);

/* What the table was generated from ("Python 3.11.7 (Unicode 14.0.0), regex 2026.12.2"). */
const char *punkt_uni_source(void);

#endif
