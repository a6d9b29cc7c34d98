# curate/reshard: balanced JSONL shards.
LIB_SRCS += curate/reshard/reshard.c curate/reshard/cmd_reshard.c
