# kernels/emu/: the CUDA kernels compiled by g++ and run on the CPU (kernels/emu/emu.h), and
# $(BUILD)/emu/test_kernels, tests/gpu/test_kernels.c linked against them instead of the CUDA
# libraries ($(BUILD)/emu/test_emu checks the emulation itself). Needs only the CUDA headers
# ($(CUDA_HOME)/include), not nvcc or a GPU.
#   make test-gpu-emu   every kernel group in the natural order and again in the strict orders
#                       (tests/gpu/run_emu.sh); gemm, which has no kernel of its own (cuBLASLt is
#                       a CPU GEMM here, kernels/emu/cublaslt.cc), only in the natural order
#   make test-gpu-emu-plants  bugs planted one at a time into a copy of the kernels (and of
#                       train/gpu_*.c), each of which the emulated tests must catch
#                       (tests/gpu/t_emu_plants.sh)
# EMU_SRC=dir takes kernels/*.cu, kernels/*.h, train/gpu_*.c and tests/gpu/ from a copy of
# them in dir.
# EMU_ORDERS: the thread orders test-gpu-emu runs (make test-gpu-emu BUILD=build-asan SANITIZE=1
# CUDA=0 EMU_ORDERS=natural: once under AddressSanitizer + UndefinedBehaviorSanitizer).
EMU_HEADERS := $(shell test -e $(CUDA_HOME)/include/cuda_runtime_api.h -a \
                            -e $(CUDA_HOME)/include/cuda_bf16.h -a \
                            -e $(CUDA_HOME)/include/cublasLt.h && echo 1)
# NCCL over MPI (kernels/emu/nccl.cc) and its test (tests/gpu/test_nccl_emu.c, run under
# mpirun by run_emu.sh): with MPI and nccl.h only (deferred: MPI is detected after this file)
EMU_NCCL = $(if $(filter 1,$(HAVE_MPI)),$(shell test -e $(CUDA_HOME)/include/nccl.h && echo 1))
# every kernel file: cuBLASLt and CUB have stand-ins (kernels/emu/cublaslt.cc, cub.h)
EMU_KERNELS := $(basename $(notdir $(KERNEL_CU_SRCS)))
EMU_DIR := $(BUILD)/emu
EMU_SRC ?= .
EMU_ORDERS ?= natural reversed shuffled
EMU_KERNEL_OBJS := $(patsubst %,$(EMU_DIR)/obj/%.o,$(EMU_KERNELS))
EMU_RT_OBJS := $(EMU_DIR)/obj/runtime.o $(EMU_DIR)/obj/cudart.o $(EMU_DIR)/obj/streams.o \
               $(EMU_DIR)/obj/cublaslt.o
# no SL_HAVE_CUDNN: cuDNN is reported absent, so attention uses the own kernels; CUB's
# headers are kernels/emu/include/cub/ (SANITIZE=1 builds it under AddressSanitizer +
# UndefinedBehaviorSanitizer, as make asan does)
EMU_CXXFLAGS = $(CXXFLAGS_ALL) -I$(EMU_SRC) -I. -D_GNU_SOURCE -Ikernels/emu/include \
               -I$(CUDA_HOME)/include

# rewrite.pl's output is a build product, compiled with emu.h force-included; g++ does not
# know nvcc's #pragma unroll, and the kernels read memory through other types (int4,
# uint32_t over bf16), which nvcc allows and g++'s aliasing rules would not
EMU_KERNEL_FLAGS := -Wno-unknown-pragmas -fno-strict-aliasing -include kernels/emu/emu.h
$(EMU_DIR)/src/%.cc: $(EMU_SRC)/kernels/%.cu kernels/emu/rewrite.pl
	@mkdir -p $(@D)
	$(Q)perl kernels/emu/rewrite.pl $< > $@.tmp && mv $@.tmp $@

$(EMU_DIR)/src/test_emu.cc: tests/gpu/test_emu.cu kernels/emu/rewrite.pl
	@mkdir -p $(@D)
	$(Q)perl kernels/emu/rewrite.pl $< > $@.tmp && mv $@.tmp $@

