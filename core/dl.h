/* Libraries loaded when first needed instead of linked (PKGS_LOADED in the build files):
 * a library that only one command uses should not cost every command its dynamic linking
 * at start-up. */
#ifndef SL_DL_H
#define SL_DL_H

#include <pthread.h>
#include <stddef.h>

struct sl_dl_sym {
    const char *name; /* the library's symbol */
    void **fn;        /* where its address goes */
};

/* Open the first of names[0..nnames) that loads and resolve every symbol of syms into its
 * slot; *lib is the handle (already set: nothing is done). 0, or `code` with the message
 * "WHAT: why" (what: "downloading needs libcurl (Debian package libcurl4)"), or one naming
 * the symbol missing. */
int sl_dl_load(void **lib, const char *const *names, size_t nnames, const struct sl_dl_sym *syms,
               size_t nsyms, const char *what, int code);

/* sl_dl_load for a library that threads may ask for at once: the first call loads it, under
 * a lock; later calls answer from what it did (0, or the same error again). A lib set
 * (non-NULL) means loaded. Declare the state as
 *   static struct sl_dl_once once = SL_DL_ONCE_INIT; */
struct sl_dl_once {
    pthread_mutex_t mu;
    int tried;
    char error[512];
};
#define SL_DL_ONCE_INIT                                                                            \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, 0, ""                                                           \
    }
int sl_dl_load_once(struct sl_dl_once *once, void **lib, const char *const *names, size_t nnames,
                    const struct sl_dl_sym *syms, size_t nsyms, const char *what, int code);

/* The path of sluice's own library `name` (libsluice-gpu.so, libsluice-mpi.so): the file
 * named by the environment variable `env` when set, else `name` in the directory of the
 * running binary. 0, or -1 with the reason in path. */
int sl_dl_beside_binary(char *path, size_t n, const char *name, const char *env);

#endif
