/* Loading a library with dlopen and resolving a table of its functions. */
#include "core/dl.h"

#include "core/err.h"

#include <dlfcn.h>

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
