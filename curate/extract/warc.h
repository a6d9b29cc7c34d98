/* struct warc_reader: a streaming reader of WARC 1.0/1.1 files (and their WET/WAT
 * variants), and of legacy ARC v1/v2 files, plain or compressed (gzip per record or
 * whole-file, zstd, bzip2: detected from content). gzip members are inflated whole with
 * libdeflate; the rest (and members over 64 MiB or damaged) streams through core/stream.h.
 *
 *   warc_reader_open(&r, path, &opts);
 *   while ((rc = warc_next(r, &rec)) == 1) {
 *       if (want it) rc = warc_read_block(r, &body);   // else the block is skipped
 *   }
 *   warc_reader_close(r);
 *
 * Memory is bounded: the header block is capped (WARC_MAX_HEAD) and a block is read into
 * the caller's buffer only on request, up to that buffer's cap; longer blocks are
 * skipped (SL_ERR_TOOBIG) and the reader stays in step. Damage inside the file (garbage
 * between records, a header that does not parse, a record cut by the end of the file)
 * is reported through on_skip and reading goes on at the next record; a damaged
 * compressed stream ends the file with a negative return.
 */
#ifndef SL_EXTRACT_WARC_H
#define SL_EXTRACT_WARC_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct sl_source;

#define WARC_MAX_HEAD (64u << 10)

enum warc_type {
    WARC_OTHER = 0,
    WARC_WARCINFO,
    WARC_RESPONSE,
    WARC_RESOURCE,
    WARC_REQUEST,
    WARC_METADATA,
    WARC_REVISIT,
    WARC_CONVERSION,
    WARC_CONTINUATION,
};

/* One record's header. Strings point into the reader (valid until the next warc_next);
 * absent fields are "" (never NULL). */
struct warc_record {
    enum warc_type type;
    const char *type_name;  /* as written ("response"), or "arc" fields for ARC */
    const char *version;    /* "WARC/1.0", "WARC/1.1", "ARC" */
    const char *target_uri; /* angle brackets (wget) removed */
    const char *record_id;  /* "<urn:uuid:...>" as written */
    const char *date;       /* WARC-Date (ARC: converted to ISO 8601) */
    const char *content_type;
    const char *truncated;  /* WARC-Truncated value ("length", ...) */
    const char *language;   /* WARC-Identified-Content-Language (WET) */
    const char *refers_to;  /* WARC-Refers-To */
    const char *head;       /* the header block, split at NULs by the parser */
    size_t head_len;        /* its length as read */
    uint64_t content_length;
    uint64_t offset;        /* decompressed offset of the record's first byte */
    uint64_t index;         /* 0-based record number in the file */
};

struct warc_opts {
    uint64_t max_output; /* cap on decompressed bytes of the whole file (0: none) */
    /* Called for each piece of damage the reader steps over (the message says where):
     * "bad_record": bytes between records that start no record (garbage; not a record),
     *   skipped up to the next "WARC/1.x" line wherever it starts;
     * "bad_header": a record whose header does not parse (one record, skipped);
     * "incomplete": the file ends inside a record header (one record, skipped);
     * "cut": the record warc_next returned last, whose block was not read, is cut short by
     *   the end of the file (already returned: count it once). */
    void (*on_skip)(void *ctx, const char *reason, const char *message);
    void *ctx;
};

struct warc_reader;

/* Open a file / a source (taken over, closed with the reader, also on error). */
int warc_reader_open(struct warc_reader **out, const char *path, const struct warc_opts *o);
int warc_reader_open_source(struct warc_reader **out, struct sl_source *src,
                            const struct warc_opts *o);
void warc_reader_close(struct warc_reader *r);

/* Advance to the next record (skipping the unread rest of the current block).
 * 1: *rec filled; 0: end of file; <0: the stream failed (corrupt or truncated
 * compression, read error, output cap): message names the file and offset. */
int warc_next(struct warc_reader *r, struct warc_record *rec);

/* Read the current record's block into body (appended; cap: body->max). 0; SL_ERR_TOOBIG
 * (block larger than the cap: skipped, body unchanged, reading may go on);
 * SL_ERR_CORRUPT with the file cut inside the block (body holds what was there; the next
 * warc_next returns 0); or a stream error (<0, fatal). Once per record. */
int warc_read_block(struct warc_reader *r, struct sl_buf *body);

/* Decompressed and compressed bytes consumed so far. */
uint64_t warc_reader_offset(const struct warc_reader *r);
/* After warc_next failed: 1 when decompressed bytes of a record not yet returned were read
 * (the failure cut a record), 0 when it failed between records or inside a returned one. */
int warc_reader_pending(const struct warc_reader *r);
uint64_t warc_reader_in_offset(const struct warc_reader *r);
const char *warc_reader_name(const struct warc_reader *r);

/* Classify a WARC-Type value. */
enum warc_type warc_type_from_name(const char *s);

#endif
