/* Megatron-LM MMIDIDX token shards: PREFIX.bin (tokens) + PREFIX.idx (index).
 *
 * Byte-compatible with megatron/core/datasets/indexed_dataset.py; the layout is in
 * docs/formats/megatron-idx.md. The writer streams tokens to PREFIX.bin and keeps only the
 * index arrays in memory; both files appear under their final names at commit, never
 * partially. The reader maps both files and checks magic, version, dtype and that the
 * file sizes agree with the header before touching any data; the index arrays are not
 * aligned in the file and are always read with memcpy.
 */
#ifndef SL_DATASET_IDX_H
#define SL_DATASET_IDX_H

#include <stddef.h>
#include <stdint.h>

/* dtype codes of the token array (Megatron's DType enum). */
enum idx_dtype {
    IDX_U8 = 1,
    IDX_I8 = 2,
    IDX_I16 = 3,
    IDX_I32 = 4,
    IDX_I64 = 5,
    IDX_F64 = 6,
    IDX_F32 = 7,
    IDX_U16 = 8,
};

#define IDX_HEADER_SIZE 34

/* Megatron's rule: uint16 when the vocabulary has fewer than 65500 ids, else int32. */
enum idx_dtype idx_dtype_for_vocab(uint64_t vocab_size);
/* Bytes per token, or 0 for an unknown code. */
size_t idx_dtype_size(int code);
/* "uint16", "int32", ... or NULL. */
const char *idx_dtype_name(int code);

/* ---- writing ---------------------------------------------------------------------- */

struct idx_writer;

/* Start PREFIX.bin/.idx (written as temporaries until idx_writer_commit). */
int idx_writer_open(struct idx_writer **out, const char *prefix, enum idx_dtype dtype);
/* The same for a part that a later step copies or links into the real output
 * (idx_writer_append_shard, idx_link_shard) and that a resumed run checks before using
 * it: committed without fsync, so that a run of many parts does not wait on the disk for
 * each (the output's own commit, or the link, syncs the bytes). */
int idx_writer_open_part(struct idx_writer **out, const char *prefix, enum idx_dtype dtype);
/* Append one sequence (the usual case: a whole document). Token ids must fit the dtype
 * (SL_ERR_FORMAT otherwise). */
int idx_writer_add_sequence(struct idx_writer *w, const uint32_t *tokens, size_t n);
/* Close the current document (its sequences are those added since the last call). A
 * document without sequences is allowed: it repeats the previous bookend, as Megatron's
 * add_document([]) does. */
int idx_writer_end_document(struct idx_writer *w);
/* Both in one: one sequence that is one document. */
int idx_writer_add_document(struct idx_writer *w, const uint32_t *tokens, size_t n);
/* Append a whole existing shard (merge): its tokens are copied, its index shifted. The
 * dtype must match. */
int idx_writer_append_shard(struct idx_writer *w, const char *prefix);
/* PREFIX.bin/.idx as the whole output `out`: the verified shard given the output's names
 * by hard links (its .bin first), no token copied. SL_ERR_UNSUPPORTED (no message, nothing
 * changed) where the file system cannot: append it to a writer instead. */
int idx_link_shard(const char *prefix, const char *out, enum idx_dtype dtype);
uint64_t idx_writer_sequences(const struct idx_writer *w);
uint64_t idx_writer_documents(const struct idx_writer *w);
uint64_t idx_writer_tokens(const struct idx_writer *w);
/* Write PREFIX.idx, sync and rename both files; frees w. */
int idx_writer_commit(struct idx_writer *w);
/* Remove the temporaries; frees w. NULL is a no-op. */
void idx_writer_abort(struct idx_writer *w);

/* ---- reading ---------------------------------------------------------------------- */

struct idx_reader;

/* Map PREFIX.idx and PREFIX.bin and check their layout, so that every reader refuses what
 * `dataset verify` refuses. Errors name the file: missing file, bad magic (with a hint for
 * fairseq and TNTIDX indexes), version, dtype, an .idx whose size disagrees with its
 * header, sequences not laid end to end from byte 0, a negative length, a .bin of another
 * size than the sequences cover (shorter, or longer: tokens of another dtype), document
 * entries not from 0 to the sequence count in order. O(sequences). */
int idx_reader_open(struct idx_reader **out, const char *prefix);
void idx_reader_close(struct idx_reader *r);

int idx_reader_dtype(const struct idx_reader *r);
uint64_t idx_reader_sequences(const struct idx_reader *r);
/* Number of documents (document_indices has one entry more). */
uint64_t idx_reader_documents(const struct idx_reader *r);
uint64_t idx_reader_tokens(const struct idx_reader *r);
const char *idx_reader_prefix(const struct idx_reader *r);

/* Tokens in sequence i (i < sequences). */
uint32_t idx_reader_seq_len(const struct idx_reader *r, uint64_t i);
/* Byte offset of sequence i in .bin. */
uint64_t idx_reader_seq_ptr(const struct idx_reader *r, uint64_t i);
/* document_indices[d] for d <= documents. */
uint64_t idx_reader_doc_index(const struct idx_reader *r, uint64_t d);
/* Copy n tokens of sequence i from token `offset` on into out (widened to uint32; int
 * dtypes with negative values are an error). 0 or SL_ERR_FORMAT / SL_ERR_TOOBIG when the
 * range is outside the sequence. */
int idx_reader_read(const struct idx_reader *r, uint64_t i, uint64_t offset, size_t n,
                    uint32_t *out);
/* Raw pointer to the start of the token array in the mapping (for zero-copy loaders). */
const void *idx_reader_bin(const struct idx_reader *r);

/* What opening does not check: with max_token > 0, that every token is below max_token
 * (reads the whole .bin). The message names the first violation. */
int idx_reader_verify(const struct idx_reader *r, uint64_t max_token);

#endif
