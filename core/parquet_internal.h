/* The Parquet reader's parts (core/parquet.h is the interface): the Thrift compact
 * protocol and the footer (parquet_meta.c), the codecs (parquet_codec.c), the pages of a
 * column chunk decoded into levels and values (parquet_page.c), and rows assembled into
 * JSON (parquet_rows.c; files and positional reads: parquet.c). */
#ifndef SL_PARQUET_INTERNAL_H
#define SL_PARQUET_INTERNAL_H

#include "core/parquet.h"
#include "core/parquet_format.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Thrift compact protocol -------------------------------------------------------- */

/* A cursor over a buffer; any read past the end, or a malformed value, sets err (and
 * every later read gives zeros), so callers check once at the end. */
struct pq_tin {
    const uint8_t *p, *start, *end;
    int err;
};

uint64_t pq_varint(struct pq_tin *t);
int64_t pq_zigzag(struct pq_tin *t);
/* A field header: 1 with *id and *type, 0 at the struct's end (or on error). */
int pq_field(struct pq_tin *t, int16_t *last, int16_t *id, int *type);
/* A field's value as an integer (i8/i16/i32/i64 and bools from the header type). */
int64_t pq_int(struct pq_tin *t, int type);
/* A binary's bytes (pointing into the buffer) and length. */
const uint8_t *pq_bin(struct pq_tin *t, size_t *len);
/* A list header: element count and type. */
size_t pq_list(struct pq_tin *t, int *etype);
/* Skip a value of the given type (nesting bounded). */
void pq_skip(struct pq_tin *t, int type);

/* ---- the footer --------------------------------------------------------------------- */

struct pq_node {
    char *name;
    int type;        /* enum sl_pq_type, or -1 for a group */
    int type_length; /* FIXED_LEN_BYTE_ARRAY */
    int repetition;  /* enum sl_pq_repetition (the root: REQUIRED) */
    int nchildren;
    int converted; /* enum sl_pq_converted, or -1 */
    int scale, precision;
    int logical;   /* the LogicalType union's field id, 0 when none */
    int time_unit; /* TIMESTAMP/TIME: 1 ms, 2 us, 3 ns */
    int utc;       /* TIMESTAMP: adjusted to UTC */
    int int_bits, int_signed;
    /* derived */
    struct pq_node **child;
    int max_def, max_rep; /* at this node, itself included */
    int leaf;             /* a leaf's column index, else -1 */
    int first_leaf, nleaves;
};

struct pq_chunk {
    int type, codec;
    int64_t num_values;
    uint64_t start, len; /* the bytes of its pages */
};

struct pq_rowgroup {
    int64_t num_rows;
    struct pq_chunk *col; /* one per leaf */
    uint64_t bytes;       /* sum of the chunks' lengths */
};

struct pq_meta {
    struct pq_node *nodes; /* depth first, nodes[0] the root */
    size_t nnodes;
    struct pq_node **leaves;
    size_t nleaves;
    struct pq_rowgroup *rg;
    size_t nrg;
    int64_t num_rows;
};

/* Parse a FileMetaData (buf[0..n), which starts at byte `off` of the file) into m, and check
 * it against a file of `size` bytes. 0 or SL_ERR_CORRUPT naming `name`. */
int pq_meta_parse(struct pq_meta *m, const uint8_t *buf, size_t n, uint64_t off, uint64_t size,
                  const char *name);
void pq_meta_release(struct pq_meta *m);
/* "a.b.c": a leaf's path (caller frees). */
char *pq_leaf_path(const struct pq_meta *m, size_t leaf);

/* An open file: its reads, its name for messages, its footer. */
struct sl_parquet {
    struct sl_pread pr;
    char *name;
    struct pq_meta m;
};

/* ---- codecs (parquet_codec.c) ------------------------------------------------------ */

/* Decompress src[0..n) in `codec` (enum sl_pq_codec) into exactly un bytes at dst: 0; 1 when
 * the data does not decompress to that; 2 for a codec not supported; or <0 with a message
 * when the codec's library does not load (name: the file, for the message). */
int pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t un,
                  const char *name);

/* ---- a column chunk decoded --------------------------------------------------------- */

struct pq_bytes {
    const uint8_t *p;
    uint32_t len;
};

/* The entries of one leaf in one row group: levels for every entry, values for those
 * whose definition level is the leaf's maximum. */
struct pq_column {
    uint16_t *def, *rep; /* NULL when the maximum level is 0 */
    size_t n, cap;       /* entries */
    union {
        int64_t *i;         /* BOOLEAN, INT32, INT64 */
        double *d;          /* FLOAT, DOUBLE */
        struct pq_bytes *b; /* BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY, INT96 */
    } v;
    size_t nv, vcap;
    /* memory the byte values point into: the chunk, pages, rebuilt values */
    void **blocks;
    size_t nblocks, bcap;
};

/* Where a chunk's errors are reported. */
struct pq_where {
    const char *name;
    size_t rg;
    const char *column;
};

/* Decode a column chunk (its bytes: data[0..n), read from byte `off` of the file) of leaf
 * `node` into c (emptied first). The chunk's buffer must stay alive while c is used. */
int pq_column_decode(struct pq_column *c, const struct pq_node *node, const struct pq_chunk *ch,
                     const uint8_t *data, size_t n, uint64_t off, const struct pq_where *w);
void pq_column_release(struct pq_column *c);

#endif
