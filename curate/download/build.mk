# curate/download: fetch corpus files over HTTP(S) (sluice download).
LIB_SRCS += curate/download/cmd_download.c curate/download/fetch.c curate/download/checksum.c \
            curate/download/resp_head.c curate/download/part_meta.c
# libcurl and libcrypto are loaded when first used (fetch.c, checksum.c), not linked
PKGS_LOADED += libcurl libcrypto
FUZZ_TARGETS += fuzz_resp_head
