# terra_gpu — PGXS build with an nvcc part.
#
#   make                 build terra_gpu.so (CUDA kernels when nvcc is found)
#   make install         install into the PostgreSQL that pg_config names
#   make installcheck    pg_regress suites against a running server
#   make upgrade-scripts regenerate sql/terra_gpu--0.1.0--0.2.0.sql (after make install)
#   make check-core      core unit tests (also under ASan/UBSan) and the raster decoder
#                        fuzz test (no server)
#   make qgis-plugin     the QGIS plugin as a zip for Plugins > Install from ZIP
#   make check-layering  no circles of calls, nothing calling up, sizes within bounds
#
# Variables: WITH_CUDA=0 builds without CUDA; NVCC_GENCODE picks the GPU
# architectures (default sm_80 and sm_90 machine code plus sm_90 PTX).

EXTENSION   = terra_gpu
EXTVERSION  = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)
MODULE_big  = terra_gpu
DATA_built  = sql/$(EXTENSION)--$(EXTVERSION).sql
# released install scripts, frozen, and the upgrade scripts (tools/gen_upgrade.py)
DATA        = sql/$(EXTENSION)--0.1.0.sql $(wildcard sql/$(EXTENSION)--*--*.sql)

# The core by folder, lowest layer first (docs/ARCHITECTURE.md)
CORE_SRCS   = src/core/runtime/error.c src/core/runtime/pool.c src/core/runtime/wavefront.c \
              src/core/raster/raster.c src/core/raster/tile_codec.c src/core/raster/geometry.c \
              src/core/raster/tile_io.c \
              src/core/terrain/terrain_cpu.c \
              src/core/viewshed/viewshed_cpu.c \
              src/core/bmmq/bmmq_cpu.c \
              src/core/hydro/fill/fill_cpu.c src/core/hydro/fill/fill_flood.c \
              src/core/hydro/flats/flat_labels.c src/core/hydro/flats/flat_distances.c \
              src/core/hydro/flats/flat_masks.c \
              src/core/hydro/route/route_cpu.c src/core/hydro/route/route_cache.c \
              src/core/hydro/accum/accum_cpu.c src/core/hydro/accum/cell_weights.c \
              src/core/hydro/accum/chain_cpu.c \
              src/core/hydro/catchment/catchment_cpu.c src/core/hydro/catchment/factors.c \
              src/core/dispatch/dispatch.c \
              src/core/hydro/drainage/drainage.c \
              src/core/ops/ops.c \
              src/core/scale/seams/fill_seams.c src/core/scale/seams/flow_seams.c \
              src/core/scale/seams/flat_seams.c \
              src/core/scale/strips/strips.c src/core/scale/strips/route_strips.c \
              src/core/scale/parts/part_state.c src/core/scale/parts/part_run.c \
              src/core/scale/parts/part_edges.c \
              src/core/scale/parts/part_fill.c src/core/scale/parts/part_flats.c \
              src/core/scale/parts/part_link.c src/core/scale/parts/part_halo.c \
              src/core/scale/parts/part_flow.c src/core/scale/parts/part_finish.c \
              src/core/scale/parts/part_coordinator.c \
              src/core/run/run.c
