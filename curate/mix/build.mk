# curate/mix: attributes in Dolma's layout, `sluice tag` (the filters' scores written once)
# and `sluice mix` (documents selected and spans cut by rules over them; token budgets:
# budget.c the selection, mix_budget.c its two passes).
LIB_SRCS += curate/mix/attrs.c curate/mix/budget.c curate/mix/cmd_tag.c curate/mix/cmd_mix.c \
            curate/mix/mix_budget.c
FUZZ_TARGETS += fuzz_attrs
