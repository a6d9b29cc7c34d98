/* safetensors files: an 8-byte little-endian header length, a JSON header mapping tensor
 * names to {dtype, shape, data_offsets} (plus an optional "__metadata__" map of strings),
 * then the raw little-endian tensor bytes. Layout: docs/formats/checkpoint.md.
 *
 * The writer is atomic (a temporary name renamed at the end). The reader maps the file and
 * checks the header length, the JSON, every dtype, shape and byte range against the file
 * size before any tensor is used, so a truncated or damaged file is an error that names
 * the file, never a crash.
 */
#ifndef SL_TRAIN_SAFETENSORS_H
#define SL_TRAIN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 4

struct st_tensor {
    const char *name;
    const char *dtype; /* "F32", "I32", "BF16", "F16", "I64", "U8" ... */
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data; /* little-endian bytes */
    size_t nbytes;
};

/* Bytes per element of a dtype name, 0 when unknown. */
size_t st_dtype_size(const char *dtype);

/* Write n tensors (in the given order) and, when metadata is not NULL, a "__metadata__"
 * entry from NULL-terminated key/value string pairs. */
int st_write(const char *path, const struct st_tensor *t, size_t n, const char *const *metadata);

/* The same, with the bytes of tensor i produced by fill(arg, i, buf, nbytes) just before they
 * are written (t[i].data is ignored): only one tensor is in memory at a time. A non-zero
 * return from fill aborts the write (the file is not created) and is returned. */
typedef int (*st_fill_fn)(void *arg, size_t i, void *buf, size_t nbytes);
int st_write_fill(const char *path, const struct st_tensor *t, size_t n,
                  const char *const *metadata, st_fill_fn fill, void *arg);

struct st_file;

/* Open and validate. Errors name the file: missing, truncated (header or data), header not
 * JSON, unknown dtype, shape/size disagreement, ranges outside the data or overlapping. */
int st_open(struct st_file **out, const char *path);
/* Validate a file held in memory (the bytes must outlive the st_file); for fuzzing. */
int st_open_mem(struct st_file **out, const void *data, size_t n, const char *name);
void st_close(struct st_file *f);

size_t st_count(const struct st_file *f);
/* Tensor i (in header order) or the one named `name` (NULL when absent). The pointers
 * stay valid until st_close. */
const struct st_tensor *st_at(const struct st_file *f, size_t i);
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* A metadata value or NULL. */
const char *st_metadata(const struct st_file *f, const char *key);

/* Copy a tensor that must have the given dtype and element count into out; errors name
 * the file and the tensor. */
int st_read_f32(const struct st_file *f, const char *name, float *out, size_t count);

#endif
