/* struct html_tree: a compact element tree built from libxml2's HTML SAX events, holding
 * only what main-text extraction needs: element kinds, boilerplate/content hints from
 * class, id, role and itemprop, and text. Subtrees that never hold visible text (forms
 * controls, hidden elements, head content other than <title>) are not stored.
 *
 * Nodes live in one array; index 0 is the root. Depth is capped (HTML_TREE_MAX_DEPTH):
 * deeper elements are not stored and their text goes to the deepest stored ancestor, so
 * nothing here recurses on input structure. The node count and text size are capped too;
 * past them the rest of the page is ignored (html_tree.truncated is set).
 *
 * Lifecycle: html_tree_init, html_tree_build (any number of times), html_tree_release.
 */
#ifndef SL_HTML_TREE_H
#define SL_HTML_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define HTML_TREE_MAX_DEPTH 512
#define HTML_TREE_MAX_NODES (4u << 20)

enum html_tag {
    HT_TEXT = 0, /* a text node */
    HT_ROOT,
    HT_OTHER, /* an inline element we do not know */
    /* inline elements with meaning */
    HT_A,
    HT_BR,
    HT_IMG,
    HT_TITLE,
    /* blocks */
    HT_HTML,
    HT_BODY,
    HT_P,
    HT_DIV,
    HT_SECTION,
    HT_ARTICLE,
    HT_MAIN,
    HT_HEADER,
    HT_FOOTER,
    HT_NAV,
    HT_ASIDE,
    HT_H1,
    HT_H2,
    HT_H3,
    HT_H4,
    HT_H5,
    HT_H6,
    HT_UL,
    HT_OL,
    HT_LI,
    HT_DL,
    HT_DT,
    HT_DD,
    HT_TABLE,
    HT_CAPTION,
    HT_TR,
    HT_TD,
    HT_TH,
    HT_PRE,
    HT_BLOCKQUOTE,
    HT_FIGURE,
    HT_FIGCAPTION,
    HT_FORM,
    HT_HR,
    HT_ADDRESS,
    HT_CENTER,
    HT_DETAILS,
    HT_SUMMARY,
    HT_FIELDSET,
    HT_BLOCK_OTHER, /* a block we treat generically (hgroup, dialog, menu, ...) */
    HT_COUNT
};

#define HT_IS_BLOCK(t)   ((t) >= HT_HTML)
#define HT_IS_HEADING(t) ((t) >= HT_H1 && (t) <= HT_H6)

/* node flags */
#define HN_NEG    0x01 /* class/id/role says boilerplate (nav, share, comments, ads, ...) */
#define HN_POS    0x02 /* class/id says content (article, body, post, entry, story, ...) */
#define HN_BODY   0x04 /* itemprop=articleBody or a well-known article-body class */
#define HN_HARD   0x08 /* boilerplate even inside the main content (share bars, ads, ...) */
#define HN_INLINK 0x10 /* text node inside <a> */
#define HN_HIDE   0x20 /* hidden (attribute, aria-hidden, display:none): not stored */

struct html_node {
    uint32_t parent, first, last, next; /* 0: none (the root has index 0) */
    uint32_t off, len;                  /* text nodes: bytes in html_tree.text */
    uint8_t tag;                        /* enum html_tag */
    uint8_t flags;                      /* HN_* */
    uint16_t depth;
    /* filled by the extractor */
    uint32_t chars, link_chars, punct;       /* whole subtree: code points (non-space), in links */
    uint32_t own_chars, own_link, own_punct; /* text not inside nested blocks */
    float score;
    uint32_t aux;
};

struct html_tree {
    struct html_node *n;
    size_t count, cap;
    struct sl_buf text;  /* text node bytes (UTF-8, whitespace as in the page) */
    struct sl_buf title; /* first <title>, whitespace collapsed */
    char lang[36];       /* <html lang>, or <meta http-equiv=content-language> */
    int truncated;
};

void html_tree_init(struct html_tree *t);
void html_tree_release(struct html_tree *t);

/* Parse `html` (valid UTF-8 as written by html_rewrite, whose "h" attributes carry the
 * HN_* hints of each element) into t, replacing what it held.
 * Returns 0, SL_ERR_NOMEM (parser context) or SL_ERR_FORMAT (nothing parsed). */
int html_tree_build(struct html_tree *t, const char *html, size_t len);

#endif
