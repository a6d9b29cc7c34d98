# curate/extract: turning source formats into JSONL documents.
# Each part keeps its lines in its own block below so that branches merge cleanly.

# ---- HTML main text and Wikipedia (html*, wiki*) -------------------------------------
LIB_SRCS += curate/extract/html_prep.c curate/extract/html_tree.c curate/extract/html.c \
            curate/extract/html_file.c curate/extract/wikitext.c curate/extract/wiki.c \
            curate/extract/libxml.c
PKGS_LOADED += libxml-2.0
FUZZ_TARGETS += fuzz_html fuzz_html_repeat fuzz_wikitext fuzz_wiki_xml
# ---- end HTML and Wikipedia ------------------------------------------------------------

# ---- the extract command, WARC/WET, arXiv, Pile/C4/JSONL -------------------------------
LIB_SRCS += curate/extract/cmd_extract.c curate/extract/extract_warc.c \
            curate/extract/extract_jsonl.c curate/extract/extract_arxiv.c \
            curate/extract/extract_web.c curate/extract/warc.c curate/extract/http.c \
            curate/extract/charset.c curate/extract/page.c curate/extract/latex.c
PKGS += libdeflate
PKGS_LOADED += libarchive
FUZZ_TARGETS += fuzz_warc fuzz_http fuzz_arxiv
# page.c uses the main-text extractor (html.c) when it is present, else a tag stripper.
ifneq ($(wildcard curate/extract/html.c),)
$(BUILD)/obj/curate/extract/page.o: CPPFLAGS_ALL += -DSL_HAVE_HTML_EXTRACT
$(BUILD)/obj/curate/extract/page.o: curate/extract/html.h
endif
# ---- end extract command ---------------------------------------------------------------
