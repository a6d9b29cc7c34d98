/* Wikipedia / MediaWiki XML exports to documents: `pages-articles*.xml(.bz2)` dumps
 * (multistream too: core/stream reads every bzip2 stream), history exports (the latest
 * revision of each page is used, by <timestamp>), schema 0.3 to 0.11, UTF-8 or UTF-16
 * (detected by libxml2 from the BOM or the first bytes).
 *
 * The file is streamed with libxml2's xmlTextReader over a core/stream reader, so memory
 * is bounded by the largest page (capped by wiki_opts.max_page_bytes) whatever the dump
 * size. Main namespace only and redirects skipped, unless the options say otherwise.
 *
 * Each document has: "id" (page id, a string), "title", "text" (wikitext_to_text),
 * "url" (the site's article path from <siteinfo><base> + the title, e.g.
 * https://en.wikipedia.org/wiki/Albedo; absent when the export has no siteinfo),
 * "source" = "wikipedia", "lang" (from <dbname>/<base>, else wiki_opts.lang; absent when
 * neither is known).
 */
#ifndef SL_WIKI_H
#define SL_WIKI_H

#include <stddef.h>

struct sl_doc;
struct sl_counters;
struct sl_input;

struct wiki_opts {
    int all_namespaces;    /* 0: only namespace 0 (articles) */
    int keep_redirects;    /* 0: skip redirect pages */
    size_t max_page_bytes; /* cap on one revision's wikitext; larger pages are skipped and
                              counted as "wiki_too_large" (0: 64 MiB) */
    const char *lang;      /* language when the export does not tell (may be NULL) */
    int salvage;           /* a cut or damaged file: emit every complete page before the
                              damage (read again up to the last </page>), then fail */
    /* the input as a stage listed it: read through sl_input_reader (core/inputs.h), up
     * to its size in the plan; NULL: the path is read to its end */
    const struct sl_input *file;
};

/* Read the export at `path` (plain, .bz2, .gz or .zst, detected from the bytes) and call
 * emit(ctx, doc) for each page kept; doc is owned by this function and valid during the
 * call only. `o` may be NULL (defaults). Counters added to c (may be NULL): "wiki_pages",
 * "wiki_documents", "wiki_redirects", "wiki_other_namespace", "wiki_too_large",
 * "wiki_empty" (no text left after markup removal).
 * Returns 0 at the end of the file; the first non-zero value emit returns (reading stops);
 * SL_ERR_IO / SL_ERR_CORRUPT when the file cannot be read or its compression is broken,
 * SL_ERR_CORRUPT also when the XML ends before its root's end tag (a cut dump: message
 * with the decompressed byte, the line and where the last complete page ends), and the
 * page the cut went through is counted "wiki_incomplete"; SL_ERR_FORMAT when the XML is
 * malformed (message: file and line). Pages emitted before an error stay emitted; the XML
 * reader parses a little ahead, so without o->salvage the pages just before the error
 * may be lost; with it, every complete page before a cut or a stream error is emitted
 * (ASCII-compatible encodings; not UTF-16). Counter "bytes_in": decompressed bytes read.
 * Never prints. */
int wiki_extract_file(const char *path, const struct wiki_opts *o,
                      int (*emit)(void *ctx, struct sl_doc *doc), void *ctx, struct sl_counters *c);

#endif
