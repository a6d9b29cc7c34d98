# dataset/: sources of this component (none yet).
