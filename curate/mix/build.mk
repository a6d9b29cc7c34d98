# curate/mix: attributes in Dolma's layout, `sluice tag` (the filters' scores written once)
# and `sluice mix` (documents selected and spans cut by rules over them).
LIB_SRCS += curate/mix/attrs.c curate/mix/cmd_tag.c curate/mix/cmd_mix.c
FUZZ_TARGETS += fuzz_attrs
