# curate/filter: the filter chain (heuristics, regex, URL lists, language ID, classifier)
# and `sluice filter`. Word lists are compiled in from lexicons/ (.incbin).
LIB_SRCS += curate/filter/strset.c curate/filter/punct.c curate/filter/lexicons.c \
            curate/filter/words.c curate/filter/filter.c curate/filter/chain.c \
            curate/filter/gopher.c curate/filter/c4.c curate/filter/fineweb.c \
            curate/filter/nemo.c curate/filter/regex.c curate/filter/url.c curate/filter/pii.c \
            curate/filter/url_datatrove.c curate/filter/lineset.c curate/filter/aho.c \
            curate/filter/language.c curate/filter/langid.cc curate/filter/cmd_filter.c
CXX_SRCS += curate/filter/langid.cc
PKGS += libpcre2-8 libutf8proc libpsl
# the URL filter's blocklist archive (datatrove's tar.gz) is read with libarchive, loaded when used
PKGS_LOADED += libarchive
PKGS_CXX += fasttext
LIBS_CXX += -lcld2
$(BUILD)/obj/curate/filter/lexicons.o: $(wildcard curate/filter/lexicons/*.tsv curate/filter/lexicons/*/*)
FUZZ_TARGETS += fuzz_fasttext
FUZZ_TARGETS += fuzz_pii fuzz_url
