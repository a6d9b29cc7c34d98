# tokenize/: sources of this component (none yet).
