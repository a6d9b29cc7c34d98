# curate/extract: turning source formats into JSONL documents.
# Each part keeps its lines in its own block below so that branches merge cleanly.

# ---- HTML main text and Wikipedia (html*, wiki*) -------------------------------------
LIB_SRCS += curate/extract/html_prep.c curate/extract/html_tree.c curate/extract/html.c \
            curate/extract/html_file.c curate/extract/wikitext.c curate/extract/wiki.c
PKGS += libxml-2.0
FUZZ_TARGETS += fuzz_html fuzz_wikitext
# ---- end HTML and Wikipedia ------------------------------------------------------------