CORE_HDRS   = $(shell find src/core -name '*.h' -not -path 'src/core/test/*')
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
CUDA_HDRS    = $(wildcard cuda/*.cuh) $(CORE_HDRS)
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

$(OBJS): $(CORE_HDRS) $(wildcard src/pg/*.h)

# A build with CUDA and one without link different objects: switching relinks
# the extension and the test programs.  The mode of the last make is kept in a
# file rewritten when it changes (PostgreSQL's makefiles mark every target
# .SECONDARY, so a missing stamp or CUDA archive alone would not be remade).
CUDA_MODE = build/cuda_mode
ifneq ($(shell cat $(CUDA_MODE) 2>/dev/null),$(WITH_CUDA))
$(shell mkdir -p build && echo $(WITH_CUDA) > $(CUDA_MODE))
endif
$(shlib): $(CUDA_MODE)

# The terrain derivatives' row loops vectorise: sqrt without errno, no FP
# traps to keep in order, and no fused multiply-adds (they round as the GPU's
# and PostGIS' arithmetic does).
TERRAIN_CPU_CFLAGS = -O3 -fno-math-errno -fno-trapping-math -ffp-contract=off
src/core/terrain/terrain_cpu.o: PG_CFLAGS += $(TERRAIN_CPU_CFLAGS)

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
PARTS_FUZZ_ITERATIONS ?= 100000

CORE_TEST_SRCS = $(filter-out src/core/test/fuzz_%.c,$(wildcard src/core/test/*.c))

build/test_core: $(CORE_TEST_SRCS) src/core/test/test.h $(CORE_SRCS) $(CORE_HDRS) $(CORE_CUDA) $(CUDA_MODE)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $(CORE_TEST_SRCS) $(CORE_SRCS) \
		$(if $(filter 0,$(WITH_CUDA)),cuda/tg_cuda_stub.c) $(CORE_TEST_LIBS)

# the same tests under AddressSanitizer (leaks included: LeakSanitizer runs
# at exit) and UBSan, on the CPU path: the CUDA runtime does not run under ASan
build/test_core_asan: $(CORE_TEST_SRCS) src/core/test/test.h $(CORE_SRCS) $(CORE_HDRS)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(SANITIZE) -o $@ $(CORE_TEST_SRCS) $(CORE_SRCS) cuda/tg_cuda_stub.c \
		$(CODEC_LINK) -lpthread -lm

FUZZ_SRCS = src/core/test/fuzz_raster.c src/core/raster/raster.c src/core/runtime/error.c \
            src/core/terrain/terrain_cpu.c src/core/runtime/pool.c src/core/raster/tile_codec.c

# the messages between the coordinator and the parts, mutated (fuzz_parts.c), under ASan/UBSan; a
# small quarantine keeps each child's fork cheap (the children live a few steps)
FUZZ_PARTS_SRCS = src/core/test/fuzz_parts.c src/core/test/tiles.c src/core/test/check.c

build/fuzz_parts: $(FUZZ_PARTS_SRCS) src/core/test/tiles.h src/core/test/test.h $(CORE_SRCS) $(CORE_HDRS)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(SANITIZE) -o $@ $(FUZZ_PARTS_SRCS) $(CORE_SRCS) cuda/tg_cuda_stub.c \
		$(CODEC_LINK) -lpthread -lm

build/fuzz_raster: $(FUZZ_SRCS) $(CORE_HDRS)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(SANITIZE) -o $@ $(FUZZ_SRCS) $(CODEC_LINK) -lpthread -lm

# coverage-guided variant (needs clang): build/fuzz_raster_libfuzzer -runs=N
build/fuzz_raster_libfuzzer: $(FUZZ_SRCS) $(CORE_HDRS)
	mkdir -p build
	clang -DTG_LIBFUZZER -g -O1 -Isrc/core -fsanitize=fuzzer,address,undefined \
		-o $@ $(FUZZ_SRCS) $(CODEC_LINK) -lpthread -lm

fuzz-libfuzzer: build/fuzz_raster_libfuzzer
	build/fuzz_raster_libfuzzer -runs=$(FUZZ_ITERATIONS) -max_len=4096

check-core: build/test_core build/test_core_asan build/fuzz_raster build/fuzz_parts
	build/test_core
	ASAN_OPTIONS=detect_leaks=1 build/test_core_asan
	build/fuzz_raster $(FUZZ_ITERATIONS)
	ASAN_OPTIONS=quarantine_size_mb=1 build/fuzz_parts $(PARTS_FUZZ_ITERATIONS)

# the core's layers, read from the objects the build left (docs/ARCHITECTURE.md)
check-layering: all
	python3 tools/check_layering.py

.PHONY: check-core check-layering fuzz-libfuzzer

# ---------------------------------------------------------------------------
# Benchmark driver for the core (no server): see bench/run_bench.py
# ---------------------------------------------------------------------------
# (the terrain derivatives built as in the extension)
BENCH_CORE_SRCS = bench/bench_core.c bench/bench_studies.c

build/bench_core: $(BENCH_CORE_SRCS) bench/bench_core.h $(CORE_SRCS) $(CORE_HDRS) $(CORE_CUDA) $(CUDA_MODE)
	mkdir -p build
	$(CC) $(CORE_TEST_CFLAGS) $(TERRAIN_CPU_CFLAGS) -c -o build/terrain_cpu.o src/core/terrain/terrain_cpu.c
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $(BENCH_CORE_SRCS) $(filter-out src/core/terrain/terrain_cpu.c,$(CORE_SRCS)) \
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

# ---------------------------------------------------------------------------
# QGIS plugin: qgis-plugin/terra_gpu as the zip Plugins > Install from ZIP
# takes (its styles are links to docs/*.qml, stored as files); its version is
# the extension's
# ---------------------------------------------------------------------------
QGIS_PLUGIN_ZIP   = build/terra_gpu-qgis-$(EXTVERSION).zip
QGIS_PLUGIN_FILES = $(sort $(shell find qgis-plugin/terra_gpu -name __pycache__ -prune -o \( -type f -o -type l \) -print))

qgis-plugin: $(QGIS_PLUGIN_ZIP)

$(QGIS_PLUGIN_ZIP): $(QGIS_PLUGIN_FILES) $(EXTENSION).control
	@grep -qx 'version=$(EXTVERSION)' qgis-plugin/terra_gpu/metadata.txt || \
		{ echo "qgis-plugin/terra_gpu/metadata.txt: version must be $(EXTVERSION), the extension's"; exit 1; }
	mkdir -p build
	python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED); \
		[z.write(f, f.split("/", 1)[1]) for f in sys.argv[2:]]; z.close()' $@.tmp $(QGIS_PLUGIN_FILES)
	mv $@.tmp $@

.PHONY: qgis-plugin
