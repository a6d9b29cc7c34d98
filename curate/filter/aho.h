/* struct sl_aho: an Aho-Corasick automaton over bytes, for "does the text contain any of
 * these strings" in one pass whatever the number of strings (the URL filter's banned
 * sub-words). Built once, then read by any number of threads.
 *
 * The automaton is a full transition table (a DFA): one row per trie node, one column per
 * byte class (each byte that occurs in a pattern has its own class, every other byte shares
 * class 0, which always leads back to the root), so a step is one table read.
 */
#ifndef SL_FILTER_AHO_H
#define SL_FILTER_AHO_H

#include <stddef.h>
#include <stdint.h>

struct sl_aho {
    uint8_t cls[256];  /* byte -> class */
    unsigned nclass;   /* classes, class 0 included */
    uint32_t *next;    /* nstates * nclass transitions (after sl_aho_build) */
    uint8_t *out;      /* per state: 1 if a pattern ends here or at a suffix of it */
    size_t nstates, cap;
    size_t npatterns;
    int built;
};

void sl_aho_init(struct sl_aho *a);
void sl_aho_release(struct sl_aho *a);
/* Add a pattern (bytes, not copied); an empty pattern is ignored (as pyahocorasick ignores
 * an empty word). Only before sl_aho_build. */
void sl_aho_add(struct sl_aho *a, const char *s, size_t n);
/* Compute the failure links and the full transition table. */
void sl_aho_build(struct sl_aho *a);
/* 1 if some pattern occurs in s[0..n), else 0 (0 when there are no patterns). */
int sl_aho_any(const struct sl_aho *a, const char *s, size_t n);

#endif
