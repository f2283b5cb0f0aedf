#!/usr/bin/env python3
"""SQLsmith against terra_gpu as an unprivileged role: random queries, no server crash.

SQLsmith (Debian's sqlsmith) writes random, type-correct queries from the
catalog of the database it connects to: the fuzzer PostgreSQL itself is
hardened with.  Here it connects as an unprivileged login role to a
database holding terra_gpu and small raster tables (a tiled DEM with a
BMMQ-tree index, a single raster, a weight coverage, points, a table with
columns of other types).  The role finds pg_proc through a view of its own
schema, first on its search_path, that keeps terra_gpu's functions and the
PostGIS constructors that make their arguments, so most generated calls
reach terra_gpu (without it, one query in a hundred does).

Passes when the server never crashed: no backend "terminated by signal" in
the server log while the queries ran, no query that lost its connection,
and the server answers afterwards.  Prints the queries run, the calls of
terra_gpu's functions they made (pg_stat_user_functions) and the errors by
message.  Connection: PG* variables (a superuser); the server log is read
from the data directory (server.log, as tools/localpg.sh writes it) when
this user may read it.

    check_sqlsmith.py [--queries N] [--seeds S]
"""

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import psql, psql_script  # noqa: E402

DB = "tg_sqlsmith"
ROLE = "tg_sqlsmith"

# PostGIS functions that build the arguments terra_gpu's functions take
CONSTRUCTORS = ["st_makeemptyraster", "st_addband", "st_setvalue", "st_setvalues", "st_setsrid",
                "st_makepoint", "st_point", "st_makeenvelope", "st_setgeoreference", "st_setscale",
                "st_setskew", "st_setupperleft", "st_setbandnodatavalue", "st_band", "st_tile",
                "st_centroid", "st_envelope", "st_collect", "st_width", "st_height", "st_value",
                "st_summarystats", "st_numbands", "st_srid"]

SETUP = r"""
SET client_min_messages = warning;
CREATE EXTENSION terra_gpu CASCADE;
CREATE ROLE %(role)s LOGIN;
-- a DEM of four 8 x 8 tiles falling south into a valley, its BMMQ index
CREATE TABLE dem (rid integer PRIMARY KEY, rast raster);
INSERT INTO dem
SELECT 1 + tx + 2 * ty, ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(8, 8, 600000 + 80 * tx, 5000160 - 80 * ty,
                                                                   10, -10, 0, 0, 32632), '32BF'::text, 0, -9999),
       1, 1, 1, ARRAY(SELECT ARRAY(SELECT CASE WHEN (r + c) %% 11 = 5 THEN -9999
                                               ELSE 100 + (15 - 8 * ty - r) + abs(8 * tx + c - 8) END
                                   FROM generate_series(0, 7) c) FROM generate_series(0, 7) r)::float8[])
FROM generate_series(0, 1) tx, generate_series(0, 1) ty;
CREATE TABLE weight AS SELECT rid, ST_MapAlgebra(rast, '32BF', '1.0') AS rast FROM dem;
CREATE TABLE whole AS SELECT 1 AS id, ST_Union(rast) AS rast FROM dem;
CREATE TABLE geo AS
SELECT 1 AS rid, ST_AddBand(ST_MakeEmptyRaster(6, 6, 8, 46, 0.001, -0.001, 0, 0, 4326), '16BSI'::text, 7, NULL) AS rast;
CREATE TABLE pts AS
SELECT k AS id, ST_SetSRID(ST_MakePoint(600005 + 20 * k, 5000005 + 10 * k), 32632) AS geom FROM generate_series(0, 7) k;
CREATE TABLE other (rid integer, v integer, t text, f float8, g geometry, b bytea);
INSERT INTO other VALUES (1, 2, 'x', 1.5, 'POINT(1 1)', '\x00');
SELECT tg_bmmq_build('dem_ix', 'dem', bins => ARRAY[105, 110]);
GRANT SELECT ON dem, weight, whole, geo, pts, other TO %(role)s;
CREATE SCHEMA smith AUTHORIZATION %(role)s;
-- what SQLsmith sees of pg_proc: terra_gpu's functions and the constructors of their arguments
CREATE VIEW smith.pg_proc AS
SELECT p.* FROM pg_catalog.pg_proc p
WHERE p.oid IN (SELECT d.objid FROM pg_catalog.pg_depend d
                WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.deptype = 'e'
                  AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'terra_gpu'))
   OR p.pronamespace = 'smith'::regnamespace
   OR (p.proname IN (%(constructors)s)
       AND p.pronamespace = (SELECT extnamespace FROM pg_catalog.pg_extension WHERE extname = 'postgis_raster'));
GRANT SELECT ON smith.pg_proc TO %(role)s;
-- SQLsmith calls no set-returning function: each of terra_gpu's (the coverage
-- forms, the BMMQ queries...) gets a wrapper counting its rows, "any" taken as a number
DO $$
DECLARE
	f record;
BEGIN
	FOR f IN SELECT p.oid, p.proname, n.nspname,
					(SELECT string_agg(CASE WHEN t = '"any"'::regtype THEN 'double precision' ELSE format_type(t, NULL) END,
									   ', ' ORDER BY k) FROM unnest(p.proargtypes) WITH ORDINALITY a(t, k)) AS types,
					(SELECT string_agg('$' || k, ', ' ORDER BY k) FROM generate_series(1, p.pronargs) k) AS args
			 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
			 JOIN pg_catalog.pg_depend d ON d.objid = p.oid AND d.classid = 'pg_catalog.pg_proc'::regclass AND d.deptype = 'e'
			 WHERE d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'terra_gpu') AND p.proretset LOOP
		EXECUTE format('CREATE FUNCTION smith.%%I(%%s) RETURNS bigint LANGUAGE sql AS %%L',
					   f.proname || '_rows', coalesce(f.types, ''),
					   format('SELECT count(*) FROM %%I.%%I(%%s)', f.nspname, f.proname, coalesce(f.args, '')));
	END LOOP;
END $$;
ALTER ROLE %(role)s IN DATABASE %(db)s SET search_path = smith, pg_catalog, public;
ALTER ROLE %(role)s IN DATABASE %(db)s SET statement_timeout = '5s';
ALTER ROLE %(role)s IN DATABASE %(db)s SET terra_gpu.max_memory_mb = 256;
ALTER ROLE %(role)s IN DATABASE %(db)s SET terra_gpu.backend = 'cpu';
ALTER DATABASE %(db)s SET track_functions = 'all';
"""


