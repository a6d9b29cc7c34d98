# curate/download: fetch corpus files over HTTP(S) (sluice download).
LIB_SRCS += curate/download/cmd_download.c curate/download/fetch.c curate/download/checksum.c
# libcurl is loaded when a download starts (fetch.c), not linked
PKGS += libcrypto
PKGS_LOADED += libcurl
