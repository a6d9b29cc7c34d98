/* The word lists built into the binary (see curate/filter/lexicons/SOURCE.md): stop words
 * of the 24 mC4 default languages, the C4 bad-words lists, spaCy's English tokenizer
 * special cases, and datatrove's URL word lists. The returned bytes are static; never freed. */
#ifndef SL_FILTER_LEXICONS_H
#define SL_FILTER_LEXICONS_H

#include <stddef.h>

/* Bytes of the list of `kind` ("stopwords", "badwords", "spacy-en-exceptions",
 * "url-banned-words", "url-soft-banned-words", "url-banned-subwords") for language `lang`
 * (ISO 639-1; ignored for the exceptions and the URL lists), or NULL if there is none. */
const char *sl_lexicon(const char *kind, const char *lang, size_t *len);

/* The languages that have a list of `kind`, as a static NULL-terminated array. */
const char *const *sl_lexicon_langs(const char *kind);

#endif
