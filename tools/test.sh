#!/usr/bin/env bash
# Run every test on a fresh Debian 12 machine: install and build (setup.sh),
# the core's layering, the core unit tests and the raster decoder fuzz test (no server), the
# pg_regress suites against a throwaway cluster, the README's SQL examples,
# the agreement of tg_slope with ST_Slope and gdaldem, hydrology
# invariants, BMMQ-tree queries, stream order, flow length, HAND and wetness
# against a reference, the coverage forms and a coverage
# partitioned over several throwaway servers, on real DEMs.
# Exit status 0 only if all pass.  The cluster (the demo's too: they share
# .tgdb/) is stopped at the end; tools/localpg.sh start starts it again.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"

"$REPO/tools/setup.sh"

echo "== the core's layers: no circles of calls, nothing calling up (docs/ARCHITECTURE.md)"
python3 tools/check_layering.py

echo "== core unit tests and decoder fuzzing (no server)"
make -s check-core

echo "== pg_regress suites"
"$REPO/tools/localpg.sh" start
stop_cluster() {
	echo "== stopping the test cluster (shared with tools/demo.sh; its tables are kept):" \
		"tools/localpg.sh start starts it again"
	"$REPO/tools/localpg.sh" stop
}
trap stop_cluster EXIT
if ! make -s installcheck PG_CONFIG="$PG_BIN/pg_config"; then
	cat build/regress/regression.diffs 2>/dev/null || true
	exit 1
fi
# pg_regress says "ok" for a suite that skipped itself: say it here
if grep -q "skipped: no GPU" build/regress/results/gpu_parity.out 2>/dev/null; then
	echo "gpu_parity: skipped (no GPU; $(psql -X -At -c "SELECT reason FROM tg_gpu_info()"))"
fi

echo "== upgrade from every release: ALTER EXTENSION terra_gpu UPDATE against a fresh install"
python3 regress/checks/check_upgrade.py

echo "== README examples"
python3 tools/run_doc_examples.py

echo "== tg_slope against ST_Slope and gdaldem on real DEMs"
dems=()
for d in small_bigtujunga_srtm30_utm11 small_enoriver_ned10m medium_alps_n46e008_srtm3 medium_meghalaya_50m_utm46; do
	f="$REPO/../shared/data/dem/$d.tif"
	[ -f "$f" ] && dems+=("$f")
done
[ ${#dems[@]} -gt 0 ] || dems=("$REPO/tools/data/medium_alps_n46e008_srtm3.tif")
python3 regress/checks/check_slope_agreement.py "${dems[@]}"

echo "== hydrology invariants on real DEMs"
dems=()
for d in small_fortworth_srtm3 tiny_luxembourg_30s tiny_vinschgau_250m_utm32; do
	f="$REPO/../shared/data/dem/$d.tif"
	[ -f "$f" ] && dems+=("$f")
done
[ ${#dems[@]} -gt 0 ] || dems=("$REPO/tools/data/medium_alps_n46e008_srtm3.tif")
python3 regress/checks/check_hydrology.py "${dems[@]}"

echo "== BMMQ-tree queries against brute force on real DEMs"
dems=()
for d in small_bigtujunga_srtm30_utm11 tiny_vinschgau_250m_utm32; do
	f="$REPO/../shared/data/dem/$d.tif"
	[ -f "$f" ] && dems+=("$f")
done
[ ${#dems[@]} -gt 0 ] || dems=("$REPO/tools/data/medium_alps_n46e008_srtm3.tif")
python3 regress/checks/check_bmmq.py "${dems[@]}"

echo "== coverage forms against the value forms on real DEMs"
dems=()
for d in small_fortworth_srtm3 tiny_vinschgau_250m_utm32 small_bigtujunga_srtm30_utm11; do
	f="$REPO/../shared/data/dem/$d.tif"
	[ -f "$f" ] && dems+=("$f")
done
[ ${#dems[@]} -gt 0 ] || dems=("$REPO/tools/data/medium_alps_n46e008_srtm3.tif")
python3 regress/checks/check_coverage.py "${dems[@]}"

echo "== many sessions, cancels and repetition on real DEMs"
dem="$REPO/../shared/data/dem/medium_alps_n46e008_srtm3.tif"
[ -f "$dem" ] || dem="$REPO/tools/data/medium_alps_n46e008_srtm3.tif"
big="$REPO/../shared/data/dem/medium_srilanka_srtm3_3x3.tif"
[ -f "$big" ] || big="$dem"
python3 regress/checks/check_sessions.py "$dem" --big "$big"

echo "== RUSLE, travel time, watersheds and isochrones against references on real DEMs"
for d in small_fortworth_srtm3 small_bigtujunga_srtm30_utm11; do
	f="$REPO/../shared/data/dem/$d.tif"
	[ -f "$f" ] || f="$REPO/tools/data/medium_alps_n46e008_srtm3.tif"
	python3 regress/checks/check_catchment.py "$f"
done

echo "== pour point snapping on the demo DEM (the Rhône below Mörel)"
python3 regress/checks/check_snap.py "$REPO/tools/data/medium_alps_n46e008_srtm3.tif"

echo "== stream order, flow length, HAND and wetness index against a reference on real DEMs"
dems=()
for d in tiny_vinschgau_250m_utm32 small_bigtujunga_srtm30_utm11; do
	f="$REPO/../shared/data/dem/$d.tif"
	[ -f "$f" ] && dems+=("$f")
done
python3 regress/checks/check_drainage.py "${dems[@]}" "$REPO/tools/data/medium_alps_n46e008_srtm3.tif"

echo "== a coverage partitioned over a coordinator and 3 workers (tools/cluster.sh)"
dem="$REPO/../shared/data/dem/small_fortworth_srtm3.tif"
[ -f "$dem" ] || dem="$REPO/tools/data/medium_alps_n46e008_srtm3.tif"
python3 regress/checks/check_partitions.py "$dem"

echo "== all tests passed"
