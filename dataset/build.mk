# dataset/: token shards (.bin/.idx), sample indexing, blending, the loader.
LIB_SRCS += dataset/idx.c
LIB_SRCS += dataset/gpt_index.c dataset/blend.c dataset/loader.c
