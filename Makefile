# sluice: one build for everything.
#
#   make              build build/sluice (detects MPI and CUDA; CPU-only works)
#   make test         install missing Debian packages, check layering, build, run unit, CLI and MPI tests
#   make check-deps   fail when a folder includes one above it or uses its symbols (docs/dev.md, Layers)
#   make demo         install, build, run the pipeline on the bundled samples
#   make asan         the same tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz         build the libFuzzer harnesses (clang); make fuzz-short runs each briefly,
#                     make fuzz-campaign for an hour per reader family, make fuzz-keep keeps what it found
#   make bench        run the benchmarks in bench/ against the peer tools
#   make test-gpu     build and run the CUDA kernel and GPU trainer tests (SKIP without nvcc or a GPU)
#   make bench-kernels  time the CUDA kernels (one table)
#   make bench-scale  how cost grows: every stage at 1x, 4x and 16x an input, 1 and 2 ranks
#   make gpu-bundle   what a lent GPU machine runs, in .gpucheck/ (scripts/gpu-check.sh --prepare;
#                     LLMC_SRC=llm.c CUDNN_FRONTEND=cudnn-frontend also build llm.c's train_gpt2cu)
#   make install PREFIX=/opt/sluice   build, then install (install-files: install what is built)
#
# Knobs: WERROR=1 (CI), CUDA=0 / MPI=0 to build without them, O=-O0 for debugging,
#        NATIVE=1 for -march=native, BUILD=dir for another build directory.

BUILD ?= build
CC ?= cc
CXX ?= c++
O ?= -O2
WERROR ?= 0
SANITIZE ?= 0
FUZZ ?= 0
NATIVE ?= 0
CUDA_HOME ?= /usr/local/cuda
PKG_CONFIG ?= pkg-config

ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif

.DEFAULT_GOAL := all
SHELL := /bin/bash

# ---- what is here --------------------------------------------------------------------
# Each component appends to these in its build.mk:
#   LIB_SRCS   C/C++ sources of libsluice.a
#   CU_SRCS    CUDA sources, .cu or C over the CUDA runtime: the GPU library
#              $(BUILD)/libsluice-gpu.so, built only when CUDA is found and loaded by the
#              sluice binary only when it trains on a GPU
#   CLI_SRCS   sources of the sluice binary itself
#   PKGS       pkg-config packages needed;  LIBS  extra link flags
#   CXX_SRCS   C++ sources (also in LIB_SRCS): the binary has them in libsluice-cxx.so,
#              loaded on first use (cli/cxx_lib.c); PKGS_CXX, LIBS_CXX  what they link
#   PKGS_LOADED  pkg-config packages whose headers are needed but whose library is loaded
#              with dlopen when first used, not linked (each library linked is loaded by
#              every command at start-up)
#   UNIT_SRCS  unit-test sources;  FUZZ_TARGETS  fuzz harness names (tests/fuzz/<name>.c)
LIB_SRCS :=
CU_SRCS :=
CLI_SRCS :=
PKGS :=
PKGS_LOADED :=
CXX_SRCS :=
PKGS_CXX :=
LIBS_CXX :=
LIBS :=
UNIT_SRCS :=
FUZZ_TARGETS :=

include core/build.mk
include dataset/build.mk
include tokenize/build.mk
include curate/build.mk
include pipeline/build.mk
include train/build.mk
include kernels/build.mk
include cli/build.mk
include tests/build.mk

# ---- detection -----------------------------------------------------------------------
MISSING_PKGS := $(strip $(foreach p,$(sort $(PKGS) $(PKGS_CXX) $(PKGS_LOADED)),$(if $(shell $(PKG_CONFIG) --exists $(p) && echo y),,$(p))))

ifneq ($(MPI),0)
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS := $(shell $(MPICC) --showme:link 2>/dev/null)
MPI_VERSION := $(shell $(MPICC) --showme:version 2>&1 | sed -n 's/.*Open MPI \([0-9.]*\).*/\1/p')
HAVE_MPI := 1
endif
endif

