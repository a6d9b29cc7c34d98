/* Reading Parquet files: the footer, the column chunks of a range of row groups, and each
 * row rendered as one line of JSON (a JSONL document), written on the format's published
 * specification (core/parquet_format.h holds its numbers).
 *
 * Reads go through a positional-read interface (struct sl_pread): the reader fetches the
 * last 8 bytes, then the footer, then, for each row group it reads, each column chunk as
 * one byte range [start, start + compressed size). Nothing else of the file is read, so a
 * remote object (an HTTP range request per read_at) serves as well as a local file.
 *
 * What a row becomes: {"col": value, ...} with the schema's top-level columns in schema
 * order. Strings (STRING/UTF8, ENUM, JSON annotations) are JSON strings; integers and
 * floats JSON numbers (NaN and infinities: null); booleans true/false; a null: null;
 * DECIMAL a JSON number with its exact digits (unscaled values up to 16 bytes; wider:
 * null); DATE "YYYY-MM-DD"; TIMESTAMP (and INT96) "YYYY-MM-DDTHH:MM:SS.fff[fff[fff]]"
 * with the unit's digits and a final "Z" when adjusted to UTC; TIME "HH:MM:SS.fff...";
 * UUID its canonical hex form; FLOAT16 a number. A BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY
 * without a string annotation (binary) is its base64 text (RFC 4648, with padding), except
 * the columns named as text and id (opts), which are taken as text whatever their
 * annotation. Groups are objects; LIST-annotated groups (and the older two- and
 * three-level list layouts), and repeated fields without annotation, arrays; MAP-annotated
 * groups objects whose keys are the map keys as text.
 *
 * Memory: the column chunks of one row group at a time (compressed and decoded), plus the
 * rendered rows of one read. Work: linear in the bytes read. Any damage (a footer or page
 * header that does not parse, a page that does not decompress or decode, levels or
 * lengths past a page's end, a dictionary index out of range) is an error naming the file,
 * the byte offset, the row group and the column; never a crash or an endless loop.
 */
#ifndef SL_PARQUET_H
#define SL_PARQUET_H

#include <stddef.h>
#include <stdint.h>

struct sl_source;

/* Positional reads of an object of `size` bytes: read_at fills buf with exactly n bytes
 * from offset off and returns 0, or returns a negative enum sl_err with its message set
 * (sl_err_set); it is never asked for bytes past size. close (may be NULL) frees ctx.
 * A local file is one implementation (sl_pread_file); a remote object another. */
struct sl_pread {
    uint64_t size;
    int (*read_at)(void *ctx, uint64_t off, void *buf, size_t n);
    void (*close)(void *ctx);
    void *ctx;
};

/* A local file through pread(2), `size` bytes of it (its size when listed: 0 takes its
 * size now). 0 or SL_ERR_IO naming the file. */
int sl_pread_file(struct sl_pread *out, const char *path, uint64_t size);

/* True when the first bytes p[0..n) are Parquet's magic ("PAR1"). */
int sl_parquet_magic(const void *p, size_t n);

struct sl_parquet;

/* Open: read and check the footer (name for messages). Takes ownership of *pr (closed by
 * sl_parquet_close, also on failure). On failure *out is NULL. */
int sl_parquet_open(struct sl_parquet **out, struct sl_pread *pr, const char *name);
void sl_parquet_close(struct sl_parquet *pq);

size_t sl_parquet_row_groups(const struct sl_parquet *pq);
/* A row group's rows and compressed bytes (its column chunks as stored). */
uint64_t sl_parquet_rg_rows(const struct sl_parquet *pq, size_t rg);
uint64_t sl_parquet_rg_bytes(const struct sl_parquet *pq, size_t rg);

struct sl_parquet_opts {
    const char *text_key; /* columns read as text whatever their annotation (NULL: "text") */
    const char *id_key;   /* (NULL: "id") */
};

/* A source of JSONL: the rows of row groups [first, end) (end 0: to the last), one line
 * each, in order. Takes ownership of pq (closed with the source). The source's name is
 * `name`; its read errors name the file, the byte offset, the row group and the column. */
struct sl_source *sl_parquet_source(struct sl_parquet *pq, size_t first, size_t end,
                                    const struct sl_parquet_opts *opts, const char *name);

/* The row groups of a file split into consecutive ranges of about `target` compressed
 * bytes each (at least one row group each): *bounds receives nranges + 1 indices (caller
 * frees), range k being [bounds[k], bounds[k+1]). Returns nranges (>= 1; 1 for a file with
 * no row groups). */
size_t sl_parquet_split(const struct sl_parquet *pq, uint64_t target, size_t **bounds);

#endif
