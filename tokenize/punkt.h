/* struct punkt: NLTK's Punkt sentence splitter (PunktSentenceTokenizer.tokenize, NLTK
 * 3.10.4, Kiss & Strunk 2006), giving the same sentences as NLTK for the same parameters
 * (tokenize/punkt_params.h) and text:
 *
 *  1. candidate breaks: each ".", "?" or "!" followed by a non-word character, or by
 *     whitespace and another token (the period-context regex); with keep_newlines,
 *     Megatron-LM's variant (its CustomLanguageVars): the word before the mark and the
 *     whitespace after it belong to the candidate, so a sentence keeps its trailing
 *     newlines, and a mark at the very end of the text is none;
 *  2. for each, the text from the word before it to the token after it is cut into word
 *     tokens (tokenize/punkt_word.h) and annotated: the first pass by type (abbreviations,
 *     ellipses, sentence ends), the second by context (collocations, the orthographic
 *     heuristic, initials and ordinal numbers, frequent sentence starters); the candidate
 *     breaks when a token before the last one ends a sentence. Candidates whose word
 *     overlaps the one before are passed over, as NLTK passes them ("!!!");
 *  3. the last sentence ends at the text's last non-whitespace character;
 *  4. realign: closing quotes and brackets after a break move to the sentence before.
 * Sentences never hold nothing: an empty one is dropped.
 *
 * Positions are bytes of UTF-8 (NLTK counts characters; the sentences are the same). A
 * splitter holds scratch space: one per thread, over parameters they share. */
#ifndef SL_TOKENIZE_PUNKT_H
#define SL_TOKENIZE_PUNKT_H

#include <stddef.h>

struct punkt_params;

struct punkt_span {
    size_t start, end; /* a sentence: text[start..end) */
};

struct punkt_spans {
    struct punkt_span *v;
    size_t n, cap;
};

void punkt_spans_release(struct punkt_spans *s);

/* A splitter over p (borrowed: it must outlive the splitter). keep_newlines: Megatron's
 * --keep-newlines language variables (step 1). */
struct punkt *punkt_new(const struct punkt_params *p, int keep_newlines);
void punkt_free(struct punkt *k);

/* Append the sentences of text[0..n) to out, in order. */
void punkt_split(struct punkt *k, const char *text, size_t n, struct punkt_spans *out);

/* The same, text cut first into pieces of max_chars characters (the last one shorter),
 * each split on its own: Megatron-LM's preprocess_data.py feeds Punkt 1,000,000
 * characters at a time. Spans are relative to text. */
void punkt_split_pieces(struct punkt *k, const char *text, size_t n, size_t max_chars,
                        struct punkt_spans *out);

#endif
