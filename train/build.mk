# train/: sources of this component (none yet).
