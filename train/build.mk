# train/: the model, the trainer's driver and its CPU backend, the CUDA trainer, optimizer,
# checkpoints, the train, generate and export commands. The CUDA trainer (C over the CUDA
# runtime and the kernels of kernels/) goes into the GPU library where nvcc is found;
# gpu_plugin.c, in every build, loads it.
LIB_SRCS += train/model.c train/cpu_ops.c train/cpu_model.c train/optim.c train/safetensors.c \
            train/checkpoint.c train/checkpoint_read.c train/hf_export.c train/parallel.c train/docmask.c train/gpu_plan.c train/schedule.c train/gpu_plugin.c train/cpu_train.c train/cmd_train.c train/driver.c train/train_config.c train/cmd_export.c train/hf_import.c train/cmd_import.c train/eval.c train/cmd_eval.c \
            train/decode.c train/sampler.c train/cmd_generate.c \
            train/tbevents.c train/losscurve.c train/trainlog.c
CU_SRCS += train/gpu_plan.c train/docmask.c train/gpu_train.c train/gpu_model.c train/gpu_zero.c train/gpu_loader.c \
           train/gpu_comm.c train/gpu_tp.c train/gpu_fuse.c
# the host-staged MPI backend of train/gpu_comm.h
CU_SRCS += train/gpu_comm_mpi.c
LIB_SRCS += train/cpu_zero.c train/fp8.c train/cpu_fp8.c
FUZZ_TARGETS += fuzz_safetensors fuzz_tbevents
