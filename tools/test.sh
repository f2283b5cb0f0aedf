#!/usr/bin/env bash
# Run every test on a fresh Debian 12 machine: install and build (setup.sh),
# the core's layering, the core unit tests and the raster decoder fuzz test (no server), the
# pg_regress suites against a throwaway cluster, the README's SQL examples,
# the agreement of tg_slope with ST_Slope and gdaldem, of the other local
# derivatives with gdaldem, PostGIS and references, hydrology
# invariants, BMMQ-tree queries, stream order, flow length, HAND and wetness
# against a reference, the coverage forms and a coverage
# partitioned over several throwaway servers, on the real DEMs of tools/data.
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

echo "== SQLsmith: random queries as an unprivileged role, no server crash"
if ! command -v sqlsmith >/dev/null; then
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sqlsmith >/dev/null
fi
python3 regress/checks/check_sqlsmith.py --queries "${TG_SQLSMITH_QUERIES:-20000}"

echo "== upgrade from every release: ALTER EXTENSION terra_gpu UPDATE against a fresh install"
python3 regress/checks/check_upgrade.py

echo "== README examples"
python3 tools/run_doc_examples.py

# The real DEMs are those of tools/data (tools/data/PROVENANCE.md): a check
# whose file is missing fails.  TG_EXTRA_DEMS may name a directory of more
# DEMs; the checks then also run on the ones named after "--" below that it
# holds, which never decides whether a check runs.
dems() {
	local d extra=false
	DEMS=()
	for d in "$@"; do
		if [ "$d" = -- ]; then
			extra=true
		elif ! $extra; then
			DEMS+=("$REPO/tools/data/$d.tif")
		elif [ -n "${TG_EXTRA_DEMS:-}" ] && [ -f "$TG_EXTRA_DEMS/$d.tif" ]; then
			DEMS+=("$TG_EXTRA_DEMS/$d.tif")
		fi
	done
}
ALPS=medium_alps_n46e008_srtm3                      # geographic, oblong cells, voids
HIGHLANDS=small_srilanka_highlands_srtm3_utm44_90m  # projected, Int16, steep
ALPS_UTM=small_alps_srtm3_utm32_250m                # projected, Float32, nodata holes
PUTTALAM=small_srilanka_puttalam_srtm3              # geographic, low relief, the sea a flat at 0
SRILANKA_30S=tiny_srilanka_30s                      # geographic, small, the sea nodata

echo "== tg_slope against ST_Slope and gdaldem on real DEMs"
dems $HIGHLANDS $ALPS $ALPS_UTM $PUTTALAM -- small_bigtujunga_srtm30_utm11 small_enoriver_ned10m \
	medium_meghalaya_50m_utm46
python3 regress/checks/check_slope_agreement.py "${DEMS[@]}"

echo "== aspect, hillshade, TPI, TRI, roughness against gdaldem and PostGIS, curvatures and geomorphons against references"
dems $ALPS $HIGHLANDS -- small_bigtujunga_srtm30_utm11
python3 regress/checks/check_terrain.py "${DEMS[@]}"

echo "== hydrology invariants on real DEMs"
dems $SRILANKA_30S $PUTTALAM $ALPS_UTM $ALPS -- small_fortworth_srtm3 tiny_luxembourg_30s tiny_vinschgau_250m_utm32
python3 regress/checks/check_hydrology.py "${DEMS[@]}"

echo "== BMMQ-tree queries against brute force on real DEMs"
dems $HIGHLANDS $ALPS_UTM -- small_bigtujunga_srtm30_utm11 tiny_vinschgau_250m_utm32
python3 regress/checks/check_bmmq.py "${DEMS[@]}"

echo "== coverage forms against the value forms on real DEMs"
dems $PUTTALAM $ALPS_UTM $HIGHLANDS -- small_fortworth_srtm3 tiny_vinschgau_250m_utm32 small_bigtujunga_srtm30_utm11
python3 regress/checks/check_coverage.py "${DEMS[@]}"

echo "== the scale benchmark's small run: an enlarged DEM loaded in strips covers its grid once, equals a whole-file load"
dems $ALPS
python3 bench/scale_sql.py "${DEMS[0]}" --sizes 2048x2048 --strip-mb 1 --check

echo "== many sessions, cancels and repetition on real DEMs"
dems $ALPS
python3 regress/checks/check_sessions.py "${DEMS[0]}" --big-scale 3

echo "== RUSLE, travel time, watersheds and isochrones against references on real DEMs"
dems $PUTTALAM $HIGHLANDS -- small_fortworth_srtm3 small_bigtujunga_srtm30_utm11
for f in "${DEMS[@]}"; do
	python3 regress/checks/check_catchment.py "$f"
done

echo "== pour point snapping on the demo DEM (the Rhône below Mörel)"
dems $ALPS
python3 regress/checks/check_snap.py "${DEMS[0]}"

echo "== stream order, flow length, HAND and wetness index against a reference on real DEMs"
dems $ALPS_UTM $HIGHLANDS $ALPS -- tiny_vinschgau_250m_utm32 small_bigtujunga_srtm30_utm11
python3 regress/checks/check_drainage.py "${DEMS[@]}"

echo "== a coverage partitioned over a coordinator and 3 workers (tools/cluster.sh)"
dems $PUTTALAM
python3 regress/checks/check_partitions.py "${DEMS[0]}"

echo "== the QGIS plugin: its zip, and each algorithm through headless Processing against its SQL call"
dpkg-query -W -f='${Status}' python3-qgis 2>/dev/null | grep -q "install ok installed" || {
	echo "== installing: python3-qgis"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-qgis >/dev/null
}
make -s qgis-plugin
/usr/bin/python3 regress/checks/check_qgis.py

echo "== all tests passed"
