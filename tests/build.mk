# tests/: the unit-test binary (every tests/unit/*.c) and the fuzz harnesses.
# Components add their own fuzz targets (tests/fuzz/<name>.c) to FUZZ_TARGETS.
UNIT_SRCS += tests/harness.c $(sort $(wildcard tests/unit/*.c))
FUZZ_TARGETS += fuzz_jsonl fuzz_stream fuzz_config
