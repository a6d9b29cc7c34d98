/* The compiled-vocabulary cache: a byte-level BPE vocabulary, once loaded from its files,
 * is saved with its hash tables in a file named after a hash of those files, so that the
 * next process uses its tables instead of building them again (o200k_base: building takes
 * most of 0.1-0.2 CPU s; mapping the 16 MB file and checking it, a few milliseconds).
 *
 * Where: $SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice, else $HOME/.cache/sluice;
 * SLUICE_CACHE_DIR set but empty turns the cache off. A file is written under a temporary
 * name and renamed, so processes that start together (MPI ranks) never read a partial one.
 * A file that is missing, cut, of another version or whose checksum fails is ignored and
 * written again; failing to write is not an error. Layout: docs/formats/bpe-cache.md. */
#ifndef SL_TOKENIZE_BPE_CACHE_H
#define SL_TOKENIZE_BPE_CACHE_H

#include <stddef.h>
#include <stdint.h>

struct bpe;
struct sl_buf;

/* The key of a vocabulary: a hash of how it was loaded (`how`, e.g. "tiktoken", and an
 * integer argument such as the pre-tokenizer asked for) and of the bytes of its files (b
 * may be NULL: no second file, which differs from an empty one). */
struct bpe_cache_key {
    uint64_t lo, hi;
};
struct bpe_cache_key bpe_cache_key(const char *how, int arg, const void *a, size_t alen,
                                   const void *b, size_t blen);
/* The same key for the contents of files a and b (b NULL: none), as sl_read_file reads
 * them, never copied whole (an uncompressed file is hashed in a mapping of it, a compressed
 * one a piece at a time): 0, or the reader's error, which names the file. */
int bpe_cache_key_files(struct bpe_cache_key *k, const char *how, int arg, const char *a,
                        const char *b);

/* The cached vocabulary of this key, or NULL (no cache, no file, or a file that does not
 * check out). Its tables lie in a read-only mapping of the file, unmapped by bpe_free. */
struct bpe *bpe_cache_get(struct bpe_cache_key key);
/* Save b under key (best effort: nothing happens when the cache is off or not writable). */
void bpe_cache_put(const struct bpe *b, struct bpe_cache_key key);

/* The cache folder (caller frees), or NULL when the cache is off. */
char *bpe_cache_dir(void);
/* 1 when the cache is on (a loader then computes the key; off, it need not). */
int bpe_cache_on(void);

/* The serialised form, for tests and fuzzing. bpe_cache_read_mem (data 8-byte aligned, as
 * malloc gives it: the tables are checked where they lie, then copied) returns 0 with *out, or
 * SL_ERR_FORMAT naming what is wrong (a different key counts as wrong). check_sum 0 skips
 * the checksum and the key, so that a fuzzer reaches the checks behind them; a file that
 * passes those encodes any text without reading outside its tables. */
void bpe_cache_write_buf(const struct bpe *b, struct bpe_cache_key key, struct sl_buf *out);
int bpe_cache_read_mem(struct bpe **out, const void *data, size_t n, struct bpe_cache_key key,
                       int check_sum);

/* 1 when b came from the cache. */
int bpe_from_cache(const struct bpe *b);

#endif
