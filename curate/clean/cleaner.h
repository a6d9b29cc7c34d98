/* sl_clean_text: ftfy-style repair of one text. In order (ftfy's): terminal escape
 * sequences removed; control characters (but \t \n \r and C1) and U+FEFF removed;
 * mojibake (UTF-8 that was decoded as Windows-1252 / Latin-1, C1 controls included: "Ã" +
 * U+0081 is "Á") re-decoded where the result is valid UTF-8 (a run of non-ASCII
 * characters only, repeated for double mojibake); C1 controls then read as the
 * Windows-1252 characters they stand for, the 5 undefined ones removed (kept with
 * no_mojibake, so the text is not destroyed); HTML entities left from extraction
 * unescaped (not when the text still has tags); NFC (or NFKC); \r\n and \r to \n; spaces
 * at line ends dropped; 3+ newlines to 2; optionally URLs removed and quotes uncurled.
 * Every change is counted. Invalid UTF-8 in the input becomes U+FFFD. */
#ifndef SL_CLEAN_CLEANER_H
#define SL_CLEAN_CLEANER_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

struct sl_clean_opts {
    int nfkc;          /* NFKC instead of NFC */
    int remove_urls;   /* https?://\S+ and www.\S+ removed */
    int uncurl_quotes; /* ‘ ’ ‚ ‛ -> ' and “ ” „ ‟ -> " */
    int no_mojibake, no_entities, no_normalize, no_whitespace;
};

struct sl_clean_counts {
    uint64_t mojibake, html_entities, c1_controls, control_chars, terminal_escapes,
        invalid_utf8, normalized, crlf, trailing_spaces, newlines_collapsed, urls_removed,
        quotes_uncurled;
};

/* Clean s[0..n) into out (replacing its contents). 0 or SL_ERR_TOOBIG (out's cap). */
int sl_clean_text(const struct sl_clean_opts *o, const char *s, size_t n, struct sl_buf *out,
                  struct sl_clean_counts *c);

#endif
