# curate/: the curation stages, one folder each, in the order data flows. Each stage
# folder lists its own sources (and packages) in its build.mk.
include $(sort $(wildcard curate/*/build.mk))
