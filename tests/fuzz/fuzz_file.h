/* For harnesses of readers that open a path: the input written to a file of this process
 * (/tmp/NAME.PID), the same path for every input. */
#ifndef SL_FUZZ_FILE_H
#define SL_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[96];
    if (!path[0])
        snprintf(path, sizeof(path), "/tmp/%s.%ld", name, (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return path;
}

#endif
