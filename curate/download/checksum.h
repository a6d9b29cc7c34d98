/* struct checksum_list: expected digests of downloaded files, read from sha256sum /
 * md5sum style lines ("HEX  NAME" or "HEX *NAME"; '#' comments and blank lines ignored),
 * and file digests computed with libcrypto (loaded when first used). The algorithm follows
 * from the digest length (64 hex digits: sha256, 32: md5).
 */
#ifndef SL_DOWNLOAD_CHECKSUM_H
#define SL_DOWNLOAD_CHECKSUM_H

#include <stddef.h>

struct checksum_entry {
    char *name; /* base name the digest is for */
    char hex[65];
    int sha256; /* 1: sha256, 0: md5 */
    size_t seq; /* its place in the list (entries are kept sorted by name) */
};

struct checksum_list {
    struct checksum_entry *v;
    size_t n;
};

/* Read a list. 0, SL_ERR_IO, or SL_ERR_FORMAT naming FILE:LINE. */
int checksum_list_load(struct checksum_list *l, const char *path);
void checksum_list_release(struct checksum_list *l);
/* The entry for a base name (the last one listed wins), or NULL. O(log n). */
const struct checksum_entry *checksum_list_find(const struct checksum_list *l, const char *name);

/* Digest of a file as lowercase hex into out (65 bytes). 0, SL_ERR_IO, or
 * SL_ERR_UNSUPPORTED when libcrypto cannot be loaded. */
int checksum_file(const char *path, int sha256, char out[65]);
/* The same of n bytes in memory. */
int checksum_mem(const void *data, size_t n, int sha256, char out[65]);

#endif
