#!/usr/bin/env bash
# A coordinator and N workers as throwaway PostgreSQL clusters on one machine
# (Unix sockets only), for coverages partitioned over several servers.
#
#   tools/cluster.sh up N            create (first time) and start the coordinator
#                                    and N workers; terra_gpu (with postgis) in each,
#                                    postgres_fdw and dblink on the coordinator, one
#                                    foreign server w1..wN per worker
#   tools/cluster.sh load DEM TABLE [TILE]
#                                    load DEM (any GDAL source, a VRT included) in
#                                    tiles of TILE x TILE (default 256), partitioned
#                                    by rows of tiles: the tile rows are split into N
#                                    contiguous ranges, worker k reads range k from
#                                    the file into its local table TABLE (all workers
#                                    at once, in chunks of rows, nothing through the
#                                    coordinator); tiles numbered as raster2pgsql
#                                    numbers the whole file's; the coordinator's
#                                    TABLE is partitioned by tile_row, its partitions
#                                    TABLE_wk are postgres_fdw foreign tables on the
#                                    workers
#   tools/cluster.sh env             the PG* variables that reach the coordinator
#   tools/cluster.sh stop            stop every cluster
#   tools/cluster.sh down            stop them and delete their files
#
# Settings: TG_CLUSTER_DIR (default .tgcluster/ beside the cluster of localpg.sh), TG_CLUSTER_PORT
# (coordinator's port, default 5460; worker k listens on PORT+k), PG_BIN (the
# PostgreSQL whose lib/ holds terra_gpu: install it there first).
set -euo pipefail
source "$(dirname "$0")/common.sh"

# beside the single cluster (.tgdb/, or its place under /var/tmp when the
# cluster owner cannot reach the checkout)
DIR=${TG_CLUSTER_DIR:-$(dirname "$TG_PGDATA")/.tgcluster}
PORT=${TG_CLUSTER_PORT:-5460}
SOCK=$TG_PGSOCKET

workers() { cat "$DIR/workers" 2>/dev/null || echo 0; }
port_of() { echo $((PORT + $1)); }            # 0: coordinator, k: worker k
data_of() { if [ "$1" = 0 ]; then echo "$DIR/coordinator"; else echo "$DIR/w$1"; fi; }
sql_on() {  # node, then psql arguments
	local n=$1; shift
	psql -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$(port_of "$n")" -U "$TG_PGUSER" -d "$TG_DATABASE" "$@"
}

start_node() {
	local n=$1 data
	data=$(data_of "$n")
	if [ ! -f "$data/PG_VERSION" ]; then
		mkdir -p "$data"
		[ "$(id -u)" = 0 ] && chown postgres "$data"
		as_cluster_owner "$PG_BIN/initdb" -D "$data" -U "$TG_PGUSER" --auth=trust -E UTF8 \
			--locale=C.UTF-8 >"$data.initdb.log" 2>&1 || { cat "$data.initdb.log"; exit 1; }
	fi
	if ! as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
		as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" -l "$data/server.log" -w \
			-o "-p $(port_of "$n") -k $SOCK -c listen_addresses='' -c max_prepared_transactions=16" start >/dev/null
	fi
	psql -X -q -h "$SOCK" -p "$(port_of "$n")" -U "$TG_PGUSER" -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = '$TG_DATABASE'" | grep -q 1 ||
		psql -X -q -h "$SOCK" -p "$(port_of "$n")" -U "$TG_PGUSER" -d postgres -c "CREATE DATABASE $TG_DATABASE"
	sql_on "$n" -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS terra_gpu CASCADE"
}

