/* Inside the Parquet writer (parquet_write.c: schema, rows, footer; parquet_pages.c: the
 * column chunks' pages). Not for other files. */
#ifndef SL_PARQUET_WRITE_INTERNAL_H
#define SL_PARQUET_WRITE_INTERNAL_H

#include "core/buf.h"

#include <stddef.h>
#include <stdint.h>

struct sl_writer;

/* A column's type (core/parquet_write.h): PQ_K_NULL only nulls so far (written as STRING),
 * PQ_K_JSON every value's JSON text in a STRING column. */
enum pq_kind { PQ_K_NULL, PQ_K_STR, PQ_K_INT, PQ_K_DBL, PQ_K_BOOL, PQ_K_JSON };
/* A JSON column: every value's JSON text (a column of only nulls is one: any later value
 * keeps its type that way). */
static inline int pq_is_json(enum pq_kind k)
{
    return k == PQ_K_JSON || k == PQ_K_NULL;
}

/* A value at most: a page's sizes are Thrift i32, and a page holds a value whole, with its
 * levels and length prefix (64 KiB under 2 GiB leaves room for them and zstd's bound). */
#define PQ_MAX_VALUE ((size_t)0x7fff0000 - ((size_t)64 << 10))

struct pq_col {
    char *name;
    size_t name_len;
    enum pq_kind kind;
    struct sl_buf def;  /* the row group's definition levels, a byte (0 or 1) a row */
    struct sl_buf vals; /* its non-null values PLAIN (BOOLEAN: a byte each, packed later) */
    size_t nvals;
};

/* Where a column chunk went and what it holds, for the footer. */
struct pq_chunk {
    uint64_t dict_off, data_off; /* file offsets of the dictionary page, the first data page */
    uint64_t compressed, uncompressed; /* the chunk's bytes, page headers included */
    uint64_t values;                   /* rows, nulls included */
    int dict;                          /* dictionary-encoded */
};

struct pq_group {
    uint64_t rows, offset;
    struct pq_chunk *chunks; /* one per column */
};

struct pq_slot {
    const char *v; /* the row's raw JSON value of a column, NULL when absent */
    size_t n;
};

struct pq_writer {
    char *name; /* the file, for messages */
    int level;
    uint64_t group_rows, group_bytes;
    const char *text_key, *id_key;
    /* the row group being gathered: its lines and their offsets (nrows + 1) */
    struct sl_buf lines;
    size_t *line_off, off_cap, nrows;
    uint64_t rows_done; /* rows of the row groups written */
    int have_schema;
    struct pq_col *cols;
    size_t ncols, cap;
    struct pq_slot *slot; /* a row's values by column (cap entries) */
    struct sl_buf key;    /* a decoded key or string */
    struct pq_group *groups;
    size_t ngroups;
    uint64_t pos; /* bytes of the file so far */
    uint64_t dropped, mismatched;
    char *dropped_first;
    void *pages; /* parquet_pages.c's scratch (compressor, buffers) */
};

/* The physical type of a column of kind k. */
int pq_physical(enum pq_kind k);
/* Write column c's chunk of the row group (rows rows) through w at p->pos, advancing it;
 * fills *k. 0 or <0 with a message. */
int pq_write_chunk(struct pq_writer *p, struct sl_writer *w, const struct pq_col *c, size_t rows,
                   struct pq_chunk *k);
/* Free p->pages. */
void pq_pages_release(struct pq_writer *p);

#endif
