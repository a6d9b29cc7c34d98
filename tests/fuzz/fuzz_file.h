/* For harnesses of readers that open a path: the input written to a file of this process
 * ($TMPDIR/NAME.PID, /tmp without TMPDIR), the same path for every input. The campaign
 * points TMPDIR at a memory file system, so that millions of inputs are not written to
 * disk. */
#ifndef SL_FUZZ_FILE_H
#define SL_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The folder for a harness's files: $TMPDIR, else /tmp. */
static inline const char *fuzz_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[4200];
    if (!path[0])
        snprintf(path, sizeof(path), "%s/%s.%ld", fuzz_tmpdir(), name, (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}

#endif
