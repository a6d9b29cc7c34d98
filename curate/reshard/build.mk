# curate/reshard: balanced JSONL shards.
LIB_SRCS += curate/reshard/reshard.c