$(EMU_DIR)/obj/%.o: $(EMU_DIR)/src/%.cc
	@mkdir -p $(@D)
	$(Q)$(CXX) $(EMU_CXXFLAGS) $(EMU_KERNEL_FLAGS) -MMD -MP -c $< -o $@

$(EMU_DIR)/obj/%.o: kernels/emu/%.cc
	@mkdir -p $(@D)
	$(Q)$(CXX) $(EMU_CXXFLAGS) -MMD -MP -c $< -o $@

$(EMU_DIR)/obj/test_kernels.o: $(EMU_SRC)/tests/gpu/test_kernels.c
	@mkdir -p $(@D)
	$(Q)$(CC) -I$(EMU_SRC) -I. -D_GNU_SOURCE -I$(CUDA_HOME)/include $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(EMU_DIR)/test_kernels: $(EMU_DIR)/obj/test_kernels.o $(EMU_KERNEL_OBJS) $(EMU_RT_OBJS)
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $^ -lm

# MPI's C interface only (its C++ bindings do not compile warning-free)
$(EMU_DIR)/obj/nccl.o: EMU_CXXFLAGS += $(filter -I%,$(MPI_CFLAGS)) -DOMPI_SKIP_MPICXX \
                                       -DMPICH_SKIP_MPICXX

$(EMU_DIR)/obj/test_nccl_emu.o: tests/gpu/test_nccl_emu.c
	@mkdir -p $(@D)
	$(Q)$(CC) -I. -D_GNU_SOURCE -I$(CUDA_HOME)/include $(filter -I%,$(MPI_CFLAGS)) $(CFLAGS_ALL) \
	  -MMD -MP -c $< -o $@

# the NCCL calls between emulated GPUs, one per MPI rank
$(EMU_DIR)/test_nccl_emu: $(EMU_DIR)/obj/test_nccl_emu.o $(EMU_DIR)/obj/nccl.o \
                          $(EMU_DIR)/obj/util.o $(EMU_DIR)/obj/runtime.o $(EMU_DIR)/obj/cudart.o \
                          $(EMU_DIR)/obj/streams.o
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $^ $(MPI_LIBS) -lm

# the emulated exchanges and cuBLASLt epilogues against their definitions (tests/gpu/test_emu.cu)
$(EMU_DIR)/test_emu: $(EMU_DIR)/obj/test_emu.o $(EMU_DIR)/obj/util.o $(EMU_DIR)/obj/runtime.o \
                     $(EMU_DIR)/obj/cudart.o $(EMU_DIR)/obj/streams.o $(EMU_DIR)/obj/cublaslt.o
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $^ -lm

