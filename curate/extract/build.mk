# curate/extract: raw corpora -> JSONL documents (sluice extract).
LIB_SRCS += curate/extract/cmd_extract.c curate/extract/extract_warc.c \
            curate/extract/extract_jsonl.c curate/extract/extract_arxiv.c \
            curate/extract/warc.c curate/extract/http.c curate/extract/charset.c \
            curate/extract/page.c curate/extract/latex.c
PKGS += libarchive
FUZZ_TARGETS += fuzz_warc fuzz_http
# The main-text HTML extractor (curate/extract/html.c) replaces the tag stripper in page.c
# when it is present.
ifneq ($(wildcard curate/extract/html.c),)
$(BUILD)/obj/curate/extract/page.o: CPPFLAGS_ALL += -DSL_HAVE_HTML_EXTRACT
$(BUILD)/obj/curate/extract/page.o: curate/extract/html.h
endif
