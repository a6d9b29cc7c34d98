/* gpu_train_backend (train/gpu_train.h) for every build: the CUDA trainer
 * lives in the GPU library, libsluice-gpu.so next to the sluice binary (or the file named by
 * SLUICE_GPU_LIB), loaded on first use. Linking the CUDA libraries into the binary itself
 * would make every command map and relocate them at start (about 200 MB resident and half a
 * second before main), for the one command that uses them. A build without CUDA loads only
 * a library SLUICE_GPU_LIB names: the trainer on emulated GPUs (kernels/emu/build.mk), which
 * needs the CUDA headers but not nvcc.
 */
#include "train/gpu_train.h"

#include "core/dl.h"
#include "core/err.h"
#include "core/log.h"

#include <stdio.h>

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef const struct train_backend *(*backend_fn)(char *why, size_t n);

static backend_fn plugin_backend;
static char load_error[1024];
static int tried;

/* Load the library once; 0, or -1 with the reason in load_error. */
static int load(void)
{
    if (tried)
        return plugin_backend ? 0 : -1;
    tried = 1;
    char path[PATH_MAX];
    if (sl_dl_beside_binary(path, sizeof(path), "libsluice-gpu.so", "SLUICE_GPU_LIB")) {
        snprintf(load_error, sizeof(load_error), "%s", path);
        return -1;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof(load_error), "cannot load the GPU library: %s", dlerror());
        return -1;
    }
    plugin_backend = (backend_fn)(uintptr_t)dlsym(h, "sl_gpu_plugin_backend");
    if (!plugin_backend) {
        snprintf(load_error, sizeof(load_error), "'%s' is not sluice's GPU library", path);
        return -1;
    }
    return 0;
}

const struct train_backend *gpu_train_backend(char *why, size_t n)
{
#ifndef SL_HAVE_CUDA
    if (!getenv("SLUICE_GPU_LIB")) {
        snprintf(why, n, "this build has no CUDA (built with CUDA=0 or without nvcc)");
        return NULL;
    }
#endif
    if (load()) {
        snprintf(why, n,
                 "%s\nhint: build it with make (it is built where nvcc is found), or use "
                 "train.device=cpu",
                 load_error);
        return NULL;
    }
    return plugin_backend(why, n);
}