def server_log():
    path = os.path.join(psql("SHOW data_directory"), "server.log")
    return path if os.access(path, os.R_OK) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=20000, help="queries in all (default 20000)")
    ap.add_argument("--seeds", type=int, default=4, help="SQLsmith runs (seeds 1..S) the queries are split over")
    args = ap.parse_args()

    psql("DROP DATABASE IF EXISTS %s" % DB)
    psql("DROP ROLE IF EXISTS %s" % ROLE)
    psql("CREATE DATABASE %s" % DB)
    psql_script(SETUP % {"role": ROLE, "db": DB,
                         "constructors": ", ".join("'%s'" % c for c in CONSTRUCTORS)}, DB)
    log = server_log()
    log_start = os.path.getsize(log) if log else 0
    host = os.environ.get("PGHOST", "/tmp")
    port = os.environ.get("PGPORT", "5432")
    target = "host=%s port=%s dbname=%s user=%s" % (host, port, DB, ROLE)
    per_seed = (args.queries + args.seeds - 1) // args.seeds
    errors = {}
    lost = 0
    t0 = time.time()
    for seed in range(1, args.seeds + 1):
        p = subprocess.run(["sqlsmith", "--target=" + target, "--max-queries=%d" % per_seed,
                            "--seed=%d" % seed, "--exclude-catalog", "--verbose"],
                           capture_output=True, text=True)
        for line in p.stderr.splitlines():
            m = re.match(r"^(\d+)\t(.*)$", line)
            if m:
                message = re.sub(r'"[^"]*"|\d+', "_", m.group(2))[:110]
                errors[message] = errors.get(message, 0) + int(m.group(1))
                if re.search(r"server closed the connection|connection to server|terminating connection",
                             m.group(2)):
                    lost += int(m.group(1))
        if p.returncode not in (0, 1):
            print("sqlsmith (seed %d) exited with %d:\n%s" % (seed, p.returncode, p.stderr[-2000:]))
            lost += 1
    seconds = time.time() - t0
    alive = psql("SELECT 'up'", DB) == "up"
    calls = psql("SELECT coalesce(sum(calls), 0), count(*) FROM pg_stat_user_functions f "
                 "JOIN pg_depend d ON d.objid = f.funcid AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e' "
                 "WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')", DB).split("|")
    reached = psql("SELECT string_agg(f.funcname || ' ' || f.calls, ', ' ORDER BY f.calls DESC) "
                   "FROM pg_stat_user_functions f JOIN pg_depend d ON d.objid = f.funcid "
                   "AND d.classid = 'pg_proc'::regclass AND d.deptype = 'e' "
                   "WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu')", DB)
    crashes = []
    if log:
        with open(log, errors="replace") as f:
            f.seek(log_start)
            crashes = [l.strip() for l in f if re.search(r"terminated by signal|was terminated by|exited with exit code [^0]", l)]
    print("SQLsmith, %d queries in %d runs as an unprivileged role: %.0f s, %s calls of %s terra_gpu functions"
          % (per_seed * args.seeds, args.seeds, seconds, calls[0], calls[1]))
    print("  calls: %s" % reached)
    for message, n in sorted(errors.items(), key=lambda kv: -kv[1])[:25]:
        print("  %7d  %s" % (n, message))
    ok = alive and lost == 0 and not crashes
    print("  server log: %s" % ("%d crash lines" % len(crashes) if log else "not readable here (not checked)"))
    for line in crashes[:10]:
        print("    " + line)
    psql("DROP DATABASE %s" % DB)
    psql("DROP ROLE %s" % ROLE)
    print("sqlsmith: %s (connections lost: %d, server %s)" % ("passed" if ok else "FAILED", lost,
                                                              "up" if alive else "down"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
