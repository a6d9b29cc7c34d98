/* A Parquet writer for documents: JSONL lines in (the lines every document stage writes
 * to its struct sl_writer), a Parquet file out (the format: core/parquet_format.h; the
 * choices below: docs/formats/parquet-out.md).
 *
 * Rows and columns: one row per document (a JSON object). The columns are the members of
 * the documents of the first row group: the text member (opts.text_key) first, the id
 * second, then the others in the order they first appear; every column is OPTIONAL (a
 * document without the member, or with null, is a null). A column's type is the JSON type
 * of its values in the first row group: strings -> BYTE_ARRAY STRING; integers that fit
 * 64 bits -> INT64; numbers with a fraction or an exponent, or integers mixed with them
 * -> DOUBLE; true/false -> BOOLEAN. A column of objects or arrays, of integers beyond 64
 * bits, of only nulls, or of values of more than one of these types is a "JSON column": a
 * STRING column whose every value is the value's JSON text (a string there keeps its
 * quotes); the footer's key-value metadata "sluice.json_columns" lists these columns (a
 * JSON array of names). In later row groups a value whose type differs from
 * its column's is written as its JSON text in a STRING column, an integer in a DOUBLE
 * column as its double, and any other mismatch (a string in an INT64 column) as null; a
 * member absent from the schema is dropped. Both are counted and warned of once, when
 * the file is committed (core/log.h).
 *
 * Encoding: data pages v1 (levels and values compressed together; the page version every
 * reader handles and pyarrow's default) of about SL_PQ_PAGE_BYTES of values each;
 * definition levels with the RLE hybrid (bit width 1); values PLAIN, or for a STRING
 * column's chunk a dictionary (a PLAIN dictionary page, RLE_DICTIONARY data pages) when
 * the chunk's distinct values fit SL_PQ_DICT_BYTES and the dictionary plus the indices
 * at their bit width are smaller than the plain values. Every page is ZSTD-compressed
 * (opts.level). No statistics. created_by is "sluice VERSION".
 *
 * Memory: one row group's JSONL lines and its columns (row_group_rows rows, fewer when
 * their lines reach row_group_bytes).
 */
#ifndef SL_PARQUET_WRITE_H
#define SL_PARQUET_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;
struct sl_writer;

/* Rows of a row group by default: the row-group size of Hugging Face `datasets`' Parquet
 * writer (its writer_batch_size, 1000), whose files are the hub's usual document sets. */
#define SL_PQ_ROW_GROUP_ROWS 1000
/* Bytes of a row group's JSONL lines at most by default (what bounds memory when the
 * documents are long): 128 MiB, the row-group size of Hadoop's parquet-mr writer
 * (parquet.block.size). */
#define SL_PQ_ROW_GROUP_BYTES ((uint64_t)128 << 20)
/* Values of a data page: about 1 MiB, the page size of pyarrow's writer (data_page_size). */
#define SL_PQ_PAGE_BYTES ((size_t)1 << 20)
/* A dictionary page at most: 1 MiB, pyarrow's dictionary_pagesize_limit. */
#define SL_PQ_DICT_BYTES ((size_t)1 << 20)

struct sl_pq_write_opts {
    int level;                /* zstd level of the pages (0: 3, as the JSONL shards) */
    uint64_t row_group_rows;  /* 0: SL_PQ_ROW_GROUP_ROWS */
    uint64_t row_group_bytes; /* 0: SL_PQ_ROW_GROUP_BYTES */
    const char *text_key;     /* NULL: "text" */
    const char *id_key;       /* NULL: "id" */
    int no_sync;              /* an intermediate file (struct sl_writer_opts) */
};

/* Open `path` (atomic: under a temporary name until sl_writer_commit) or, path NULL, the
 * buffer dst, as a writer that takes JSONL lines (sl_writer_write, sl_doc_write) and
 * writes them as Parquet rows. A line that is not a JSON object fails the write
 * (SL_ERR_FORMAT, naming the file and the line's number). 0 or <0 with a message. */
int sl_pq_writer_open(struct sl_writer **out, const char *path, struct sl_buf *dst,
                      const struct sl_pq_write_opts *opts);

/* The options of --out-format FORMAT ("jsonl.zst" or "parquet") and --row-group-size: o
 * filled and returned for "parquet", NULL for JSONL. */
const struct sl_pq_write_opts *sl_pq_out_opts(struct sl_pq_write_opts *o, const char *format,
                                              uint64_t rows, long level, const char *text_key);

#endif
