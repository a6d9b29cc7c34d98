/* Input files of a stage: operands (files or directories) expanded into a sorted list,
 * opened as listed, and work assigned to MPI ranks balanced by size.
 *
 * A directory stands for the regular files under it (recursively, sorted by path) whose
 * names end in one of the accepted extensions; hidden files and directories (".name")
 * are skipped. A directory written by a sluice stage (it has a manifest.json listing
 * "outputs") stands for exactly those outputs, so side files such as duplicates.jsonl are
 * never re-read. Symbolic links are followed, but each directory is walked once and each
 * file listed once, by (device, inode): a link to an enclosing directory is not walked
 * again (no loop), a link to a sibling directory or file, a hard link, or an operand
 * given twice (or also inside a directory given) adds nothing. Of the names that lead to
 * one file, the first in walk order is kept: operands in the order given, each directory's
 * entries in byte order of their names, depth first.
 *
 * An operand may also be a remote object or prefix (s3://, hf://, http(s)://;
 * core/remote.h): a prefix or folder stands for its objects with accepted extensions,
 * sorted by key; each is read in ranges as it is needed, never copied to a local file.
 */
#ifndef SL_INPUTS_H
#define SL_INPUTS_H

#include <stddef.h>
#include <stdint.h>

struct sl_input {
    char *path;    /* as opened; a remote input's display form (core/remote.h) */
    char *url;     /* a remote input: the URL it is read from (may carry a token); else NULL */
    char *rel;     /* relative to its operand directory, or the base name for a file operand */
    uint64_t size; /* when listed: the bytes a stage reads (the size in its plan) */
    int64_t mtime;
    unsigned mode;     /* st_mode: a regular file, or (an operand) a FIFO, device, socket */
    uint64_t dev, ino; /* its identity */
    /* a part of a Parquet file (sl_inputs_split_parquet): its row groups [rg_first, rg_end)
     * of the file_size bytes; rg_end 0 for a whole file */
    size_t rg_first, rg_end;
    uint64_t file_size;
};

struct sl_source;
struct sl_reader;
struct sl_reader_opts;
struct sl_jsonl_reader;
struct sl_jsonl_opts;
struct sl_doc;

struct sl_inputs {
    struct sl_input *v;
    size_t n;
};

/* The extensions a JSONL stage reads by default. */
extern const char *const sl_jsonl_exts[];

/* Expand operands (then sl_inputs_split_parquet). `exts` is a NULL-terminated list of
 * accepted name endings (NULL: all files). Errors: a missing operand, a directory with no
 * accepted files (named), an unreadable directory. Files given explicitly are taken
 * whatever their extension. */
int sl_inputs_expand(struct sl_inputs *in, const char *const *operands, size_t n,
                     const char *const *exts);
void sl_inputs_release(struct sl_inputs *in);

/* Fill *in for one path (stat'ed now), as a one-file expansion would; release with
 * sl_input_release. 0 or SL_ERR_NOTFOUND. */
int sl_input_from_path(struct sl_input *in, const char *path);
void sl_input_release(struct sl_input *in);

/* Open an input for reading, the one rule of every stage: a regular file gives its first
 * in->size bytes, the size when it was listed (what is appended after that is not read),
 * and fails at its end if it has become shorter (SL_ERR_IO, "... is shorter than when the
 * run began ..."); anything else (a FIFO) is read to its end. Errors name the input:
 * "cannot read input 'x': Permission denied". */
int sl_input_source(struct sl_source **out, const struct sl_input *in);
/* The same through a decompressing reader (core/stream.h; opts may be NULL) or a JSONL
 * reader (core/jsonl.h). On failure *out is NULL. */
int sl_input_reader(struct sl_reader **out, const struct sl_input *in,
                    const struct sl_reader_opts *opts);
int sl_input_jsonl(struct sl_jsonl_reader **out, const struct sl_input *in,
                   const struct sl_jsonl_opts *opts);

/* Read the documents of an input (sl_input_jsonl with opts) and call fn for each, in order
 * (sl_jsonl_each: fn returns 0 to go on, >0 to stop reading, <0 to fail). 0, fn's error, or
 * <0 when the input cannot be opened or read (the message names it). */
int sl_input_docs(const struct sl_input *in, const struct sl_jsonl_opts *opts,
                  int (*fn)(void *ctx, struct sl_jsonl_reader *r, struct sl_doc *d), void *ctx);

/* Parquet inputs (core/inputs_parquet.c). A regular file is Parquet when its name ends in
 * ".parquet" or it begins with "PAR1". sl_input_reader, sl_input_jsonl and sl_input_docs
 * read a Parquet input's rows as JSONL, one line a row (core/parquet.h). */
/* 1 with *out the rows of a Parquet input (text_key, id_key: the columns read as text
 * whatever their annotation; NULL: "text", "id"), 0 when it is not Parquet, <0 when it
 * cannot be read (the message names it). */
int sl_input_parquet(struct sl_source **out, const struct sl_input *in, const char *text_key,
                     const char *id_key);
/* Split each Parquet file of more than SL_PARQUET_UNIT_BYTES compressed bytes (or the
 * environment's SLUICE_PARQUET_UNIT_BYTES) into parts of consecutive row groups of about
 * that size, in order, so that ranks and threads share it: part k of "d/x.parquet" is
 * named (rel) "d/x@rgF.parquet", F its first row group, and its size is its row groups'
 * compressed bytes. The split depends on the file alone, never on the number of ranks. A
 * file whose footer cannot be read stays whole (its reading then fails with the reason).
 * 0 or <0. */
#define SL_PARQUET_UNIT_BYTES (256ull << 20)
int sl_inputs_split_parquet(struct sl_inputs *in);

/* "a FIFO", "a character device", "a socket", "a regular file", ... (for messages). */
const char *sl_input_kind(const struct sl_input *in);

uint64_t sl_inputs_total_size(const struct sl_inputs *in);

/* Greedy longest-processing-time assignment: items in decreasing size (ties: lower index
 * first) each go to the least-loaded rank (ties: lower rank). owner[i] receives the rank.
 * Deterministic: every rank computes the same answer. */
void sl_assign_by_size(const uint64_t *sizes, size_t n, int nranks, int *owner);

#endif
