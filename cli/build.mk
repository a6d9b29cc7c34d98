# cli/: the sluice binary and its command table.
CLI_SRCS += cli/main.c cli/run.c cli/table.c
