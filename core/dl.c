/* Loading a library with dlopen and resolving a table of its functions. */
#include "core/dl.h"

#include "core/err.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sl_dl_load(void **lib, const char *const *names, size_t nnames, const struct sl_dl_sym *syms,
               size_t nsyms, const char *what, int code)
{
    if (*lib)
        return 0;
    void *h = NULL;
    for (size_t i = 0; i < nnames && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return sl_err_set(code, "%s: %s", what, dlerror());
    for (size_t i = 0; i < nsyms; i++) {
        if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
            dlclose(h);
            return sl_err_set(code, "the %s found has no %s", names[0], syms[i].name);
        }
    }
    *lib = h;
    return 0;
}

int sl_dl_load_once(struct sl_dl_once *once, void **lib, const char *const *names, size_t nnames,
                    const struct sl_dl_sym *syms, size_t nsyms, const char *what, int code)
{
    if (__atomic_load_n(lib, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&once->mu);
    if (!once->tried) {
        once->tried = 1;
        void *h = NULL;
        if (sl_dl_load(&h, names, nnames, syms, nsyms, what, code)) {
            snprintf(once->error, sizeof(once->error), "%s", sl_err_msg());
            sl_err_clear();
        } else {
            __atomic_store_n(lib, h, __ATOMIC_RELEASE); /* after the symbols */
        }
    }
    pthread_mutex_unlock(&once->mu);
    return *lib ? 0 : sl_err_set(code, "%s", once->error);
}

int sl_dl_beside_binary(char *path, size_t n, const char *name, const char *env)
{
    const char *set = getenv(env);
    if (set && *set) {
        snprintf(path, n, "%s", set);
        return 0;
    }
    ssize_t k = readlink("/proc/self/exe", path, n - 1);
    if (k <= 0) {
        snprintf(path, n, "cannot find the sluice binary's directory (/proc/self/exe)");
        return -1;
    }
    path[k] = '\0';
    char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(path + dir, n - dir, "%s", name);
    return 0;
}
