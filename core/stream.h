/* Compressed byte streams: sources, sinks, decompressing readers and compressing writers.
 *
 * A struct sl_reader reads plain, gzip (multi-member), zstd (multi-frame) or bzip2
 * (multi-stream) data, detected from the first bytes, never from the file name. Memory is
 * bounded: fixed input/output windows plus the caller's line cap. Errors name the stream
 * and the compressed byte offset where they happened.
 *
 * A struct sl_writer compresses into a sink; the file sink is atomic (temporary name,
 * renamed on sl_writer_commit, removed on sl_writer_abort).
 */
#ifndef SL_STREAM_H
#define SL_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sl_buf;

enum sl_codec {
    SL_CODEC_AUTO = 0, /* reader: detect from magic bytes */
    SL_CODEC_NONE,
    SL_CODEC_GZIP,
    SL_CODEC_ZSTD,
    SL_CODEC_BZIP2,
};

/* "plain", "gzip", "zstd", "bzip2". */
const char *sl_codec_name(enum sl_codec c);
/* The codec implied by a file name's extension (.gz .zst .bz2; else NONE). */
enum sl_codec sl_codec_from_name(const char *path);
/* Detect from the first n bytes (n >= 4 for a sure answer). Unknown magic: NONE.
 * Sets *unsupported to the name of a recognised but unsupported format (xz, lz4) or NULL. */
enum sl_codec sl_codec_detect(const unsigned char *p, size_t n, const char **unsupported);

/* ---- sources ---------------------------------------------------------------------- */

/* A byte source. read returns bytes read (0 at end) or a negative enum sl_err. */
struct sl_source {
    ssize_t (*read)(struct sl_source *src, void *buf, size_t n);
    void (*close)(struct sl_source *src); /* frees src itself */
    char *name;                           /* for messages (owned by the source) */
};

/* Open a file (or "-" for stdin). 0 or SL_ERR_IO. */
int sl_source_file(struct sl_source **out, const char *path);
/* Read from memory the caller keeps alive. */
struct sl_source *sl_source_mem(const void *data, size_t n, const char *name);
/* Wrap an open file descriptor (closed with the source if `own`). */
struct sl_source *sl_source_fd(int fd, int own, const char *name);
void sl_source_close(struct sl_source *src);

/* ---- readers ---------------------------------------------------------------------- */

struct sl_reader_opts {
    enum sl_codec codec;   /* SL_CODEC_AUTO (default) detects */
    uint64_t max_output;   /* cap on decompressed bytes (0: none); a bomb gives SL_ERR_TOOBIG */
};

struct sl_reader;

/* Open a path; `opts` may be NULL. On failure *out is NULL and the message names the file. */
int sl_reader_open(struct sl_reader **out, const char *path, const struct sl_reader_opts *opts);
/* Read from a source; takes ownership of `src` (closed by sl_reader_close, also on error). */
int sl_reader_open_source(struct sl_reader **out, struct sl_source *src,
                          const struct sl_reader_opts *opts);
void sl_reader_close(struct sl_reader *r);

/* Read up to n decompressed bytes. Returns the count (0 at the end) or a negative enum
 * sl_err (truncated or corrupt data, read failure). */
ssize_t sl_reader_read(struct sl_reader *r, void *buf, size_t n);

/* zstd: each frame is decoded whole (up to 16 MiB of output) before any of it is handed
 * out, so a frame whose data or checksum is damaged gives none of its bytes (a frame cut
 * by the end of the file gives the bytes before the cut, then the error); after such
 * an error these say what was dropped (its lines: newlines, plus one for a last line
 * without one). A larger frame is handed out in 16 MiB pieces: only the piece that holds
 * the damage is dropped. */
uint64_t sl_reader_dropped_lines(const struct sl_reader *r);
uint64_t sl_reader_dropped_bytes(const struct sl_reader *r);

/* Read the next line (without its '\n'; a '\r' before it is kept). Returns 1 with *line
 * and *len set (valid until the next call), 0 at the end, SL_ERR_TOOBIG when the line
 * is longer than max_len (the line is skipped, the reader is positioned after it, and the
 * caller may go on), or another negative enum sl_err (fatal for this stream; the output
 * cap of opts.max_output is reported here as SL_ERR_CORRUPT, with its message). A final
 * line without '\n' is returned as a line. */
