/* One HTML page per file (`.html`, `.htm`, optionally `.gz`/`.zst`/`.bz2` compressed,
 * detected from the bytes) turned into one document, for `sluice extract --format html`.
 *
 * The document gets: "id" = the file name without its directory and extensions
 * (".html.gz", ".htm", ...), "text" = the main text (html_extract), "title" and "lang"
 * when the page has them. The caller adds url/source and writes it.
 */
#ifndef SL_HTML_FILE_H
#define SL_HTML_FILE_H

#include <stddef.h>

struct sl_buf;
struct sl_doc;
struct sl_counters;
struct sl_source;

/* Read and extract `path` into doc (sl_doc_reset first; doc must be initialised).
 * Returns 1 when doc holds a document, 0 when the page has no main text (doc is not
 * meant to be written; counted as "html_no_text"), or a negative enum sl_err with a
 * message naming the file: SL_ERR_IO (unreadable), SL_ERR_CORRUPT (bad compression),
 * SL_ERR_TOOBIG (over HTML_MAX_INPUT; counted as "html_too_large"). Every call adds 1 to
 * "html_files" and the page size to "html_bytes". c may be NULL. */
int html_extract_file(const char *path, struct sl_doc *doc, struct sl_counters *c);
/* The same with another cap on the decoded page (0: HTML_MAX_INPUT), for --max-record. */
int html_extract_file_max(const char *path, size_t max_input, struct sl_doc *doc,
                          struct sl_counters *c);

/* The two halves of html_extract_file, so that the next file can be read (and
 * decompressed) while this one is extracted: html_read_file reads `path` into raw (which it
 * initialises; the caller releases it) and returns sl_read_file's result; html_extract_read
 * takes that result and the bytes and does the rest, with the same returns and counts.
 * max_input is the cap on the decoded page (0: HTML_MAX_INPUT), as html_extract_file_max. */
int html_read_file(const char *path, size_t max_input, struct sl_buf *raw);
/* html_read_file from a source (taken over: closed before it returns), read once, whole. */
int html_read_source(struct sl_source *src, size_t max_input, struct sl_buf *raw);
int html_extract_read(const char *path, int read_rc, const struct sl_buf *raw, size_t max_input,
                      struct sl_doc *doc, struct sl_counters *c);

/* The id for a path: base name without extensions (".html.gz" -> ""). Writes at most
 * n-1 bytes and a NUL into out; returns the length. */
size_t html_file_id(const char *path, char *out, size_t n);

#endif