ifneq ($(CUDA),0)
NVCC := $(shell test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc)
ifneq ($(NVCC),)
HAVE_CUDA := 1
CUDA_VERSION := $(shell $(NVCC) --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
HAVE_CUBLASLT := $(shell test -e $(CUDA_HOME)/include/cublasLt.h && echo 1)
HAVE_CUDNN := $(shell test -e $(CUDA_HOME)/include/cudnn.h -o -e /usr/include/cudnn.h && echo 1)
HAVE_NCCL := $(shell test -e $(CUDA_HOME)/include/nccl.h -o -e /usr/include/nccl.h && echo 1)
endif
endif

ifeq ($(FUZZ),1)
HAVE_CUDA :=
HAVE_MPI :=
endif

# ---- flags ---------------------------------------------------------------------------
VERSION_STR := $(shell cat VERSION)$(shell git describe --always --dirty --match 'NONE' 2>/dev/null | sed 's/^/+g/')
WARN := -Wall -Wextra -Wno-unused-parameter -Wformat=2 -Wno-format-nonliteral -Wvla
ifeq ($(findstring clang,$(CC)),)
WARN += -Wno-format-truncation
endif
ifeq ($(WERROR),1)
WARN += -Werror
endif
ARCH :=
ifeq ($(NATIVE),1)
ARCH := -march=native
endif
CPPFLAGS_ALL := -I. -I$(BUILD)/gen -D_GNU_SOURCE $(shell $(PKG_CONFIG) --cflags $(sort $(PKGS) $(PKGS_CXX) $(PKGS_LOADED)) 2>/dev/null)
CFLAGS_ALL := -std=gnu11 $(O) -g -fPIC -fopenmp $(ARCH) $(WARN) $(CFLAGS)
CXXFLAGS_ALL := -std=c++17 $(O) -g -fPIC -fopenmp $(ARCH) $(filter-out -Wvla,$(WARN)) $(CXXFLAGS)
# the binary's libraries; the C++ code's, for libsluice-cxx.so; both, for the other programs
LDLIBS_BIN := $(shell $(PKG_CONFIG) --libs $(sort $(PKGS)) 2>/dev/null) $(LIBS) -lm -lpthread -fopenmp
LDLIBS_CXX := $(shell $(PKG_CONFIG) --libs $(sort $(PKGS_CXX)) 2>/dev/null) $(LIBS_CXX) -lstdc++
LDLIBS_ALL := $(LDLIBS_BIN) $(LDLIBS_CXX)

ifeq ($(HAVE_MPI),1)
CPPFLAGS_ALL += -DSL_HAVE_MPI $(filter -I%,$(MPI_CFLAGS))
MPI_OBJ := $(BUILD)/obj/core/world_mpi.o $(BUILD)/obj/core/mpi_watch.o
MPI_LIB := $(BUILD)/libsluice-mpi.so
endif
ifeq ($(HAVE_CUDA),1)
CPPFLAGS_ALL += -DSL_HAVE_CUDA -I$(CUDA_HOME)/include
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lcublasLt
ifeq ($(HAVE_CUDNN),1)
CPPFLAGS_ALL += -DSL_HAVE_CUDNN
CUDA_LIBS += -lcudnn
endif
ifeq ($(HAVE_NCCL),1)
CPPFLAGS_ALL += -DSL_HAVE_NCCL
CUDA_LIBS += -lnccl
endif
CUDA_ARCHS ?= 80 90
# cubins for each architecture, and PTX for the highest, which the driver compiles for newer
# GPUs (Blackwell) at load time instead of failing with "no kernel image"
CUDA_PTX_ARCH := $(shell echo $(CUDA_ARCHS) | tr ' ' '\n' | sort -n | tail -1)
NVCCFLAGS := -std=c++17 -O3 -g -lineinfo --expt-relaxed-constexpr -Xcompiler -fPIC \
  $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
  -gencode arch=compute_$(CUDA_PTX_ARCH),code=compute_$(CUDA_PTX_ARCH) \
  -I. -I$(BUILD)/gen -DSL_HAVE_CUDA $(if $(filter 1,$(HAVE_MPI)),-DSL_HAVE_MPI $(filter -I%,$(MPI_CFLAGS))) \
  $(if $(filter 1,$(HAVE_CUDNN)),-DSL_HAVE_CUDNN) $(if $(filter 1,$(HAVE_NCCL)),-DSL_HAVE_NCCL)
ifeq ($(WERROR),1)
NVCCFLAGS += -Werror all-warnings -Xcompiler -Werror
endif
endif

ifeq ($(SANITIZE),1)
CFLAGS_ALL += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
CXXFLAGS_ALL += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS_ALL += -fsanitize=address,undefined
endif
ifeq ($(FUZZ),1)
CFLAGS_ALL += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
CXXFLAGS_ALL += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
endif

# ---- objects -------------------------------------------------------------------------
obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst %.cc,$(BUILD)/obj/%.o,$(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(1))))
LIB_OBJS := $(call obj,$(LIB_SRCS))
GPU_OBJS := $(call obj,$(CU_SRCS))
CXX_OBJS := $(call obj,$(CXX_SRCS))
CXX_LIB := $(BUILD)/libsluice-cxx.so
GPU_LIB := $(if $(filter 1,$(HAVE_CUDA)),$(BUILD)/libsluice-gpu.so)
CLI_OBJS := $(call obj,$(CLI_SRCS))
UNIT_OBJS := $(call obj,$(UNIT_SRCS))

