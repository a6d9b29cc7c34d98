/* A Thrift compact-protocol encoder: the structs of a Parquet footer and page headers
 * (core/parquet_write.c), written into a struct sl_buf.
 *
 * The protocol (Apache Thrift's compact protocol specification): a struct is its fields
 * then a STOP byte (0); a field header is one byte, the field id's delta from the previous
 * field of the same struct in the high nibble (1..15) and the type (enum sl_thrift_ctype,
 * core/parquet_format.h) in the low nibble, or, when the delta does not fit, the type byte
 * then the id as a zigzag varint; a bool field's value is its type (TRUE or FALSE) and has
 * no bytes after the header; i16, i32 and i64 are zigzag ULEB128 varints; a binary (a
 * string) is its length as a varint then its bytes; a list is one byte, the count (0..14)
 * in the high nibble and the element type in the low one, or 0xF and the type then the
 * count as a varint, followed by the elements.
 *
 *   struct sl_tenc t;  sl_tenc_init(&t, &buf);
 *   sl_tenc_begin(&t);                               the top-level struct
 *   sl_tenc_i32(&t, 1, 2);                           field 1, i32 2
 *   sl_tenc_list(&t, 2, SL_TC_STRUCT, n);            field 2, a list of n structs:
 *   for each: sl_tenc_begin(&t); ... sl_tenc_end(&t);
 *   sl_tenc_end(&t);                                 STOP
 * Memory errors of the buffer are kept and returned by sl_tenc_end (0 or SL_ERR_NOMEM).
 */
#ifndef SL_THRIFT_ENC_H
#define SL_THRIFT_ENC_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

/* Structs nest at most this deep (a Parquet footer: FileMetaData > RowGroup > ColumnChunk
 * > ColumnMetaData > Statistics is 5; LogicalType's member struct inside SchemaElement 3). */
#define SL_TENC_DEPTH 8

struct sl_tenc {
    struct sl_buf *out;
    int16_t last[SL_TENC_DEPTH]; /* the previous field id of each open struct */
    int depth;                   /* open structs */
    int rc;                      /* the first error */
};

void sl_tenc_init(struct sl_tenc *t, struct sl_buf *out);
/* Open a struct: the top level, a list's element, or after sl_tenc_field(.., SL_TC_STRUCT). */
void sl_tenc_begin(struct sl_tenc *t);
/* Close it (STOP). Returns the first error so far (0, SL_ERR_NOMEM, or SL_ERR_STATE for
 * structs nested deeper than SL_TENC_DEPTH or closed more than opened). */
int sl_tenc_end(struct sl_tenc *t);

/* A field header of field `id` with compact type `type` (for a struct field, then
 * sl_tenc_begin; the typed helpers below write header and value). */
void sl_tenc_field(struct sl_tenc *t, int16_t id, int type);
void sl_tenc_bool(struct sl_tenc *t, int16_t id, int v);
void sl_tenc_i32(struct sl_tenc *t, int16_t id, int32_t v);
void sl_tenc_i64(struct sl_tenc *t, int16_t id, int64_t v);
void sl_tenc_binary(struct sl_tenc *t, int16_t id, const void *p, size_t n);
void sl_tenc_string(struct sl_tenc *t, int16_t id, const char *s);
/* Field `id`, a list of n elements of compact type `elem`; the elements follow. */
void sl_tenc_list(struct sl_tenc *t, int16_t id, int elem, size_t n);

/* List elements: an i32 (enums) and a string. */
void sl_tenc_elem_i32(struct sl_tenc *t, int32_t v);
void sl_tenc_elem_string(struct sl_tenc *t, const char *s);

/* An unsigned LEB128 varint (also the RLE/bit-packing hybrid's run headers). */
void sl_tenc_uvarint(struct sl_tenc *t, uint64_t v);

#endif
