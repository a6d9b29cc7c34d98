# train/: the model, the CPU reference trainer, optimizer, checkpoints, the train and export
# commands.
LIB_SRCS += train/model.c train/cpu_ops.c train/cpu_model.c train/optim.c train/safetensors.c \
            train/checkpoint.c train/train_cmd.c train/export_cmd.c
FUZZ_TARGETS += fuzz_safetensors
