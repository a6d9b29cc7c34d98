/* Shingles: the 64-bit hashes (XXH3, seeded) of every run of n consecutive words
 * ("words:5") or n consecutive code points ("chars:24") of a (normalised) text.
 *
 * Words are separated by ASCII whitespace; a word shingle is the text from the first
 * word's first byte to the last word's last byte, so with whitespace normalisation off the
 * spacing inside it counts. A text with at least one word (or code point) but fewer than
 * n is hashed whole as one shingle, and the caller is told so; an empty (or all-space)
 * text has no shingles. Hashes come out in text order, duplicates included; sort them
 * with dd_u64s_sort_unique for a set.
 */
#ifndef SL_DEDUP_SHINGLE_H
#define SL_DEDUP_SHINGLE_H

#include <stddef.h>
#include <stdint.h>

/* A growable array of 64-bit values; zero-initialised is empty; owner calls _release. */
struct dd_u64s {
    uint64_t *v;
    size_t n, cap;
};

void dd_u64s_push(struct dd_u64s *a, uint64_t x);
void dd_u64s_reserve(struct dd_u64s *a, size_t extra);
void dd_u64s_release(struct dd_u64s *a);
/* Sort ascending and drop repeats. */
void dd_u64s_sort_unique(struct dd_u64s *a);
/* Sort n values ascending (radix sort; stable, O(n)). */
void dd_sort_u64(uint64_t *v, size_t n);

/* Jaccard similarity of two sorted, repeat-free arrays (two empty sets: 1). */
double dd_jaccard(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);

#define DD_SHINGLE_MAX_WORDS 64
#define DD_SHINGLE_MAX_CHARS 1024

struct dd_shingler {
    int words;   /* 1: word n-grams; 0: code point n-grams */
    unsigned n;  /* 1..DD_SHINGLE_MAX_WORDS (words) or ..DD_SHINGLE_MAX_CHARS (chars) */
    uint64_t seed;
};

/* Parse "words:N" or "chars:N". 0 or SL_ERR_USAGE. */
int dd_shingler_parse(struct dd_shingler *s, const char *spec, uint64_t seed);
/* "words:5" into out. */
const char *dd_shingler_name(const struct dd_shingler *s, char *out, size_t n);

/* Append the shingle hashes of text[0..len) to out. *whole (may be NULL) is set to 1 when
 * the text was shorter than one shingle and hashed whole, else 0. Returns the number of
 * hashes appended. */
size_t dd_shingle(const struct dd_shingler *s, const char *text, size_t len, struct dd_u64s *out,
                  int *whole);

#endif
