# dataset/: token shards (.bin/.idx), sample indexing, blending, the loader.
LIB_SRCS += dataset/idx.c
