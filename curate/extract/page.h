/* page_text: the text of an HTML page for a document — main-text extraction through
 * curate/extract/html.h when that extractor is built in, otherwise a plain tag stripper
 * (scripts, styles and the head dropped; block elements become line breaks; entities
 * decoded). Input must be UTF-8 already (see charset.h).
 */
#ifndef SL_EXTRACT_PAGE_H
#define SL_EXTRACT_PAGE_H

#include <stddef.h>

#include "core/buf.h"

struct page_text {
    struct sl_buf text;  /* UTF-8, paragraphs separated by "\n" */
    struct sl_buf title; /* "" when none */
    struct sl_buf lang;  /* the page's declared language ("de", "pt-br"), "" when none */
};

/* text/title/lang are capped at `max` bytes each (0: none). */
void page_text_init(struct page_text *p, size_t max);
void page_text_release(struct page_text *p);

/* Extract (replaces the previous contents). 0 or a negative enum sl_err. */
int page_text_extract(struct page_text *p, const char *html, size_t n);

/* Which extractor is built in: "main-text" or "tag-stripper". */
const char *page_text_engine(void);

#endif
