/* Text normalisation before hashing: lowercase, punctuation, whitespace, digits and
 * diacritics, each switchable. Works on UTF-8 code points; invalid bytes are kept as they
 * are (they cannot change the comparison of two equal texts).
 *
 * Lowercasing covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic; diacritics are
 * removed from the precomposed Latin letters of those blocks and combining marks
 * (U+0300..U+036F) are dropped. Punctuation (ASCII, Latin-1, General Punctuation, CJK
 * symbols and fullwidth forms) becomes a space; digits become '0'; runs of whitespace
 * become one space, with none at either end.
 */
#ifndef SL_DEDUP_NORMALIZE_H
#define SL_DEDUP_NORMALIZE_H

#include <stddef.h>

struct sl_buf;

enum dd_norm_flag {
    DD_NORM_LOWER = 1u << 0,
    DD_NORM_PUNCT = 1u << 1,
    DD_NORM_SPACE = 1u << 2,
    DD_NORM_DIGITS = 1u << 3,
    DD_NORM_ACCENTS = 1u << 4,
    DD_NORM_ALL = 0x1f,
};

/* Parse "lower,punct,space,digits,accents", "all" or "none" into flags. 0 or SL_ERR_USAGE. */
int dd_norm_parse(const char *spec, unsigned *flags);
/* The canonical spelling of flags ("none" or a comma list); a static string per call site
 * is not needed: writes into out (at least 48 bytes). */
const char *dd_norm_name(unsigned flags, char *out, size_t n);

/* Append the normalised form of s[0..n) to out. 0 or SL_ERR_TOOBIG (out's cap). */
int dd_normalize(const char *s, size_t n, unsigned flags, struct sl_buf *out);

#endif
