# curate/: the curation stages, one folder each, in the order data flows.
LIB_SRCS += curate/reshard/reshard.c
