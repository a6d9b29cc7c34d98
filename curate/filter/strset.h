/* struct sl_strset: a set of byte strings with an integer value each (word lists,
 * tokenizer special cases). Open addressing on 64-bit hashes; the strings are copied into
 * the set's own arena. Built once, then read by any number of threads.
 */
#ifndef SL_FILTER_STRSET_H
#define SL_FILTER_STRSET_H

#include <stddef.h>
#include <stdint.h>

struct sl_strset_slot {
    uint64_t hash;
    uint32_t off, len; /* in the arena; len == UINT32_MAX marks an empty slot */
    int64_t value;
};

struct sl_strset {
    struct sl_strset_slot *slots;
    size_t cap, n; /* cap is a power of two */
    char *arena;
    size_t arena_len, arena_cap;
};

void sl_strset_init(struct sl_strset *s);
void sl_strset_release(struct sl_strset *s);
/* Add (or update the value of) a string. Returns 1 if it was new. */
int sl_strset_add(struct sl_strset *s, const char *str, size_t n, int64_t value);
/* The slot of str, or NULL. */
const struct sl_strset_slot *sl_strset_find(const struct sl_strset *s, const char *str, size_t n);
static inline int sl_strset_has(const struct sl_strset *s, const char *str, size_t n)
{
    return sl_strset_find(s, str, n) != NULL;
}
static inline const char *sl_strset_str(const struct sl_strset *s, const struct sl_strset_slot *e)
{
    return s->arena + e->off;
}
/* The next line of a word list at *p (before end), without the spaces, tabs and CRs around
 * it, in [*a, *b); *p moves past its newline. */
void sl_strset_next_line(const char **p, const char *end, const char **a, const char **b);
/* Add every line of a text (trimmed of spaces and \r; empty lines and lines starting with
 * '#' when skip_comments is set are left out), each with value 1; with `lower`, ASCII and
 * Unicode letters are lower-cased first. Returns the number of lines added. */
size_t sl_strset_add_lines(struct sl_strset *s, const char *text, size_t n, int lower,
                           int skip_comments);

#endif
