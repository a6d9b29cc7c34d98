/* struct charset_conv: find the character encoding of a web page and convert it to UTF-8.
 *
 * The order follows browsers: a byte-order mark, then the charset the HTTP header names,
 * then a <meta charset> / <meta http-equiv="Content-Type"> in the first 4 KiB, then
 * detection (valid UTF-8; else the legacy CJK encodings that decode cleanly; else
 * windows-1252). Labels are mapped as the WHATWG Encoding Standard does (latin1 and ascii
 * mean windows-1252, gb2312 and gbk mean gb18030, ...). Conversion uses iconv; bytes
 * that are invalid in the chosen encoding become U+FFFD, so the output is always valid
 * UTF-8. iconv descriptors are cached per object (not thread-safe; one per thread).
 */
#ifndef SL_EXTRACT_CHARSET_H
#define SL_EXTRACT_CHARSET_H

#include <stddef.h>

struct sl_buf;

enum charset_source { CHARSET_BOM, CHARSET_HTTP, CHARSET_META, CHARSET_DETECTED };

#define CHARSET_CACHE 8

struct charset_conv {
    struct {
        char name[32];
        void *cd; /* iconv_t */
    } cache[CHARSET_CACHE];
    unsigned next;
};

void charset_conv_init(struct charset_conv *c);
void charset_conv_release(struct charset_conv *c);

/* The canonical (WHATWG) name for a label, lowercased ("utf-8", "windows-1252",
 * "gb18030", "shift_jis", ...), or NULL when the label is unknown. */
const char *charset_canonical(const char *label, size_t n);

/* The charset declared in a <meta> tag within the first 4 KiB of html, canonical, or
 * NULL. */
const char *charset_from_meta(const char *html, size_t n);

/* Guess the encoding of bytes without a declaration (canonical name, never NULL). */
const char *charset_detect(struct charset_conv *c, const char *p, size_t n);

/* Choose the encoding for a page: BOM, then `http_charset` (may be NULL or ""), then
 * <meta>, then detection. *src receives where the answer came from (may be NULL). */
const char *charset_choose(struct charset_conv *c, const char *p, size_t n,
                           const char *http_charset, enum charset_source *src);

/* Append p converted from `charset` (canonical or any label) to UTF-8 into out (cap:
 * out->max). A BOM is dropped. Invalid bytes become U+FFFD (*replaced counts them; may
 * be NULL). Returns 0, SL_ERR_TOOBIG, or SL_ERR_UNSUPPORTED when iconv lacks the charset
 * (then nothing is appended). */
int charset_to_utf8(struct charset_conv *c, const char *charset, const char *p, size_t n,
                    struct sl_buf *out, size_t *replaced);

#endif
