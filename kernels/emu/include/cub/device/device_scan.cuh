/* CUB's device_scan.cuh under the emulation: kernels/emu/cub.h */
#include "kernels/emu/cub.h"
