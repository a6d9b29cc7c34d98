# tests/: the unit-test binary and the fuzz harnesses.
UNIT_SRCS += tests/harness.c tests/unit/test_buf.c tests/unit/test_stream.c \
             tests/unit/test_json.c tests/unit/test_jsonl.c tests/unit/test_config.c \
             tests/unit/test_options.c tests/unit/test_misc.c tests/unit/test_stage.c
FUZZ_TARGETS += fuzz_jsonl fuzz_stream fuzz_config
