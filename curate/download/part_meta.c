/* The validators of a partial download file, in PART.validator beside it. */
#include "curate/download/part_meta.h"

#include "curate/download/resp_head.h"

#include "core/err.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The largest PART.validator read: the three lines with their longest values fit well. */
#define META_MAX 1024

static char *with_suffix(const char *path, const char *suffix)
{
    size_t n = strlen(path), k = strlen(suffix);
    char *p = malloc(n + k + 1);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, suffix, k + 1);
    }
    return p;
}

char *part_meta_path(const char *part_path)
{
    return with_suffix(part_path, ".validator");
}

int part_meta_save(const char *part_path, const struct part_meta *m)
{
    char *path = part_meta_path(part_path), *tmp = with_suffix(part_path, ".validator.tmp");
    char text[META_MAX];
    int rc = 0;
    if (!path || !tmp) {
        rc = sl_err_set(SL_ERR_NOMEM, "out of memory");
        goto out;
    }
    int n = 0;
    if (m->etag[0])
        n += snprintf(text + n, sizeof(text) - (size_t)n, "etag %s\n", m->etag);
    if (m->modified[0])
        n += snprintf(text + n, sizeof(text) - (size_t)n, "last-modified %s\n", m->modified);
    if (m->size >= 0)
        n += snprintf(text + n, sizeof(text) - (size_t)n, "size %lld\n", (long long)m->size);
    errno = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    int ok = fd >= 0 && write(fd, text, (size_t)n) == n;
    if (fd >= 0 && close(fd) != 0)
        ok = 0;
    if (!ok) {
        /* a short write sets no errno: then it is the disk being full */
        rc = sl_err_set(SL_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno ? errno : ENOSPC));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        rc = sl_err_set(SL_ERR_IO, "cannot rename '%s': %s", tmp, strerror(errno));
        unlink(tmp);
    }
out:
    free(path);
    free(tmp);
    return rc;
}

/* One line "KEY VALUE" of PART.validator into m; 0 when the key is unknown. */
static int meta_line(struct part_meta *m, const char *p, size_t n)
{
    static const char *const keys[] = { "etag ", "last-modified ", "size " };
    for (int k = 0; k < 3; k++) {
        size_t kn = strlen(keys[k]);
        if (n < kn || memcmp(p, keys[k], kn) != 0)
            continue;
        const char *v = p + kn;
        size_t vn = n - kn;
        if (k == 0)
            resp_head_copy_value(v, vn, m->etag, sizeof(m->etag));
        else if (k == 1)
            resp_head_copy_value(v, vn, m->modified, sizeof(m->modified));
        else {
            int64_t s = 0;
            size_t i = 0;
            for (; i < vn && i < 18 && v[i] >= '0' && v[i] <= '9'; i++)
                s = s * 10 + (v[i] - '0');
            if (i && i == vn)
                m->size = s;
        }
        return 1;
    }
    return 0;
}

int part_meta_load(const char *part_path, struct part_meta *m)
{
    memset(m, 0, sizeof(*m));
    m->size = -1;
    char *path = part_meta_path(part_path);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    free(path);
    if (fd < 0)
        return 0;
    char text[META_MAX];
    ssize_t n = read(fd, text, sizeof(text));
    close(fd);
    if (n < 0 || n == (ssize_t)sizeof(text))
        return 0; /* unreadable, or not one of ours */
    const char *p = text, *end = text + n;
    int lines = 0, known = 0;
    const char *first = NULL;
    size_t first_n = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)((nl ? nl : end) - p);
        if (len) {
            if (!lines++) {
                first = p;
                first_n = len;
            }
            known += meta_line(m, p, len);
        }
        p = nl ? nl + 1 : end;
    }
    if (lines == 1 && !known) {
        /* the one-line form: the validator alone */
        if (first[0] == '"')
            resp_head_copy_value(first, first_n, m->etag, sizeof(m->etag));
        else
            resp_head_copy_value(first, first_n, m->modified, sizeof(m->modified));
    }
    return 1;
}

void part_meta_remove(const char *part_path)
{
    char *path = part_meta_path(part_path), *tmp = with_suffix(part_path, ".validator.tmp");
    if (path)
        unlink(path);
    if (tmp)
        unlink(tmp);
    free(path);
    free(tmp);
}
