# tests/: the unit-test binary (every tests/unit/*.c) and the fuzz harnesses.
# Components add their own fuzz targets (tests/fuzz/<name>.c) to FUZZ_TARGETS.
UNIT_SRCS += tests/harness.c $(sort $(wildcard tests/unit/*.c))
# the command table and its commands' help (tests/unit/test_commands.c): cli/ less main()
# and the forwarders to libsluice-cxx.so
UNIT_SRCS += $(filter-out cli/main.c cli/cxx_lib.c,$(CLI_SRCS))
FUZZ_TARGETS += fuzz_jsonl fuzz_stream fuzz_config fuzz_parquet

# tests/mpi/test_world.c: an MPI program for the world's collectives, run under mpirun by
# tests/cli/t_mpi.sh; its rule is in the Makefile, beside libsluice-mpi.so's.
