# train/: the model, the CPU reference trainer, the CUDA trainer, optimizer, checkpoints, the
# train, generate and export commands. The CUDA trainer (C over the CUDA runtime, and
# gpu_ops.cu) goes into the GPU library where nvcc is found; gpu_plugin.c, in every build,
# loads it.
LIB_SRCS += train/model.c train/cpu_ops.c train/cpu_model.c train/optim.c train/safetensors.c \
            train/checkpoint.c train/gpu_plugin.c train/train_cmd.c train/export_cmd.c \
            train/decode.c train/sampler.c train/generate_cmd.c \
            train/tbevents.c train/losscurve.c train/trainlog.c
CU_SRCS += train/gpu_train.c train/gpu_model.c train/gpu_zero.c train/gpu_loader.c train/gpu_ops.cu
FUZZ_TARGETS += fuzz_safetensors fuzz_tbevents

# Like the kernels: nvcc objects that do not depend on the version header.
TRAIN_CU_OBJS := $(BUILD)/obj/train/gpu_ops.cu.o
$(TRAIN_CU_OBJS): $(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
