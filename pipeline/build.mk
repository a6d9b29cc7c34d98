# pipeline/: pipelines (configs/pipelines/*.yaml) -> command lines, step records, the
# summary and funnel picture. Run by `sluice run` (cli/cmd_run.c).
LIB_SRCS += pipeline/pipeline.c pipeline/yaml.c pipeline/keys.c pipeline/download_stage.c \
            pipeline/tokenize_stage.c pipeline/train_stage.c pipeline/record.c pipeline/report.c