up() {
	local n=${1:?usage: $0 up N}
	[ "$n" -ge 1 ] || { echo "N must be at least 1" >&2; exit 2; }
	local old; old=$(workers)
	if [ "$old" != 0 ] && [ "$old" != "$n" ]; then
		echo "$DIR holds $old workers: run '$0 down' first" >&2; exit 1
	fi
	mkdir -p "$DIR"
	[ "$(id -u)" = 0 ] && chown postgres "$DIR"
	echo "$n" >"$DIR/workers"
	for k in $(seq 0 "$n"); do start_node "$k"; done
	# the coordinator reaches worker k as foreign server wk (postgres_fdw) and by
	# the same name through dblink (a foreign server is a valid dblink connection);
	# kept when they exist, so that 'up' again keeps the loaded partitions
	local s="SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgres_fdw; CREATE EXTENSION IF NOT EXISTS dblink;"
	for k in $(seq 1 "$n"); do
		s+="
CREATE SERVER IF NOT EXISTS w$k FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$SOCK', port '$(port_of "$k")', dbname '$TG_DATABASE', batch_size '64', fetch_size '64');
CREATE USER MAPPING IF NOT EXISTS FOR CURRENT_USER SERVER w$k OPTIONS (user '$TG_PGUSER');"
	done
	sql_on 0 -c "$s"
	echo "coordinator: psql -h $SOCK -p $PORT -U $TG_PGUSER $TG_DATABASE; workers on ports $((PORT + 1))..$((PORT + n))"
}

# One worker's rows [lo, hi) of tiles, read from the file in chunks of tile
# rows (gdal_translate -srcwin: any GDAL source, a VRT that resamples
# included, no file-size limit) straight into the worker's own table.
# Tiles come in raster2pgsql's form (where it is missing, the worker's server
# reads each chunk itself: ST_FromGDALRaster, ST_Tile).  A chunk's origin is
# the file's shifted, rounded once more: each tile is placed again where a
# whole-file load puts it (the grid's origin plus its pixel offset times the
# pixel size, in doubles), and gets its tile_row; rid is set afterwards
# (number_part).
load_part() {
	local k=$1 lo=$2 hi=$3 dem=$4 table=$5 tile=$6 srid=$7 tmp=$8
	local step=$((CHUNK_BYTES / (GRID_W * tile * PIXEL_BYTES))) y0 y1 chunk
	[ "$step" -ge 1 ] || step=1
	sql_on "$k" -c "SET client_min_messages = warning; DROP TABLE IF EXISTS $table;
CREATE TABLE $table (rid integer, tile_row integer, rast raster);
CREATE OR REPLACE FUNCTION ${table}_place_tile() RETURNS trigger LANGUAGE plpgsql AS \$f\$
DECLARE
	r integer := round(($GRID_Y0::float8 - ST_UpperLeftY(NEW.rast)) / ($tile * abs($GRID_SY::float8)));
	c integer := round((ST_UpperLeftX(NEW.rast) - $GRID_X0::float8) / ($tile * abs($GRID_SX::float8)));
BEGIN
	NEW.tile_row := r;
	NEW.rast := ST_SetUpperLeft(NEW.rast, $GRID_X0::float8 + (c * $tile)::float8 * $GRID_SX::float8,
								$GRID_Y0::float8 + (r * $tile)::float8 * $GRID_SY::float8);
	RETURN NEW;
END \$f\$;
CREATE TRIGGER place_tile BEFORE INSERT ON $table FOR EACH ROW EXECUTE FUNCTION ${table}_place_tile();"
	for ((r = lo; r < hi; r += step)); do
		y0=$((r * tile)) y1=$(((r + step < hi ? r + step : hi) * tile))
		[ "$y1" -le "$GRID_H" ] || y1=$GRID_H
		chunk=$tmp/w$k-$r.tif
		gdal_translate -q -of GTiff -srcwin 0 "$y0" "$GRID_W" $((y1 - y0)) "$dem" "$chunk"
		chmod 644 "$chunk"
		if command -v raster2pgsql >/dev/null; then
			raster2pgsql -a -q -s "$srid" -Y -t "${tile}x${tile}" "$chunk" "$table" 2> >(grep -v '^Processing' >&2) |
				sql_on "$k" -f - >/dev/null
		else
			sql_on "$k" -v path="$chunk" -f - >/dev/null <<-SQL
				SET postgis.gdal_enabled_drivers = 'ENABLE_ALL';
				INSERT INTO $table (rast)
				SELECT t FROM (SELECT ST_SetSRID(ST_FromGDALRaster(pg_read_binary_file(:'path')), $srid) AS r) s,
					 ST_Tile(s.r, $tile, $tile) AS t;
			SQL
		fi
		rm -f "$chunk"
	done
}

