#!/usr/bin/env bash
# A coordinator and N workers as throwaway PostgreSQL clusters on one machine
# (Unix sockets only), for coverages partitioned over several servers.
#
#   tools/cluster.sh up N            create (first time) and start the coordinator
#                                    and N workers; terra_gpu (with postgis) in each,
#                                    postgres_fdw and dblink on the coordinator, one
#                                    foreign server w1..wN per worker
#   tools/cluster.sh load DEM TABLE [TILE]
#                                    load DEM (a GDAL file) in tiles of TILE x TILE
#                                    (default 256), partitioned by rows of tiles:
#                                    the tile rows are split into N contiguous ranges,
#                                    worker k holds range k as its local table TABLE;
#                                    the coordinator's TABLE is partitioned by
#                                    tile_row, its partitions TABLE_wk are
#                                    postgres_fdw foreign tables on the workers
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

load() {
	local dem=${1:?usage: $0 load DEM TABLE [TILE]} table=${2:?usage: $0 load DEM TABLE [TILE]} tile=${3:-256}
	local n; n=$(workers)
	[ "$n" -ge 1 ] || { echo "no cluster: run '$0 up N' first" >&2; exit 1; }
	[[ $table =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "TABLE must be a plain lower-case name" >&2; exit 2; }
	local srid
	srid=$(gdalsrsinfo -o epsg "$dem" 2>/dev/null | sed -n 's/^EPSG:\([0-9]*\).*/\1/p' | head -1)
	# the tiles, numbered in raster2pgsql's order, land in a staging table on
	# the coordinator, then move to the workers through the foreign partitions
	if command -v raster2pgsql >/dev/null; then
		raster2pgsql -q -s "${srid:-4326}" -Y -t "${tile}x${tile}" "$dem" "${table}_load" 2> >(grep -v '^Processing' >&2) |
			sql_on 0 -c "SET client_min_messages = warning; DROP TABLE IF EXISTS ${table}_load, $table CASCADE" -f -
	else
		# a PostGIS without its loader: the coordinator reads the file itself
		# (the server's own GDAL; files under 1 GB), tiles in the same order
		local path; path=$(realpath "$dem")
		sql_on 0 -v path="$path" -f - <<-SQL
			SET client_min_messages = warning;
			SET postgis.gdal_enabled_drivers = 'ENABLE_ALL';
			DROP TABLE IF EXISTS ${table}_load, $table CASCADE;
			CREATE TABLE ${table}_load AS
			SELECT (row_number() OVER ())::int AS rid, t AS rast
			FROM (SELECT ST_SetSRID(ST_FromGDALRaster(pg_read_binary_file(:'path')), ${srid:-4326}) AS r) s,
				 ST_Tile(s.r, $tile, $tile) AS t;
		SQL
	fi
	local nrows
	nrows=$(sql_on 0 -c "SELECT count(DISTINCT ST_UpperLeftY(rast)) FROM ${table}_load")
	if [ "$nrows" -lt "$n" ]; then
		sql_on 0 -c "DROP TABLE ${table}_load"
		echo "$dem in tiles of $tile has $nrows rows of tiles, fewer than the $n workers: choose a smaller TILE" >&2
		exit 1
	fi
	local s="SET client_min_messages = warning;
CREATE TABLE $table (rid integer NOT NULL, tile_row integer NOT NULL, rast raster) PARTITION BY RANGE (tile_row);"
	for k in $(seq 1 "$n"); do
		# rows [lo, hi) of tiles: contiguous ranges, sizes differing by at most one
		local lo=$(((k - 1) * nrows / n)) hi=$((k * nrows / n))
		sql_on "$k" -c "SET client_min_messages = warning; DROP TABLE IF EXISTS $table;
CREATE TABLE $table (rid integer PRIMARY KEY, tile_row integer NOT NULL CHECK (tile_row >= $lo AND tile_row < $hi), rast raster);"
		s+="
CREATE FOREIGN TABLE ${table}_w$k PARTITION OF $table FOR VALUES FROM ($lo) TO ($hi)
  SERVER w$k OPTIONS (table_name '$table');"
	done
	# tile_row: rank of the tile's top edge, north to south (rows of equal tiles)
	s+="
INSERT INTO $table SELECT rid, (dense_rank() OVER (ORDER BY ST_UpperLeftY(rast) DESC))::int - 1, rast FROM ${table}_load;
DROP TABLE ${table}_load;"
	sql_on 0 -c "$s"
	for k in $(seq 1 "$n"); do sql_on "$k" -c "ANALYZE $table"; done
	sql_on 0 -c "ANALYZE $table"
	echo "$table: $nrows rows of tiles over $n workers"
	for k in $(seq 1 "$n"); do
		echo "  w$k: $(sql_on "$k" -c "SELECT count(*) || ' tiles, rows ' || min(tile_row) || '..' || max(tile_row) FROM $table")"
	done
}

stop() {
	local n; n=$(workers)
	for k in $(seq 0 "$n"); do
		local data; data=$(data_of "$k")
		if [ -f "$data/postmaster.pid" ] && as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
			as_cluster_owner "$PG_BIN/pg_ctl" -D "$data" -m fast -w stop >/dev/null
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
