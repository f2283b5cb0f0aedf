#!/usr/bin/env bash
# Install what terra_gpu needs on Debian 12 (PostgreSQL 15, PostGIS 3.3, GDAL
# and its Python bindings for the demo's DEM, build tools), then build and
# install the extension.  CUDA kernels are built when nvcc is found (PATH or
# /usr/local/cuda); without it the extension is built CPU-only.  Safe to run
# again.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$REPO"

packages=(postgresql-15 postgresql-server-dev-15 postgresql-15-postgis-3
          postgresql-15-postgis-3-scripts postgis gdal-bin python3-gdal make gcc python3)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "== installing: ${missing[*]}"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "== building terra_gpu"
make -s PG_CONFIG="$PG_BIN/pg_config" ${EXTRA_CFLAGS:+EXTRA_CFLAGS="$EXTRA_CFLAGS"}
echo "== installing terra_gpu into $("$PG_BIN/pg_config" --pkglibdir)"
as_root make -s install PG_CONFIG="$PG_BIN/pg_config"
