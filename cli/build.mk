# cli/: the sluice binary and its command table.
CLI_SRCS += cli/main.c cli/dispatch.c cli/cmd_run.c cli/table.c
# the binary's side of libsluice-cxx.so (the unit tests link the C++ code itself)
CLI_SRCS += cli/cxx_lib.c
