/* Files by path: whether a regular file is there, its size, a copy of it, whether two paths
 * name one file, the names in a directory. The small questions every component asks of a
 * path, answered once (errors and writing rules: core/err.h, core/atomic.h). */
#ifndef SL_FILE_H
#define SL_FILE_H

#include <stdint.h>

struct sl_strlist;

/* 1 when path names a regular file (after symbolic links), else 0; errors are a 0. */
int sl_file_exists(const char *path);
/* The size in bytes of what path names (after symbolic links), or 0 when it cannot be
 * stat'ed: for counting bytes written, where a missing file counts nothing. */
uint64_t sl_file_size(const char *path);
/* Copy the bytes of from to to, written atomically (core/atomic.h: a temporary name, synced,
 * renamed), so that to is either absent or whole. 0, or SL_ERR_IO naming the file that
 * could not be opened, read or written. */
int sl_copy_file(const char *from, const char *to);
/* 1 when a and b name the same file or directory (the same device and inode, after symbolic
 * links), else 0; a path that cannot be stat'ed, or NULL, is a 0. */
int sl_same_file(const char *a, const char *b);
/* The names in directory dir, without "." and "..", sorted (strcmp), pushed to names (the
 * caller releases it with sl_strlist_release). 0, or SL_ERR_IO naming the directory, with
 * errno left as opendir set it (for a caller whose message says what the directory is). */
int sl_dir_list(const char *dir, struct sl_strlist *names);

#endif