# rid as raster2pgsql numbers the whole file's tiles (row by row, from 1),
# after the TILES_ABOVE[k] tiles of the workers above; then the table's keys
# and checks.
number_part() {
	local k=$1 lo=$2 hi=$3 table=$4 west=$5
	sql_on "$k" -c "SET client_min_messages = warning;
DROP TRIGGER place_tile ON $table; DROP FUNCTION ${table}_place_tile();
UPDATE $table t SET rid = o.r
FROM (SELECT ctid AS c, ${TILES_ABOVE[k]} + row_number() OVER (ORDER BY tile_row, $west * ST_UpperLeftX(rast)) AS r
      FROM $table) o
WHERE t.ctid = o.c;
ALTER TABLE $table ALTER COLUMN tile_row SET NOT NULL, ALTER COLUMN rid SET NOT NULL, ADD PRIMARY KEY (rid),
  ADD CHECK (tile_row >= $lo AND tile_row < $hi);" >/dev/null
	sql_on "$k" -c "VACUUM ANALYZE $table"
}

# run "$@" once per worker k (the word K replaced by k, LO and HI by its rows
# of tiles), all at once; fail if any does
each_worker() {
	local n=$1 nrows=$2; shift 2
	local pids=() k
	for k in $(seq 1 "$n"); do
		local lo=$(((k - 1) * nrows / n)) hi=$((k * nrows / n)) args=()
		for a in "$@"; do a=${a//@K@/$k}; a=${a//@LO@/$lo}; args+=("${a//@HI@/$hi}"); done
		"${args[@]}" >"$DIR/load-w$k.log" 2>&1 &
		pids+=($!)
	done
	local failed=0
	for k in $(seq 1 "$n"); do
		if ! wait "${pids[k - 1]}"; then
			echo "worker w$k:" >&2; cat "$DIR/load-w$k.log" >&2; failed=1
		fi
	done
	return $failed
}

load() {
	local dem=${1:?usage: $0 load DEM TABLE [TILE]} table=${2:?usage: $0 load DEM TABLE [TILE]} tile=${3:-256}
	local n; n=$(workers)
	[ "$n" -ge 1 ] || { echo "no cluster: run '$0 up N' first" >&2; exit 1; }
	[[ $table =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "TABLE must be a plain lower-case name" >&2; exit 2; }
	[[ $tile =~ ^[0-9]+$ ]] && [ "$tile" -ge 16 ] || { echo "TILE must be a number of at least 16" >&2; exit 2; }
	dem=$(realpath "$dem")
	local info srid
	info=$(gdalinfo "$dem") || exit 1
	srid=$(gdalsrsinfo -o epsg "$dem" 2>/dev/null | sed -n 's/^EPSG:\([0-9]*\).*/\1/p' | head -1)
	srid=${srid:-4326}
	GRID_W=$(sed -n 's/^Size is \([0-9]*\), *\([0-9]*\)/\1/p' <<<"$info")
	GRID_H=$(sed -n 's/^Size is \([0-9]*\), *\([0-9]*\)/\2/p' <<<"$info")
	[ -n "$GRID_W" ] && [ -n "$GRID_H" ] || { echo "$dem: no size in gdalinfo's report" >&2; exit 1; }
	case $(sed -n 's/^Band 1 .*Type=\([A-Za-z0-9]*\).*/\1/p' <<<"$info") in
		Byte | Int8) PIXEL_BYTES=1 ;; Int16 | UInt16) PIXEL_BYTES=2 ;; Float64) PIXEL_BYTES=8 ;; *) PIXEL_BYTES=4 ;;
	esac
	CHUNK_BYTES=${TG_LOAD_CHUNK_BYTES:-201326592}
	local nrows=$(((GRID_H + tile - 1) / tile))
	if [ "$nrows" -lt "$n" ]; then
		echo "$dem in tiles of $tile has $nrows rows of tiles, fewer than the $n workers: choose a smaller TILE" >&2
		exit 1
	fi
	LOAD_TMP=$(mktemp -d "$DIR/load.XXXXXX")
	chmod 755 "$LOAD_TMP"
	trap 'rm -rf "$LOAD_TMP"' EXIT
	# the grid's origin and pixel size exactly as PostGIS reads them (gdalinfo
	# prints them rounded): the coordinator's server reads the first pixel
	gdal_translate -q -of GTiff -srcwin 0 0 1 1 "$dem" "$LOAD_TMP/origin.tif" && chmod 644 "$LOAD_TMP/origin.tif"
	read -r GRID_X0 GRID_Y0 GRID_SX GRID_SY skew < <(sql_on 0 -F ' ' -v path="$LOAD_TMP/origin.tif" -f - <<-SQL
		SET postgis.gdal_enabled_drivers = 'ENABLE_ALL';
		SELECT ST_UpperLeftX(r), ST_UpperLeftY(r), ST_ScaleX(r), ST_ScaleY(r), abs(ST_SkewX(r)) + abs(ST_SkewY(r))
		FROM (SELECT ST_FromGDALRaster(pg_read_binary_file(:'path')) AS r) s;
	SQL
	)
	[ -n "${GRID_SY:-}" ] || { echo "$dem: the server could not read its georeference" >&2; exit 1; }
	[ "$skew" = 0 ] || { echo "$dem is rotated (skew $skew): not supported" >&2; exit 1; }
	sql_on 0 -c "SET client_min_messages = warning; DROP TABLE IF EXISTS $table CASCADE"
	each_worker "$n" "$nrows" load_part @K@ @LO@ @HI@ "$dem" "$table" "$tile" "$srid" "$LOAD_TMP" || exit 1
	# each worker's rid follows the tiles of the workers above it
	local west=1 k
	[[ $GRID_SX == -* ]] && west=-1
	TILES_ABOVE=(0 0)
	for k in $(seq 1 "$n"); do
		TILES_ABOVE[k + 1]=$((TILES_ABOVE[k] + $(sql_on "$k" -c "SELECT count(*) FROM $table")))
	done
	each_worker "$n" "$nrows" number_part @K@ @LO@ @HI@ "$table" "$west" || exit 1
	# the coordinator's table: partitioned by tile_row, each partition a
	# postgres_fdw foreign table on its worker
	local s="SET client_min_messages = warning;
