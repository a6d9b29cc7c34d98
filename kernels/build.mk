# kernels/: the CUDA kernels and their host launchers (built only when nvcc is found), and the
# programs that test and time them on a GPU: build/test_kernels (make test-gpu) and
# build/bench_kernels (make bench-kernels). Both are C programs over the kernels' C interfaces
# and link only the kernels (cuDNN is loaded at run time, never linked).
KERNEL_CU_SRCS := kernels/util.cu kernels/embedding.cu kernels/norm.cu kernels/activation.cu \
                  kernels/rope.cu kernels/classifier.cu kernels/adamw.cu kernels/gemm.cu \
                  kernels/attention.cu kernels/attention_cudnn.cu
CU_SRCS += $(KERNEL_CU_SRCS)

KERNEL_CU_OBJS := $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(KERNEL_CU_SRCS))
GPU_TEST_BINS := $(BUILD)/test_kernels $(BUILD)/bench_kernels
KERNEL_LINK = $(filter-out -lcudnn,$(CUDA_LIBS)) -ldl -lm -lpthread -fopenmp

$(BUILD)/test_kernels: $(BUILD)/obj/tests/gpu/test_kernels.o $(KERNEL_CU_OBJS)
	$(Q)$(CXX) $(CFLAGS_ALL) -o $@ $^ $(KERNEL_LINK)

$(BUILD)/bench_kernels: $(BUILD)/obj/bench/bench_kernels.o $(KERNEL_CU_OBJS)
	$(Q)$(CXX) $(CFLAGS_ALL) -o $@ $^ $(KERNEL_LINK)

# The kernels do not include the generated version header: without this rule every commit
# (a new version string) would recompile all of them with nvcc.
$(KERNEL_CU_OBJS): $(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@
include kernels/emu/build.mk