$(BUILD)/obj/%.o: %.c $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: %.cc $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS_ALL) $(CXXFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu $(BUILD)/gen/version.h
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# version.h changes only when the version does
$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(@D)
	@echo '#define SL_VERSION "$(VERSION_STR)"' > $@.new
	@cmp -s $@.new $@ && rm -f $@.new || mv $@.new $@

$(BUILD)/libsluice.a: $(LIB_OBJS)
	@rm -f $@
	$(Q)ar rcs $@ $^

# The binary holds every object of libsluice.a but its C++ code, and exports its symbols
# (-rdynamic): the libraries it loads call back into it (errors, logging, the world,
# checkpoints, the dataset index, buffers).
BIN_LIB_OBJS := $(filter-out $(CXX_OBJS),$(LIB_OBJS))
$(BUILD)/sluice: $(CLI_OBJS) $(BIN_LIB_OBJS)
	$(Q)$(CC) $(CFLAGS_ALL) -rdynamic -o $@ $(CLI_OBJS) $(BIN_LIB_OBJS) $(LDLIBS_BIN) -ldl

# The C++ code (SentencePiece, fastText, CLD2), loaded by cli/cxx_lib.c when first used;
# -Bsymbolic: its calls to its own functions stay inside it, not to the binary's forwarders.
$(CXX_LIB): $(CXX_OBJS)
	$(Q)$(CXX) $(CFLAGS_ALL) -shared -Wl,-Bsymbolic -o $@ $^ $(LDLIBS_CXX)

# The CUDA trainer and kernels with the CUDA libraries, loaded by train/gpu_plugin.c.
$(BUILD)/libsluice-gpu.so: $(GPU_OBJS)
	$(Q)$(CXX) $(CFLAGS_ALL) -shared -o $@ $^ $(CUDA_LIBS) -ldl -lm -lpthread

# The MPI side of core/world.c with Open MPI, loaded by it under an MPI launcher
# (core/world_mpi.h). The MPI test program links its object instead.
$(BUILD)/libsluice-mpi.so: $(MPI_OBJ)
	$(Q)$(CC) $(CFLAGS_ALL) -shared -o $@ $^ $(MPI_LIBS)

$(BUILD)/test_world: $(BUILD)/obj/tests/mpi/test_world.o $(MPI_OBJ) $(BUILD)/libsluice.a
	$(Q)$(CXX) $(CFLAGS_ALL) -o $@ $(filter %.o,$^) $(BUILD)/libsluice.a $(LDLIBS_ALL) $(MPI_LIBS)

$(BUILD)/test_unit: $(UNIT_OBJS) $(BUILD)/libsluice.a
	$(Q)$(CXX) $(CFLAGS_ALL) -o $@ $(UNIT_OBJS) $(BUILD)/libsluice.a $(LDLIBS_ALL)

# PREFIX/bin/sluice -> PREFIX/libexec/sluice/sluice, with the GPU library beside the binary
# (where train/gpu_plugin.c looks for it); configs/ and examples/ in PREFIX/share/sluice
# (where `sluice run` finds the bundled configs, pipeline/pipeline.h pl_data_dir), the
# documentation in PREFIX/share/doc/sluice. DESTDIR for staging.
PREFIX ?= /usr/local
DESTDIR ?=
install: all
	@$(MAKE) --no-print-directory install-files

install-files:
	@test -x $(BUILD)/sluice || { echo "install: no $(BUILD)/sluice: run make first" >&2; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/sluice \
	  $(DESTDIR)$(PREFIX)/share/sluice $(DESTDIR)$(PREFIX)/share/doc/sluice
	install -m 755 $(BUILD)/sluice $(DESTDIR)$(PREFIX)/libexec/sluice/sluice
	install -m 755 $(BUILD)/libsluice-cxx.so $(DESTDIR)$(PREFIX)/libexec/sluice/
	if [ -e $(BUILD)/libsluice-mpi.so ]; then \
	  install -m 755 $(BUILD)/libsluice-mpi.so $(DESTDIR)$(PREFIX)/libexec/sluice/; fi
	if [ -e $(BUILD)/libsluice-gpu.so ]; then \
	  install -m 755 $(BUILD)/libsluice-gpu.so $(DESTDIR)$(PREFIX)/libexec/sluice/; fi
	ln -sfn ../libexec/sluice/sluice $(DESTDIR)$(PREFIX)/bin/sluice
	rm -rf $(DESTDIR)$(PREFIX)/share/sluice/configs $(DESTDIR)$(PREFIX)/share/sluice/examples
	cp -R configs examples $(DESTDIR)$(PREFIX)/share/sluice/
	cp -R README.md docs/. $(DESTDIR)$(PREFIX)/share/doc/sluice/

.PHONY: install install-files

.PHONY: all FORCE config deps test test-unit test-cli test-hosts test-megatron test-mpi asan fuzz fuzz-short fuzz-campaign fuzz-keep demo bench-scale \
        bench clean format check-format check-deps test-gpu bench-kernels gpu-bundle
FORCE:

# With CUDA, `all` also builds the GPU test and benchmark programs: every .cu compiles and links.
all: config $(BUILD)/sluice $(CXX_LIB) $(MPI_LIB) $(GPU_LIB) $(if $(filter 1,$(HAVE_CUDA)),$(GPU_TEST_BINS))

# Print what was found, once per make invocation that builds.
config:
	@echo "sluice $(VERSION_STR): build in $(BUILD)/"
	@echo "  cc: $(CC) $(shell $(CC) -dumpfullversion 2>/dev/null)$(if $(filter 1,$(SANITIZE)), (asan+ubsan))"
	@echo "  mpi: $(if $(HAVE_MPI),Open MPI $(MPI_VERSION),no (single-rank build))"
	@echo "  cuda: $(if $(HAVE_CUDA),$(CUDA_VERSION) at $(CUDA_HOME) [sm_$(subst $() $(),/sm_,$(CUDA_ARCHS)) + compute_$(CUDA_PTX_ARCH) PTX] cublasLt=$(if $(HAVE_CUBLASLT),yes,no) cudnn=$(if $(HAVE_CUDNN),yes,no) nccl=$(if $(HAVE_NCCL),yes,no),no (CPU-only build))"
	@echo "  libraries: $(sort $(PKGS) $(PKGS_CXX) $(PKGS_LOADED))$(if $(MISSING_PKGS), -- MISSING: $(MISSING_PKGS) (run scripts/install-deps.sh))"
	@$(if $(MISSING_PKGS),exit 1,true)

deps:
	@scripts/install-deps.sh

test: deps check-deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory test-unit
	@$(MAKE) --no-print-directory test-gpu-emu
	@$(MAKE) --no-print-directory test-cli

test-unit: $(BUILD)/test_unit
	@echo "== unit tests ($(BUILD))"
	@SLUICE_TEST_DATA=$(CURDIR)/tests/fixtures $(BUILD)/test_unit

# with the CUDA headers, the trainer on emulated GPUs too (tests/cli/t_train_gpu_emu.sh; not
# in the sanitizer build, where it would take minutes)
test-cli: $(BUILD)/sluice $(CXX_LIB) $(MPI_LIB) $(BUILD)/test_world \
          $(if $(and $(filter 1,$(EMU_HEADERS)),$(filter 0,$(SANITIZE))),$(EMU_PLUGIN))
	@echo "== CLI, MPI and integration tests ($(BUILD))"
	@SLUICE=$(CURDIR)/$(BUILD)/sluice SLUICE_BUILD=$(CURDIR)/$(BUILD) SANITIZE=$(SANITIZE) tests/cli/run.sh

# only the runs across hosts (network namespaces: root; skipped otherwise), about 150 s;
# make test runs them too (docs/multihost.md)
test-hosts: $(BUILD)/sluice $(MPI_LIB) $(BUILD)/test_world
	@SLUICE=$(CURDIR)/$(BUILD)/sluice SLUICE_BUILD=$(CURDIR)/$(BUILD) SANITIZE=$(SANITIZE) \
	    tests/cli/run.sh tests/cli/t_hosts.sh tests/cli/t_hosts_faults.sh

# sluice's index caches against the real megatron-core (SLUICE_MEGATRON_PY: a Python with
# megatron-core==0.16.1, torch and numpy; skipped without it)
test-megatron: $(BUILD)/sluice
	@tests/megatron/t_megatron.sh

test-gpu:
ifeq ($(HAVE_CUDA),1)
	@$(MAKE) --no-print-directory $(BUILD)/test_kernels $(BUILD)/sluice $(CXX_LIB) $(MPI_LIB) $(GPU_LIB)
	@tests/gpu/run.sh $(CURDIR)/$(BUILD) $(TEST_GPU_ARGS)
else
	@echo "test-gpu: SKIP: built without CUDA (CUDA=0, or no nvcc at $(CUDA_HOME)/bin)"
	@echo "test-gpu: 0 passed, 0 failed"
endif

# The build a lent GPU machine runs, with the shared libraries it may lack, the tokenize
# stage's data and llm.c's train_gpt2cu (built from LLMC_SRC and CUDNN_FRONTEND, the two
# projects' sources, in a scratch folder outside the repository), in .gpucheck/ (ignored);
# fails when it and the working tree pass 64 MiB (docs/testing.md, "A lent GPU")
gpu-bundle:
	@LLMC_SRC='$(LLMC_SRC)' CUDNN_FRONTEND='$(CUDNN_FRONTEND)' scripts/gpu-check.sh --prepare

bench-kernels:
ifeq ($(HAVE_CUDA),1)
	@$(MAKE) --no-print-directory $(BUILD)/bench_kernels
	@$(BUILD)/bench_kernels $(BENCH_ARGS)
else
	@echo "bench-kernels: SKIP: built without CUDA (CUDA=0, or no nvcc at $(CUDA_HOME)/bin)"
endif

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 CUDA=0 all
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 CUDA=0 test-unit
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 CUDA=0 test-cli
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 CUDA=0 EMU_ORDERS=natural test-gpu-emu

FUZZ_BINS := $(addprefix build-fuzz/,$(FUZZ_TARGETS))
fuzz:
	@$(MAKE) --no-print-directory BUILD=build-fuzz FUZZ=1 CC=clang CXX=clang++ MPI=0 CUDA=0 $(FUZZ_BINS)

# Harnesses are C; the link uses the C++ driver, which brings in the sanitizers' C++ runtime
# that the library's C++ parts (fastText, CLD2) need.
$(addprefix $(BUILD)/,$(FUZZ_TARGETS)): $(BUILD)/%: tests/fuzz/%.c $(BUILD)/libsluice.a
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c -o $@.o $<
	$(Q)$(CXX) $(CFLAGS_ALL) -fsanitize=fuzzer,address,undefined -o $@ $@.o $(BUILD)/libsluice.a $(LDLIBS_ALL)

FUZZ_SECONDS ?= 20
fuzz-short: fuzz
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The long campaign: FUZZ_CPU_SECONDS of CPU per reader family (tests/fuzz/campaign.sh).
FUZZ_CPU_SECONDS ?= 3600
fuzz-campaign: fuzz
	@tests/fuzz/campaign.sh $(FUZZ_CPU_SECONDS) 600

# What a campaign found that the kept corpus lacks, inputs up to 4 KiB, into tests/fuzz/corpus.
fuzz-keep: fuzz
	@tests/fuzz/keep-corpus.sh 4096

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD)/sluice

bench: all
	@bench/run.sh $(BUILD)/sluice

# How cost grows with the input: every stage at 1x, 4x and 16x SCALE_MB (256) and 1 and 2
# ranks (bench/scale.sh; docs/benchmarks.md, "Scaling")
bench-scale: all
	@bench/scale.sh $(BUILD)/sluice

format:
	@clang-format -i $$(git ls-files '*.c' '*.h' '*.cc' '*.cu')

# No folder includes one above it (the layer table in docs/dev.md).
# includes, and the symbols the objects of each folder use (so the objects are built first)
check-deps: $(LIB_OBJS) $(CLI_OBJS) $(GPU_OBJS)
	@scripts/check-deps.sh --obj $(BUILD)/obj

check-format:
	@clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h' '*.cc' '*.cu')

clean:
	rm -rf build build-asan build-fuzz

Q := $(if $(V),,@)
