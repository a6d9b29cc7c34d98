# curate/clean: Unicode repair of document text and `sluice clean`.
LIB_SRCS += curate/clean/cleaner.c curate/clean/cmd_clean.c
PKGS += libutf8proc
FUZZ_TARGETS += fuzz_clean
