# curate/classifier: `sluice classifier train` (fastText supervised quality classifier).
# The filter that applies a model is the `classifier` kind in curate/filter.
LIB_SRCS += curate/classifier/cmd_classifier.c
