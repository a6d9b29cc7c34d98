/* CUB's device_radix_sort.cuh under the emulation: kernels/emu/cub.h */
#include "kernels/emu/cub.h"
