/* struct sl_words: splitting text into words, as the filter recipes define a word.
 *
 * Three ways, chosen per filter (and per document language):
 *   SL_WORDS_SPACE  Python str.split(): runs of non-whitespace (NeMo Curator's splitter)
 *   SL_WORDS_RULES  the rules of spaCy's tokenizer, which datatrove uses for English and
 *                   most other languages: whitespace split, then prefixes, suffixes,
 *                   infixes and special cases peeled off each piece ("don't" -> "do"
 *                   "n't", "(word)." -> "(" "word" ")" "."); URLs stay whole
 *   SL_WORDS_CHARS  for languages written without spaces (zh, ja, th, lo, km, my, bo):
 *                   SL_WORDS_RULES, then every Han, kana, Thai, Lao, Khmer, Myanmar or
 *                   Tibetan character is a word by itself (a dictionary-free fallback)
 * Words are spans of the input; nothing is copied. docs/filters.md lists where the rules
 * differ from spaCy.
 *
 * The object holds the special-case table and a compiled URL pattern; it is read-only
 * after sl_words_new and may be shared by threads.
 */
#ifndef SL_FILTER_WORDS_H
#define SL_FILTER_WORDS_H

#include <stddef.h>
#include <stdint.h>

enum sl_words_mode { SL_WORDS_SPACE, SL_WORDS_RULES, SL_WORDS_CHARS };

struct sl_word {
    uint32_t off, len; /* bytes into the text */
    uint32_t nchar;    /* code points */
};

/* A growable array of words (caller-owned; reused between documents). */
struct sl_wordvec {
    struct sl_word *v;
    size_t n, cap;
};

void sl_wordvec_release(struct sl_wordvec *v);

struct sl_words;

/* Build the splitter. 0 or an error (bad built-in data; never expected). */
int sl_words_new(struct sl_words **out);
void sl_words_free(struct sl_words *w);

/* The mode for a language code: SL_WORDS_CHARS for zh, ja, th, lo, km, my, bo (and their
 * variants such as zh-Hant); SL_WORDS_RULES otherwise. */
enum sl_words_mode sl_words_mode_for_lang(const char *lang);

/* Split s[0..n) into words, replacing the contents of out. */
void sl_words_split(const struct sl_words *w, enum sl_words_mode mode, const char *s, size_t n,
                    struct sl_wordvec *out);

/* spaCy's sentencizer over the words of one line: the number of sentences (0 when there
 * are no words). A sentence ends after a word that is a sentence-final mark ('.', '!',
 * '?', '。', ...) once a word follows that is neither punctuation nor such a mark. */
size_t sl_words_count_sentences(const char *s, const struct sl_wordvec *words);

#endif
