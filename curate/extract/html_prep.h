/* Preparing raw HTML bytes for the parser: pick the charset (caller's hint, byte order
 * mark, <meta> in the first 4 KiB, else UTF-8), convert to valid UTF-8 (invalid or
 * unmappable bytes become U+FFFD, never an error), and strip what never holds main text
 * and costs most of the parse time (comments, scripts, styles, svg, attributes),
 * turning class/id/role hints into one short attribute.
 *
 * The result is always valid UTF-8 with the same markup otherwise, so the HTML parser
 * can be told "UTF-8, ignore declared encodings".
 */
#ifndef SL_HTML_PREP_H
#define SL_HTML_PREP_H

#include <stddef.h>

struct sl_buf;

/* Canonical charset name (lowercase, WHATWG labels folded: "latin1", "iso-8859-1" and
 * "ascii" are windows-1252, "utf8" is utf-8, ...) for a label of n bytes, written into
 * out (size >= 32). Returns 0, or -1 when the label is empty or too long. */
int html_charset_canon(const char *label, size_t n, char out[32]);

/* Find the charset a page declares: BOM first, then <meta charset> or <meta http-equiv
 * content="...; charset=..."> within the first 4 KiB. Writes a canonical name into out
 * and returns 1, or returns 0 when nothing is declared. *bom_len gets the BOM length. */
int html_charset_sniff(const char *html, size_t len, char out[32], size_t *bom_len);

/* Convert len bytes in `charset` (canonical or any label iconv knows; NULL or "utf-8":
 * repair only) to UTF-8, appended to out (cap: out->max). Unknown charsets are read as
 * UTF-8. Returns 0 or SL_ERR_TOOBIG. *replaced (may be NULL) counts U+FFFD insertions. */
int html_to_utf8(const char *in, size_t len, const char *charset, struct sl_buf *out,
                 size_t *replaced);

/* Append `html` (valid UTF-8) to out, rewritten for a fast parse: comments, NULs and
 * the contents of the raw elements listed above are dropped; every start tag keeps only
 * its name and, as one attribute h=N, the HN_* hints (html_tree.h) of its class, id,
 * role, itemprop, style, hidden and aria-hidden attributes (plus lang on <html> and
 * Content-Language <meta>); tags of formatting elements without hints (span, b, em,
 * font, ...) and of images are dropped, their text stays. Returns 0 or SL_ERR_TOOBIG. */
int html_rewrite(const char *html, size_t len, struct sl_buf *out);

/* HN_* hints of a class or id value: boilerplate words (nav, share, comments, ads, ...)
 * give HN_NEG, content words (article, content, post, ...) HN_POS, article-body names
 * ("article-body", "entry-content", ...) HN_BODY|HN_POS. */
unsigned html_class_hints(const char *v, size_t n);

#endif
