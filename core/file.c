/* Files by path: existence, size, an atomic copy, identity, a directory's names. */
#include "core/file.h"

#include "core/atomic.h"
#include "core/err.h"
#include "core/options.h"

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sl_file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

uint64_t sl_file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

int sl_copy_file(const char *from, const char *to)
{
    int fd = open(from, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_err_set(SL_ERR_IO, "cannot open '%s': %s", from, strerror(errno));
    struct sl_atomic_file f;
    int rc = sl_atomic_open(&f, to);
    if (rc)
        goto out;
    char buf[1 << 16]; /* 64 KiB a read: the calls cost little beside the I/O */
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = sl_err_set(SL_ERR_IO, "cannot read '%s': %s", from, strerror(errno));
        else if (n > 0)
            rc = sl_atomic_write(&f, buf, (size_t)n);
        if (n <= 0 || rc)
            break;
    }
    if (rc)
        sl_atomic_abort(&f);
    else
        rc = sl_atomic_commit(&f);
out:
    close(fd);
    return rc;
}

int sl_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sl_dir_list(const char *dir, struct sl_strlist *names)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        sl_err_set(SL_ERR_IO, "cannot read the directory '%s': %s", dir, strerror(e));
        errno = e;
        return SL_ERR_IO;
    }
    size_t first = names->n;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            sl_strlist_push(names, de->d_name);
    closedir(d);
    if (names->n - first > 1)
        qsort(names->v + first, names->n - first, sizeof(char *), cmp_name);
    return 0;
}
