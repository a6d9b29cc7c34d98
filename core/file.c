/* Files by path: existence, size and an atomic copy. */
#include "core/file.h"

#include "core/atomic.h"
#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
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
