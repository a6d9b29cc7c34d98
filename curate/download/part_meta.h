/* struct part_meta: what a partial download file knows of the response it began with (its
 * validators ETag and Last-Modified, and the whole file's size), kept beside it in
 * PART.validator so that a resume can send If-Range and tell another version of the file
 * from the same one.
 *
 * PART.validator is text, one "KEY VALUE" line per known field:
 *   etag "5f3a-1c0e"
 *   last-modified Tue, 07 Jan 2025 10:00:00 GMT
 *   size 3447780
 * It is replaced atomically (PART.validator.tmp, then rename), so a crash leaves the old
 * one or the new one. A file of one line without a key, as earlier versions wrote, is read
 * as that validator (an ETag when it starts with a quote, else a date).
 */
#ifndef SL_DOWNLOAD_PART_META_H
#define SL_DOWNLOAD_PART_META_H

#include <stdint.h>

struct part_meta {
    char etag[256];    /* strong ETag, "" when none */
    char modified[64]; /* Last-Modified, "" when none */
    int64_t size;      /* the whole file's size, -1 when the server did not say */
};

/* "PART.validator" for part_path (the caller frees). */
char *part_meta_path(const char *part_path);

/* Write m as part_path's validators, atomically. 0, or SL_ERR_IO with the message set. */
int part_meta_save(const char *part_path, const struct part_meta *m);

/* Read part_path's validators into m: 1 when there is a readable PART.validator, else 0
 * (m is then empty: no validators, size -1). Values with control bytes or too long for their
 * field are left out. */
int part_meta_load(const char *part_path, struct part_meta *m);

/* Remove PART.validator (and a leftover PART.validator.tmp). */
void part_meta_remove(const char *part_path);

#endif
