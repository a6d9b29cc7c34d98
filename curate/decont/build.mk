# curate/decont: benchmark decontamination (task n-grams) and `sluice decontaminate`.
LIB_SRCS += curate/decont/decont.c curate/decont/cmd_decontaminate.c
PKGS += libutf8proc json-c
FUZZ_TARGETS += fuzz_decont
