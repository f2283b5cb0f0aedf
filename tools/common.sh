# Shared settings of the tools/ scripts (sourced, not run).
# A throwaway PostgreSQL cluster of our own: no system service is touched.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
TG_PGPORT=${TG_PGPORT:-5499}
TG_PGSOCKET=${TG_PGSOCKET:-/tmp}
TG_PGDATA_SET=${TG_PGDATA:+1}
TG_PGDATA=${TG_PGDATA:-$REPO/.tgdb}
TG_DATABASE=${TG_DATABASE:-terra_gpu}

# PostgreSQL refuses to run as root: then the cluster belongs to "postgres",
# and lives under /var/tmp if "postgres" cannot reach the checkout (a clone
# under /root, say).
if [ "$(id -u)" = 0 ]; then
	TG_PGUSER=postgres
	if [ -z "${TG_PGDATA_SET:-}" ] && id postgres >/dev/null 2>&1 &&
		! runuser -u postgres -- test -x "$REPO" 2>/dev/null; then
		TG_PGDATA=/var/tmp/terra_gpu-$(echo "$REPO" | md5sum | cut -c1-8)/tgdb
		mkdir -p "$(dirname "$TG_PGDATA")"
	fi
else
	TG_PGUSER=$(id -un)
fi

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# (from /, which the owner can always enter, whatever the caller's directory)
as_cluster_owner() {
	if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

export PGHOST=$TG_PGSOCKET PGPORT=$TG_PGPORT PGUSER=$TG_PGUSER PGDATABASE=$TG_DATABASE
