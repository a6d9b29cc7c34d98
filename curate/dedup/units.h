/* Dedup of the pieces of documents across a dedup corpus (curate/dedup/corpus.h), the
 * engine of `sluice dedup paragraphs` (curate/dedup/cmd_dedup_paragraphs.c).
 *
 * A document's text is cut at every '\n' into units (a text ending in '\n' ends with an
 * empty unit, as Dolma's deduper splits; an empty text has none, as Dolma skips it). A unit's key is
 *   DD_UNIT_PARAGRAPH  its bytes as they are (Dolma's paragraph deduper);
 *   DD_UNIT_LINE       its bytes with ASCII whitespace stripped at both ends, lowercased
 *                      as --norm lower does (C4's line dedup, TFDS c4_utils).
 * Every unit whose key was seen earlier in the corpus — an earlier document in input
 * order, or earlier in the same document — is removed; the first occurrence stays. With
 * skip_empty, units whose key is empty or all whitespace are kept and never compared.
 *
 * DD_UNIT_SPAN3 compares spans of DD_SPAN_SENTENCES consecutive sentences instead (the C4
 * paper's "three-sentence span", as datatrove's sentence dedup reads it): the text is split
 * into sentences by Punkt (cfg->punkt); span i is sentences i..i+2, its key the text from
 * the first's start to the last's end normalised with DD_NORM_ALL; a text of fewer
 * sentences has no span. A span seen earlier removes its sentences, each with the
 * whitespace up to the next sentence (the last: to the end of the text).
 *
 * Two indexes, both giving the same answer for any number of ranks:
 *   exact  the 128-bit hashes (XXH3) of the keys are partitioned by value over the ranks,
 *          sorted, and all but the first (by document, then unit) of each equal run
 *          removed: exact up to hash collisions (about n^2 / 2^129 for n units);
 *   bloom  the hashes go to the parts of one Bloom filter (part by hash, parts spread
 *          over the ranks) and each part tests-then-inserts its units in
 *          input order; a unit is removed when the filter says it was seen, so a unit seen
 *          for the first time is removed with the filter's false-positive probability.
 */
#ifndef SL_DEDUP_UNITS_H
#define SL_DEDUP_UNITS_H

#include <stddef.h>
#include <stdint.h>

struct dd_corpus;
struct dd_fate;
struct sl_buf;
struct punkt;
struct punkt_spans;

enum dd_unit { DD_UNIT_PARAGRAPH, DD_UNIT_LINE, DD_UNIT_SPAN3 };

/* sentences in a span of DD_UNIT_SPAN3: C4's three */
#define DD_SPAN_SENTENCES 3

/* most parts of the Bloom filter: the number of parts depends only on the count it is sized
 * for (one part per DD_BLOOM_PART_MIN of it, 1 to DD_BLOOM_PARTS), never on the number of
 * ranks, so that which part holds a key and what it holds are the same for any rank count;
 * 64 parts spread over up to 64 ranks. A part sized for 65536 keys holds within a few
 * percent of its share (the spread of a share of n is about sqrt(n)), so its false-positive
 * rate stays close to the whole filter's. */
#define DD_BLOOM_PARTS 64
#define DD_BLOOM_PART_MIN 65536

struct dd_units_cfg {
    enum dd_unit unit;
    int skip_empty;    /* keep empty/blank units, uncompared */
    int bloom;         /* the Bloom index instead of the exact one */
    double fp_rate;    /* bloom: the false-positive rate it is sized for, in (0, 1) */
    uint64_t expected; /* bloom: the number of distinct units sized for; 0: every unit counted */
    struct punkt *punkt; /* DD_UNIT_SPAN3: the sentence splitter (the caller's) */
};

/* What the search saw (the same on every rank). */
struct dd_units_stats {
    uint64_t units;       /* units of every document, compared or not (span3: sentences) */
    uint64_t compared;    /* units whose key was indexed (span3: spans) */
    uint64_t bloom_bits;  /* bloom: bits of the whole filter (all parts) */
    unsigned bloom_parts; /* bloom: its parts */
    uint64_t bloom_count; /* bloom: the count it was sized for */
    unsigned bloom_k;     /* bloom: hash functions */
};

/* Bloom sizing for n keys at false-positive rate p: parts (above), bits
 * m = ceil(-n ln p / (ln 2)^2) rounded up to whole 64-bit words of each part, hashes
 * k = round(m / n * ln 2), 1 to 64. */
void dd_bloom_size(uint64_t n, double p, uint64_t *bits, unsigned *parts, unsigned *k);

/* The units of text[0..len): calls fn(ctx, index, start, end) for each, [start, end) its
 * bytes without the '\n'. */
typedef int (*dd_unit_fn)(void *ctx, uint32_t index, size_t start, size_t end);
int dd_units_each(const char *text, size_t len, dd_unit_fn fn, void *ctx);

/* The key of unit text[0..len) into tmp (or pointing into text); 0 when the unit is not
 * compared (skip_empty and blank). */
int dd_unit_key(const struct dd_units_cfg *cfg, const char *s, size_t len, struct sl_buf *tmp,
                const char **key, size_t *klen);

/* The sentences of text[0..len) into out (emptied first): DD_UNIT_SPAN3's split. */
void dd_span_sentences(const struct dd_units_cfg *cfg, const char *text, size_t len,
                       struct punkt_spans *out);

/* Collective: every document of c split and hashed (progress "dedup paragraphs:
 * hashing"); on rank 0 the Bloom filter's size is logged before anything is read when
 * cfg->expected is given, else after the hashing pass has counted the units, before the
 * filter is made. *removed gets
 * this rank's removed units (gid, unit index in .keep; span3: the span's first
 * sentence), sorted by gid then index. 0, or a
 * negative enum sl_err with its message (*removed NULL). */
int dd_units_find(struct dd_corpus *c, const struct dd_units_cfg *cfg, struct dd_fate **removed,
                  size_t *nr, struct dd_units_stats *st);

#endif
