# dataset/: token shards (.bin/.idx), sample indexing, blending, the loader.
LIB_SRCS += dataset/idx.c
FUZZ_TARGETS += fuzz_idx
LIB_SRCS += dataset/gpt_index.c dataset/blend.c dataset/loader.c dataset/datainfo.c \
            dataset/megatron_desc.c
