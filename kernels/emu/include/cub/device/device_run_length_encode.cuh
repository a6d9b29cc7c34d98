/* CUB's device_run_length_encode.cuh under the emulation: kernels/emu/cub.h */
#include "kernels/emu/cub.h"
