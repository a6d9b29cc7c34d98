/* Wikitext (MediaWiki markup) to the plain text a reader sees.
 *
 * Removed: comments, <ref> footnotes and other extension tags without reader text
 * (gallery, math, timeline, references, ...), templates and parser functions ({{...}},
 * {{#if:...}}, {{{param}}}) except a few that render inline text (convert, lang, nowrap,
 * ...), files/images/media, categories, interlanguage links, magic words (__TOC__),
 * horizontal rules, bold/italic marks.
 * Rendered: [[Target|label]] as its label ([[Target]] as Target, link trails kept),
 * [http://x label] as its label, headings (== X ==) as lines of their own, list items as
 * lines without their markers, tables ({| ... |}) as one line per row with cells joined
 * by " | ", <br> as a newline, <nowiki>/<pre> content literally, HTML entities decoded.
 * Paragraphs are separated by one blank line.
 *
 * Unbalanced markup ({{ or [[ never closed) is kept as literal text, as MediaWiki shows
 * it. Every pass is linear in the input; nothing recurses on input structure beyond a
 * fixed depth. Output is valid UTF-8 when the input is.
 */
#ifndef SL_WIKITEXT_H
#define SL_WIKITEXT_H

#include <stddef.h>

struct sl_buf;

/* Append the plain text of len bytes of wikitext to out (cap: out->max).
 * Returns 0 or SL_ERR_TOOBIG (out's cap reached; out then holds a prefix). */
int wikitext_to_text(const char *wt, size_t len, struct sl_buf *out);

#endif
