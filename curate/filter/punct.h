/* Punctuation sets of the recipes we reproduce: datatrove's punctuation characters (a word
 * made only of these is a "symbol word" for Gopher), its terminal punctuation (FineWeb's
 * line endings), and the marks spaCy's sentencizer ends a sentence at. Code point lists
 * are facts read from those projects (docs/filters.md). */
#ifndef SL_FILTER_PUNCT_H
#define SL_FILTER_PUNCT_H

#include <stdint.h>

/* datatrove PUNCTUATION (ASCII and CJK punctuation, C0/C1 controls but \t \n) or its
 * terminal punctuation. */
int sl_punct_is_symbol(uint32_t cp);
/* datatrove TERMINAL_PUNCTUATION (159 sentence-final marks of many scripts). */
int sl_punct_is_terminal(uint32_t cp);
/* spaCy's sentencizer marks (128). */
int sl_punct_is_sentence_end(uint32_t cp);

#endif
