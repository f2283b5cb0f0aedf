# terra_gpu — PGXS build with an nvcc part.
#
#   make                 build terra_gpu.so (CUDA kernels when nvcc is found)
#   make install         install into the PostgreSQL that pg_config names
#   make installcheck    pg_regress suites against a running server
#   make upgrade-scripts regenerate sql/terra_gpu--0.1.0--0.2.0.sql (after make install)
#   make check-core      core unit tests (also under ASan/UBSan) and the raster decoder
#                        fuzz test (no server)
#
# Variables: WITH_CUDA=0 builds without CUDA; NVCC_GENCODE picks the GPU
# architectures (default sm_80 and sm_90 machine code plus sm_90 PTX).

EXTENSION   = terra_gpu
EXTVERSION  = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)
MODULE_big  = terra_gpu
DATA_built  = sql/$(EXTENSION)--$(EXTVERSION).sql
# released install scripts, frozen, and the upgrade scripts (tools/gen_upgrade.py)
DATA        = sql/$(EXTENSION)--0.1.0.sql $(wildcard sql/$(EXTENSION)--*--*.sql)

CORE_SRCS   = $(sort $(wildcard src/core/*.c))
PG_SRCS     = $(sort $(wildcard src/pg/*.c))
OBJS        = $(CORE_SRCS:.c=.o) $(PG_SRCS:.c=.o)
PG_CPPFLAGS = -Isrc/core
PG_CFLAGS   = -std=gnu11 -Wextra -Wno-unused-parameter -Wno-sign-compare \
              -Wno-missing-field-initializers $(EXTRA_CFLAGS)

REGRESS      = $(sort $(basename $(notdir $(wildcard regress/*.sql))))
REGRESS_OPTS = --inputdir=build/regress --outputdir=build/regress \
               --load-extension=postgis --load-extension=postgis_raster \
               --load-extension=$(EXTENSION)
REGRESS_PREP = build/regress/sql build/regress/expected
EXTRA_CLEAN  = build $(DATA_built) cuda/*.o $(CUDA_LIB)

NVCC        ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
WITH_CUDA   ?= $(if $(NVCC),1,0)
CUDA_HOME   ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_SRCS    = $(sort $(wildcard cuda/*.cu))
CUDA_HDRS    = $(wildcard cuda/*.cuh) $(wildcard src/core/*.h)
CUDA_LIB     = cuda/libterra_gpu_cuda.a
NVCC_GENCODE ?= -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS    = -O3 -std=c++17 --cudart=static -Xcompiler -fPIC \
               -Xcompiler -fvisibility=hidden -lineinfo $(NVCC_GENCODE) \
               -Isrc/core -Icuda $(EXTRA_NVCCFLAGS)
CUDA_LINK    = $(CUDA_LIB) -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl -lpthread -lstdc++

# LZ4 for tiles, zlib for the messages between servers (the runtime libraries
# PostgreSQL itself links; no headers needed)
CODEC_LINK   = -l:liblz4.so.1 -l:libz.so.1
SHLIB_LINK  += $(CODEC_LINK) -lpthread

ifeq ($(WITH_CUDA),1)
SHLIB_LINK  += $(CUDA_LINK)
CORE_CUDA    = $(CUDA_LIB)
else
OBJS        += cuda/tg_cuda_stub.o
CORE_CUDA    = cuda/tg_cuda_stub.c
endif

# The glue needs no JIT bitcode, and .cu objects have none to offer.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(DATA_built): sql/$(EXTENSION).sql $(EXTENSION).control
	cp $< $@

$(OBJS): $(wildcard src/core/*.h) $(wildcard src/pg/*.h)

# The terrain derivatives' row loops vectorise: sqrt without errno, no FP
# traps to keep in order, and no fused multiply-adds (they round as the GPU's
# and PostGIS' arithmetic does).
TERRAIN_CPU_CFLAGS = -O3 -fno-math-errno -fno-trapping-math -ffp-contract=off
src/core/terrain_cpu.o: PG_CFLAGS += $(TERRAIN_CPU_CFLAGS)

ifeq ($(WITH_CUDA),1)
$(shlib): $(CUDA_LIB)
$(CUDA_LIB): $(CUDA_SRCS:.cu=.o)
	rm -f $@ && $(AR) crs $@ $^
cuda/%.o: cuda/%.cu $(CUDA_HDRS)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@
# the terrain derivatives round as the CPU does: no fused multiply-add
cuda/terrain.o: NVCCFLAGS += -fmad=false
endif

build/regress/sql:
	mkdir -p $(@D) && ln -sfn ../../regress $@
build/regress/expected:
	mkdir -p $(@D) && ln -sfn ../../expected $@

# ---------------------------------------------------------------------------
# Core tests: no server, plain C (+ the CUDA archive when built with CUDA)
# ---------------------------------------------------------------------------
CORE_TEST_CFLAGS = -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter \
                   -Wno-sign-compare -Wdeclaration-after-statement -Isrc/core
ifeq ($(WITH_CUDA),1)
CORE_TEST_LIBS   = $(CUDA_LINK) $(CODEC_LINK) -lpthread -lm
else
CORE_TEST_LIBS   = $(CODEC_LINK) -lpthread -lm
endif
SANITIZE         = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_ITERATIONS ?= 200000

CORE_TEST_SRCS = $(filter-out src/core/test/fuzz_raster.c,$(wildcard src/core/test/*.c))

build/test_core: $(CORE_TEST_SRCS) src/core/test/test.h $(CORE_SRCS) $(wildcard src/core/*.h) $(CORE_CUDA)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $(CORE_TEST_SRCS) $(CORE_SRCS) \
		$(if $(filter 0,$(WITH_CUDA)),cuda/tg_cuda_stub.c) $(CORE_TEST_LIBS)

# the same tests under AddressSanitizer (leaks included: LeakSanitizer runs
# at exit) and UBSan, on the CPU path: the CUDA runtime does not run under ASan
build/test_core_asan: $(CORE_TEST_SRCS) src/core/test/test.h $(CORE_SRCS) $(wildcard src/core/*.h)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(SANITIZE) -o $@ $(CORE_TEST_SRCS) $(CORE_SRCS) cuda/tg_cuda_stub.c \
		$(CODEC_LINK) -lpthread -lm

FUZZ_SRCS = src/core/test/fuzz_raster.c src/core/tg_raster.c src/core/tg_error.c src/core/terrain_cpu.c \
            src/core/tg_pool.c src/core/tile_codec.c

build/fuzz_raster: $(FUZZ_SRCS) $(wildcard src/core/*.h)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(SANITIZE) -o $@ $(FUZZ_SRCS) $(CODEC_LINK) -lpthread -lm

# coverage-guided variant (needs clang): build/fuzz_raster_libfuzzer -runs=N
build/fuzz_raster_libfuzzer: $(FUZZ_SRCS) $(wildcard src/core/*.h)
	mkdir -p build
	clang -DTG_LIBFUZZER -g -O1 -Isrc/core -fsanitize=fuzzer,address,undefined \
		-o $@ $(FUZZ_SRCS) $(CODEC_LINK) -lpthread -lm

fuzz-libfuzzer: build/fuzz_raster_libfuzzer
	build/fuzz_raster_libfuzzer -runs=$(FUZZ_ITERATIONS) -max_len=4096

check-core: build/test_core build/test_core_asan build/fuzz_raster
	build/test_core
	ASAN_OPTIONS=detect_leaks=1 build/test_core_asan
	build/fuzz_raster $(FUZZ_ITERATIONS)

.PHONY: check-core fuzz-libfuzzer

# ---------------------------------------------------------------------------
# Benchmark driver for the core (no server): see bench/run_bench.py
# ---------------------------------------------------------------------------
# (the terrain derivatives built as in the extension)
build/bench_core: bench/bench_core.c $(CORE_SRCS) $(wildcard src/core/*.h) $(CORE_CUDA)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(TERRAIN_CPU_CFLAGS) -c -o build/terrain_cpu.o src/core/terrain_cpu.c
	$(CC) $(CORE_TEST_CFLAGS) -o $@ bench/bench_core.c $(filter-out src/core/terrain_cpu.c,$(CORE_SRCS)) \
		build/terrain_cpu.o $(if $(filter 0,$(WITH_CUDA)),cuda/tg_cuda_stub.c) $(CORE_TEST_LIBS)

# ---------------------------------------------------------------------------
# Upgrade scripts: regenerate after changing sql/terra_gpu.sql (needs a
# running server and make install); check-upgrade updates a scratch database
# from every release and compares it with a fresh install.
# ---------------------------------------------------------------------------
upgrade-scripts:
	tools/gen_upgrade.py 0.1.0

check-upgrade:
	python3 regress/checks/check_upgrade.py

.PHONY: upgrade-scripts check-upgrade