# the emulated cuBLASLt's FP8 matmul against its definition over the CPU path's FP8 rounding
# (tests/gpu/test_lt_fp8.c; train/fp8.c from libsluice.a)
$(EMU_DIR)/obj/test_lt_fp8.o: tests/gpu/test_lt_fp8.c $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(EMU_TRAIN_CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(EMU_DIR)/test_lt_fp8: $(EMU_DIR)/obj/test_lt_fp8.o $(EMU_DIR)/obj/util.o $(EMU_RT_OBJS) \
                        $(BUILD)/libsluice.a
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $(filter %.o,$^) $(BUILD)/libsluice.a $(LDLIBS_ALL) -lm

# The CUDA trainer on emulated GPUs: $(EMU_DIR)/libsluice-gpu-emu.so holds train/gpu_*.c,
# compiled with the C flags of libsluice-gpu.so (CUDA, and NCCL where MPI and nccl.h are; no
# cuDNN, which the emulation reports absent), over the emulated kernels and stand-ins.
# `SLUICE_GPU_LIB=$(EMU_DIR)/libsluice-gpu-emu.so sluice train ... train.device=cuda` loads
# it instead of libsluice-gpu.so (tests/cli/t_train_gpu_emu.sh).
EMU_TRAIN_OBJS = $(patsubst train/%.c,$(EMU_DIR)/obj/train/%.o,$(filter train/%.c,$(CU_SRCS)))
EMU_TRAIN_CPPFLAGS = $(filter-out -DSL_HAVE_CUDA -DSL_HAVE_CUDNN -DSL_HAVE_NCCL,$(CPPFLAGS_ALL)) \
                     -DSL_HAVE_CUDA -I$(CUDA_HOME)/include $(if $(EMU_NCCL),-DSL_HAVE_NCCL)
EMU_PLUGIN := $(EMU_DIR)/libsluice-gpu-emu.so

$(EMU_DIR)/obj/train/%.o: $(EMU_SRC)/train/%.c $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(EMU_TRAIN_CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# (expanded a second time: EMU_NCCL is known only once MPI has been detected)
.SECONDEXPANSION:
$(EMU_PLUGIN): $(EMU_TRAIN_OBJS) $(EMU_KERNEL_OBJS) $(EMU_RT_OBJS) \
               $$(if $$(EMU_NCCL),$(EMU_DIR)/obj/nccl.o)
	$(Q)$(CXX) $(CXXFLAGS_ALL) -shared -o $@ $^ $(if $(EMU_NCCL),$(MPI_LIBS)) -ldl -lm -lpthread

# The GPU trainer's communicator (train/gpu_comm.h) between emulated GPUs, both backends
# (tests/gpu/test_gcomm.c, run under mpirun by run_emu.sh): with MPI; its NCCL backend where
# nccl.h is too. The world (core/world.c) from libsluice.a, its MPI side linked in.
$(EMU_DIR)/obj/test_gcomm.o: tests/gpu/test_gcomm.c $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(EMU_TRAIN_CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(EMU_DIR)/test_gcomm: $(EMU_DIR)/obj/test_gcomm.o $(EMU_DIR)/obj/train/gpu_comm.o \
                       $(EMU_DIR)/obj/train/gpu_comm_mpi.o $(EMU_DIR)/obj/util.o $(EMU_RT_OBJS) \
                       $$(if $$(EMU_NCCL),$(EMU_DIR)/obj/nccl.o) $$(MPI_OBJ) $(BUILD)/libsluice.a
	$(Q)$(CXX) $(CXXFLAGS_ALL) -o $@ $(filter %.o,$^) $(BUILD)/libsluice.a $(LDLIBS_ALL) \
	  $(MPI_LIBS) -lm

-include $(wildcard $(EMU_DIR)/obj/*.d)
-include $(wildcard $(EMU_DIR)/obj/train/*.d)
.SECONDARY: $(patsubst %,$(EMU_DIR)/src/%.cc,$(EMU_KERNELS) test_emu)

.PHONY: test-gpu-emu test-gpu-emu-plants
test-gpu-emu:
ifeq ($(EMU_HEADERS),1)
	@$(MAKE) --no-print-directory $(EMU_DIR)/test_kernels $(EMU_DIR)/test_emu $(EMU_DIR)/test_lt_fp8 \
	  $(if $(EMU_NCCL),$(EMU_DIR)/test_nccl_emu) $(if $(filter 1,$(HAVE_MPI)),$(EMU_DIR)/test_gcomm)
	@EMU_ORDERS="$(EMU_ORDERS)" tests/gpu/run_emu.sh $(CURDIR)/$(EMU_DIR) $(TEST_GPU_ARGS)
else
	@echo "test-gpu-emu: SKIP: no CUDA headers (cuda_runtime_api.h, cuda_bf16.h, cublasLt.h) in $(CUDA_HOME)/include"
	@echo "test-gpu-emu: 0 passed, 0 failed"
endif

test-gpu-emu-plants:
ifeq ($(EMU_HEADERS),1)
	@$(MAKE) --no-print-directory $(BUILD)/sluice
	@SLUICE=$(CURDIR)/$(BUILD)/sluice tests/gpu/t_emu_plants.sh
else
	@echo "test-gpu-emu-plants: SKIP: no CUDA headers (cuda_runtime_api.h, cuda_bf16.h, cublasLt.h) in $(CUDA_HOME)/include"
endif
