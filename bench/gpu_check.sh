#!/usr/bin/env bash
# On a machine with an NVIDIA GPU and a running PostgreSQL 15 + PostGIS 3.3
# (PG* variables set, pg_config, psql, raster2pgsql and the GDAL tools on
# PATH): build with CUDA, run the core tests (CUDA parity included), install,
# run the pg_regress suites (gpu_parity runs whole), check tg_slope on the GPU
# against ST_Slope and gdaldem, and benchmark.  Logs and reports go to OUTDIR.
#
#   bench/gpu_check.sh OUTDIR BENCH_DEM... [-- AGREEMENT_DEM...]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: $0 OUTDIR BENCH_DEM... [-- AGREEMENT_DEM...]}
shift
bench_dems=()
agree_dems=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bench_dems+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift && agree_dems=("$@")
mkdir -p "$out"
status=0
step() { echo "== $*"; }

step "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

step "build"
make -s -j8 >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
make -s build/bench_core >>"$out/build.log" 2>&1

step "core tests"
make -s check-core 2>&1 | tee "$out/check-core.log" | tail -5
[ "${PIPESTATUS[0]}" = 0 ] || status=1

step "install and pg_regress"
make -s install >>"$out/build.log" 2>&1
export PGDATABASE=${PGDATABASE:-terra_gpu}
psql -X -q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PGDATABASE'" | grep -q 1 \
	|| psql -X -q -d postgres -c "CREATE DATABASE $PGDATABASE"
psql -X -q -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS terra_gpu CASCADE"
make -s installcheck >"$out/installcheck.log" 2>&1 || status=1
grep -E "^(test| |ok|not ok)" "$out/installcheck.log" | grep -E "\.\.\." || tail -20 "$out/installcheck.log"
cp build/regress/results/gpu_parity.out "$out/gpu_parity.out" 2>/dev/null
cp build/regress/regression.diffs "$out/" 2>/dev/null

if [ ${#agree_dems[@]} -gt 0 ]; then
	step "tg_slope on the GPU against ST_Slope and gdaldem"
	python3 regress/checks/check_slope_agreement.py --backend gpu "${agree_dems[@]}" | tee "$out/agreement.md" || status=1
fi

step "benchmark"
python3 bench/run_bench.py --reps 3 --out "$out/bench.md" "${bench_dems[@]}" >/dev/null || status=1
cat "$out/bench.md"
exit $status
