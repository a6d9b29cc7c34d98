/* Where sluice's shipped data lives (see core/datadir.h). */
#include "core/datadir.h"

#include <limits.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sl_data_dir(void)
{
    static char dir[4096];
    static int done;
    if (done)
        return dir[0] ? dir : NULL;
    done = 1;
    const char *env = getenv("SLUICE_DATA_DIR");
    struct stat sb;
    if (env && *env) {
        snprintf(dir, sizeof(dir), "%s", env);
        return dir;
    }
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (k <= 0)
        return NULL;
    exe[k] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    /* installed: PREFIX/bin or PREFIX/libexec/sluice; a build: SRC/build */
    static const char *const rel[] = { "../share/sluice", "../../share/sluice", "..", NULL };
    for (int i = 0; rel[i]; i++) {
        char cand[4096 + 64], probe[4096 + 96];
        snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
        snprintf(probe, sizeof(probe), "%s/configs/pipelines", cand);
        if (stat(probe, &sb) == 0 && S_ISDIR(sb.st_mode) && realpath(cand, dir))
            return dir;
    }
    dir[0] = '\0';
    return NULL;
}