CREATE TABLE $table (rid integer NOT NULL, tile_row integer NOT NULL, rast raster) PARTITION BY RANGE (tile_row);"
	for k in $(seq 1 "$n"); do
		s+="
CREATE FOREIGN TABLE ${table}_w$k PARTITION OF $table FOR VALUES FROM ($(((k - 1) * nrows / n))) TO ($((k * nrows / n)))
  SERVER w$k OPTIONS (table_name '$table');"
	done
	sql_on 0 -c "$s"
	sql_on 0 -c "ANALYZE $table"
	echo "$table: $nrows rows of tiles over $n workers"
	for k in $(seq 1 "$n"); do
		echo "  w$k: $(sql_on "$k" -c "SELECT count(*) || ' tiles, rows ' || min(tile_row) || '..' || max(tile_row) FROM $table")"
	done
}

stop() {
	local n k data; n=$(workers)
	for k in $(seq 0 "$n"); do
		data=$(data_of "$k")
		[ -f "$data/postmaster.pid" ] || continue
		# a server that does not finish a fast shutdown in time is stopped at
		# once: 'down' must never delete the files of a running server
		as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" -m fast -t 90 -w stop >/dev/null 2>&1 ||
			as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" -m immediate -t 60 -w stop >/dev/null 2>&1 || true
		if [ -f "$data/postmaster.pid" ] && as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
			echo "the server in $data does not stop" >&2; exit 1
		fi
	done
}

case "${1:-}" in
	up) shift; up "$@" ;;
	load) shift; load "$@" ;;
	env) echo "export PGHOST=$SOCK PGPORT=$PORT PGUSER=$TG_PGUSER PGDATABASE=$TG_DATABASE" ;;
	stop) stop ;;
	down) stop; rm -rf "$DIR" ;;
	*) echo "usage: $0 up N | load DEM TABLE [TILE] | env | stop | down" >&2; exit 2 ;;
esac