int sl_reader_getline(struct sl_reader *r, const char **line, size_t *len, size_t max_len);

/* 1-based number of the last line returned (or skipped) by sl_reader_getline. */
uint64_t sl_reader_line_no(const struct sl_reader *r);
/* Decompressed bytes delivered so far (lines: offset just past the last line). */
uint64_t sl_reader_out_offset(const struct sl_reader *r);
/* Compressed bytes consumed from the source so far. */
uint64_t sl_reader_in_offset(const struct sl_reader *r);
/* The codec in use (after the first read for AUTO; detection happens at open). */
enum sl_codec sl_reader_codec(const struct sl_reader *r);
const char *sl_reader_name(const struct sl_reader *r);

/* Read a whole stream into b (cap: b->max). */
int sl_reader_read_all(struct sl_reader *r, struct sl_buf *b);
/* Read a whole (possibly compressed) file into b (cap: b->max). */
int sl_read_file(const char *path, struct sl_buf *b);

/* ---- writers ---------------------------------------------------------------------- */

struct sl_writer_opts {
    enum sl_codec codec; /* NONE, GZIP, ZSTD or BZIP2; AUTO means from the file name */
    int level;           /* 0: the codec's default (zstd 3, gzip 6, bzip2 9) */
    int no_sync;         /* an intermediate file: committed without fsync (core/atomic.h) */
};

struct sl_writer;

/* Write `path` atomically (temporary name until sl_writer_commit). */
int sl_writer_open(struct sl_writer **out, const char *path, const struct sl_writer_opts *opts);
/* Write into a caller-owned buffer (tests, in-memory pipelines). */
int sl_writer_open_buf(struct sl_writer **out, struct sl_buf *dst, const struct sl_writer_opts *opts);

/* A writer of JSONL documents into another file format (Parquet: core/parquet_write.h):
 * whatever is written is cut into lines, each whole line (without its '\n'; a last line
 * without one at commit) goes to line(), and finish() ends the file at commit; both write
 * the format's bytes with sl_writer_emit. release() frees state (also after an abort).
 * bytes_in counts the JSONL bytes written; bytes_out the format's bytes. */
struct sl_writer_format {
    int (*line)(void *state, struct sl_writer *w, const char *s, size_t n);
    int (*finish)(void *state, struct sl_writer *w);
    void (*release)(void *state);
    void *state;
};
/* Open a file (path) or buffer (dst, path NULL) writer of that format; opts->codec is the
 * codec of the emitted bytes (NONE for a format that compresses its own parts). The
 * writer owns fmt->state from here on, also on failure. */
int sl_writer_open_format(struct sl_writer **out, const char *path, struct sl_buf *dst,
                          const struct sl_writer_opts *opts, const struct sl_writer_format *fmt);
/* A format's own bytes, past the line cutting (not counted in bytes_in). */
int sl_writer_emit(struct sl_writer *w, const void *data, size_t n);

int sl_writer_write(struct sl_writer *w, const void *data, size_t n);
/* Uncompressed bytes written so far. */
/* Append n bytes of the file fd from offset off (the bytes must be there). A plain file
 * writer copies them inside the kernel (copy_file_range: no copy through user memory, and
 * none at all where the file system shares extents); other writers read and write them. */
int sl_writer_copy_fd(struct sl_writer *w, int fd, uint64_t off, uint64_t n, const char *name);
uint64_t sl_writer_bytes_in(const struct sl_writer *w);
/* Compressed bytes produced so far (flushed to the sink). */
uint64_t sl_writer_bytes_out(const struct sl_writer *w);
/* Finish the stream, sync and rename (file sinks), free w. On error the temporary file
 * is removed and nothing appears under the final name. */
int sl_writer_commit(struct sl_writer *w);
/* Discard everything written, free w. NULL is a no-op. */
void sl_writer_abort(struct sl_writer *w);

#endif
