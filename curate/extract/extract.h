/* The extract stage's engine interface: one reader per --format turns one input file
 * into documents (struct sl_doc) handed to an emit callback, counting what it skips by
 * reason into the caller's counters. Readers never print: damage is reported through
 * extract_opts.on_warn, and a failure that ends the file is returned as a negative
 * enum sl_err with the message set.
 *
 * Counter names every reader uses: documents_in (records or lines read), bytes_in
 * (decompressed input bytes), skipped_<reason> (candidates not made into documents).
 * Documents handed to emit carry id, text, url, source, lang when known, then
 * source-specific metadata; emit returns 0 or a negative enum sl_err that stops the file.
 */
#ifndef SL_EXTRACT_EXTRACT_H
#define SL_EXTRACT_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct sl_counters;
struct sl_doc;
struct sl_input;
struct sl_source;

typedef int (*extract_emit_fn)(void *ctx, struct sl_doc *doc);

struct extract_opts {
    const char *format;      /* "warc", "wet", "arxiv", "pile", "c4", "jsonl", ... */
    const char *source;      /* value of "source" (NULL: the reader's default) */
    const char *text_key;    /* jsonl: member that holds the text */
    uint64_t max_record;     /* largest record / page / paper kept, decoded (bytes) */
    uint64_t max_output;     /* cap on one file's decompressed bytes (0: none) */
    int keep_truncated;      /* warc: extract records marked WARC-Truncated */
    int keep_non_200;        /* warc: extract responses with another status */
    int skip_corrupt;        /* a damaged file will be kept in part: salvage what precedes
                                the damage (wiki: every complete page) */
    /* Report damage the reader steps over ("FILE: where: what"). */
    void (*on_warn)(void *ctx, const char *reason, const char *message);
    void *warn_ctx;
};

/* One input file: path to open, rel for ids ("dir/a.warc.gz"). */
struct extract_input {
    const char *path;
    const char *rel;
    /* html: the file already read (html_read_input) and its result; NULL: read it here */
    const struct sl_buf *raw;
    int raw_rc;
    /* the input as the stage listed it: read through sl_input_source (core/inputs.h), up
     * to its size in the plan; NULL: `path` is read to its end */
    const struct sl_input *file;
};

/* Open in's bytes: in->file as planned, else in->path. 0 or SL_ERR_IO with a message. */
int extract_open_source(const struct extract_input *in, struct sl_source **out);

typedef int (*extract_file_fn)(const struct extract_input *in, const struct extract_opts *o,
                               extract_emit_fn emit, void *ctx, struct sl_counters *c);

/* --format warc and wet (extract_warc.c). */
int extract_warc_file(const struct extract_input *in, const struct extract_opts *o,
                      extract_emit_fn emit, void *ctx, struct sl_counters *c);
/* --format pile, c4 and jsonl (extract_jsonl.c). */
int extract_jsonl_file(const struct extract_input *in, const struct extract_opts *o,
                       extract_emit_fn emit, void *ctx, struct sl_counters *c);
/* --format arxiv (extract_arxiv.c). */
int extract_arxiv_file(const struct extract_input *in, const struct extract_opts *o,
                       extract_emit_fn emit, void *ctx, struct sl_counters *c);

/* --format html (one page per file) and wiki (MediaWiki XML exports) (extract_web.c). */
int extract_html_adapter(const struct extract_input *in, const struct extract_opts *o,
                         extract_emit_fn emit, void *ctx, struct sl_counters *c);
int extract_wiki_adapter(const struct extract_input *in, const struct extract_opts *o,
                         extract_emit_fn emit, void *ctx, struct sl_counters *c);

/* "c4-de.tfrecord-00000-of-01024.json.gz" -> "de"; C4 English ("c4-train...") -> "en";
 * NULL when the name carries no language. Writes into buf (n >= 16). */
const char *extract_c4_lang(const char *path, char *buf, size_t n);

/* ISO 639-3 / 639-2 codes of common languages to ISO 639-1 ("spa" -> "es"); other
 * codes come back unchanged. */
const char *extract_lang_639_1(const char *code);

#endif
