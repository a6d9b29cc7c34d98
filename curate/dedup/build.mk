# curate/dedup: exact and MinHash/LSH fuzzy deduplication (memory or Redis Cluster index).
LIB_SRCS += curate/dedup/normalize.c curate/dedup/shingle.c curate/dedup/minhash.c \
            curate/dedup/lsh.c curate/dedup/unionfind.c curate/dedup/components.c \
            curate/dedup/shuffle.c curate/dedup/corpus.c curate/dedup/dedup.c \
            curate/dedup/cmd_dedup.c curate/dedup/exact.c curate/dedup/cmd_dedup_exact.c curate/dedup/units.c \
            curate/dedup/cmd_dedup_paragraphs.c \
            curate/dedup/fuzzy.c curate/dedup/fuzzy_pairs.c curate/dedup/fuzzy_verify.c \
            curate/dedup/fuzzy_index.c curate/dedup/cmd_dedup_fuzzy.c curate/dedup/lsh_index.c \
            curate/dedup/lsh_redis.c curate/dedup/redis_cluster.c \
            curate/dedup/redis_slots.c curate/dedup/redis_watch.c curate/dedup/redis_lock.c \
            curate/dedup/lsh_redis_claim.c curate/dedup/rehydrate.c curate/dedup/fuzzy_plan.c
PKGS += hiredis
FUZZ_TARGETS += fuzz_shingle fuzz_redis_reply
