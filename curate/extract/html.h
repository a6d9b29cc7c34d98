/* HTML main-text extraction: one page in, its article text, title and language out.
 *
 * The page is converted to UTF-8 (charset from the caller, a BOM, or <meta>; bad bytes
 * become U+FFFD), stripped of scripts, styles and comments, parsed with libxml2's HTML
 * parser (recovering, SAX, no DOM) into a compact tree, and the main content is chosen by
 * scoring text blocks and their ancestors (docs/extract-html.md has the algorithm).
 * Navigation, footers, sidebars, share bars, ads, comments, cookie banners and link
 * lists are dropped; paragraphs, headings (h2-h6), list items, table rows and
 * preformatted text are kept in reading order.
 *
 * Output text: blocks separated by a blank line, list items and table rows by a newline,
 * table cells by " | ", whitespace collapsed (kept inside <pre>), always valid UTF-8.
 *
 * Thread-safe (libxml2 is initialised once, on first use). Never prints.
 */
#ifndef SL_HTML_H
#define SL_HTML_H

#include <stddef.h>

#include "core/buf.h"

/* Pages larger than this are refused with SL_ERR_TOOBIG. */
#define HTML_MAX_INPUT ((size_t)128 << 20)

struct html_doc {
    struct sl_buf text;  /* main text (empty when the page has none) */
    struct sl_buf title; /* <title>, whitespace collapsed (may be empty) */
    struct sl_buf lang;  /* <html lang> or Content-Language meta as written (may be empty) */
};

/* Zero the buffers and set their caps (text 64 MiB, title 4 KiB, lang 64 bytes). */
void html_doc_init(struct html_doc *d);
void html_doc_release(struct html_doc *d);

/* Extract the main text of len bytes of HTML into out (its buffers are reset first).
 * charset_hint: the charset from the transport (HTTP Content-Type), or NULL: a byte order
 * mark wins over it; without a hint the page's <meta> charset is used, else UTF-8.
 * Unknown charsets are read as UTF-8. Bad bytes never fail: they become U+FFFD.
 * Returns 0 (also for a page without text: out->text is then empty), SL_ERR_TOOBIG when
 * the page is over HTML_MAX_INPUT, or SL_ERR_NOMEM when the parser cannot start. */
int html_extract(const char *html, size_t len, const char *charset_hint, struct html_doc *out);
/* The same with another cap than HTML_MAX_INPUT on the page (extract --max-record). */
int html_extract_max(const char *html, size_t len, const char *charset_hint, size_t max_input,
                     struct html_doc *out);

#endif
