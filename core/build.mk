# core/: what every component uses (depends on nothing else in sluice).
LIB_SRCS += core/err.c core/alloc.c core/buf.c core/utf8.c core/stream.c core/atomic.c \
            core/json.c core/doc.c core/jsonl.c core/counters.c core/config.c core/options.c \
            core/log.c core/progress.c core/world.c core/hash.c core/rng.c core/inputs.c \
            core/stage.c core/stage_record.c core/stage_files.c core/stage_docs.c core/manifest.c \
            core/dirlock.c core/sniff.c core/docid.c core/dl.c core/xxh3_avx2.c core/md5.c \
            core/datadir.c core/file.c core/thrift_enc.c core/parquet_write.c core/parquet_pages.c \
            core/http.c core/remote.c core/remote_s3.c core/remote_hf.c core/remote_cache.c \
            core/stage_remote.c core/parquet.c core/parquet_meta.c core/parquet_page.c \
            core/parquet_rows.c core/parquet_codec.c core/inputs_parquet.c
PKGS += libzstd zlib yaml-0.1 json-c libxxhash liblz4 libbrotlidec
# libsnappy (Parquet pages) is loaded when first needed (core/parquet_codec.c): its header only
LIBS += -lbz2
# libcurl is loaded when first used (core/http.c: downloads, remote inputs), not linked
PKGS_LOADED += libcurl
FUZZ_TARGETS += fuzz_objstore
