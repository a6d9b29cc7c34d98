# kernels/: sources of this component (none yet).
