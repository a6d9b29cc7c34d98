# curate/filter: the filter chain (heuristics, regex, language ID, classifier) and
# `sluice filter`. Word lists are compiled in from lexicons/ (.incbin).
LIB_SRCS += curate/filter/strset.c curate/filter/punct.c curate/filter/lexicons.c \
            curate/filter/words.c
PKGS += libpcre2-8 libutf8proc
$(BUILD)/obj/curate/filter/lexicons.o: $(wildcard curate/filter/lexicons/*.tsv curate/filter/lexicons/*/*)
