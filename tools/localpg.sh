#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster under .tgdb/ (no system service needed).
#
#   tools/localpg.sh start    create (first time) and start it; create the
#                             database "terra_gpu" with the extension
#   tools/localpg.sh stop     stop it
#   tools/localpg.sh env      print the PG* variables that reach it:
#                             eval "$(tools/localpg.sh env)"
#   tools/localpg.sh destroy  stop it and delete its files
set -euo pipefail
source "$(dirname "$0")/common.sh"

initialised() { [ -f "$TG_PGDATA/PG_VERSION" ]; }
running() { [ -f "$TG_PGDATA/postmaster.pid" ] && as_cluster_owner "$PG_BIN/pg_ctl" -D "$TG_PGDATA" status >/dev/null 2>&1; }

start() {
	if ! initialised; then
		mkdir -p "$TG_PGDATA"
		[ "$(id -u)" = 0 ] && chown postgres "$TG_PGDATA"
		if ! as_cluster_owner test -w "$TG_PGDATA"; then
			echo "the cluster owner ($TG_PGUSER) cannot write $TG_PGDATA; set TG_PGDATA to a directory it can" >&2
			rmdir "$TG_PGDATA" 2>/dev/null
			exit 1
		fi
		as_cluster_owner "$PG_BIN/initdb" -D "$TG_PGDATA" -U "$TG_PGUSER" --auth=trust -E UTF8 \
			--locale=C.UTF-8 >"$TG_PGDATA.initdb.log" 2>&1 || { cat "$TG_PGDATA.initdb.log"; exit 1; }
	fi
	if ! running; then
		as_cluster_owner "$PG_BIN/pg_ctl" -D "$TG_PGDATA" -l "$TG_PGDATA/server.log" -w \
			-o "-p $TG_PGPORT -k $TG_PGSOCKET -c listen_addresses=''" start >/dev/null
	fi
	psql -X -q -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$TG_DATABASE'" | grep -q 1 \
		|| psql -X -q -d postgres -c "CREATE DATABASE $TG_DATABASE"
	psql -X -q -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS terra_gpu CASCADE"
	echo "PostgreSQL is running: psql -h $TG_PGSOCKET -p $TG_PGPORT -U $TG_PGUSER $TG_DATABASE"
}

stop() {
	if running; then
		as_cluster_owner "$PG_BIN/pg_ctl" -D "$TG_PGDATA" -m fast -w stop >/dev/null
	fi
}

case "${1:-}" in
	start) start ;;
	stop) stop ;;
	env) echo "export PGHOST=$PGHOST PGPORT=$PGPORT PGUSER=$PGUSER PGDATABASE=$PGDATABASE" ;;
	destroy) stop; rm -rf "$TG_PGDATA" "$TG_PGDATA.initdb.log" ;;
	*) echo "usage: $0 start|stop|env|destroy" >&2; exit 2 ;;
esac
