/* struct sl_lineset: a large read-only set of strings, the lines of a list file (the URL
 * filter's 4.56 M blocked domains). Compact for its size: the file's own bytes are the
 * strings (each line ended by a NUL in place), and one 64-bit slot per entry holds its
 * offset and 32 bits of its hash, so a lookup is one hash, one slot read and one compare.
 *
 * Lines are read as Python's text mode reads them (datatrove's list reader): a line ends at
 * \n, \r\n or \r; a line whose first byte is '#' is a comment; every other line counts
 * with the white space around it removed (so an empty line is the empty string).
 */
#ifndef SL_FILTER_LINESET_H
#define SL_FILTER_LINESET_H

#include <stddef.h>
#include <stdint.h>

struct sl_lineset {
    char *text;      /* the file's bytes, lines NUL-terminated in place */
    size_t len;
    uint64_t *slot;  /* offset << 32 | hash >> 32; 0: empty (offsets are stored + 1) */
    size_t mask;     /* slots - 1 (a power of two) */
    size_t n;        /* distinct entries */
};

void sl_lineset_init(struct sl_lineset *s);
void sl_lineset_release(struct sl_lineset *s);
/* Index the lines of text[0..len) (malloc'ed; the set takes it, also on failure). A set
 * already filled keeps its entries only if it is empty: callers load once. 0, or
 * SL_ERR_TOOBIG for a text over 4 GiB. */
int sl_lineset_load(struct sl_lineset *s, char *text, size_t len);
/* Add one string (copied) to a loaded (or empty) set: extra entries from a config. */
void sl_lineset_add(struct sl_lineset *s, const char *str, size_t n);
int sl_lineset_has(const struct sl_lineset *s, const char *str, size_t n);

/* Read the members `names[i]` (matched by their last path component) of a list source
 * into bufs[i] (malloc'ed, NUL-terminated, lens[i]): `path` is a directory holding them,
 * or an archive libarchive reads (datatrove's url_filterblacklistsv0_3_0.tar.gz). A member
 * missing is an error naming the source. */
int sl_lineset_read_members(const char *path, const char *const *names, size_t nnames,
                            char **bufs, size_t *lens);

#endif
