#!/usr/bin/env python3
"""The upgrade path: ALTER EXTENSION terra_gpu UPDATE from every released version.

  - the committed upgrade script is what tools/gen_upgrade.py writes now;
  - in a scratch database, the frozen install script of the release runs
    with the current library (its C entry points still resolve), a BMMQ
    index is built and queried, the extension is updated, and the index
    answers the same, to superusers and to a role that may read its table;
    the source's stale triggers are 0.2.0's (a statement that changes no
    row leaves the index fresh, one that does marks it stale);
  - the upgraded database holds the same objects as a fresh install:
    extension members (pg_describe_object), function definitions, comments
    and privileges, table columns, row-level security policies, table and
    schema privileges, event triggers, extension configuration tables.
Fails (exit 1) when one does not hold.  Connection: PG* variables; needs
make install of the current tree.
"""

import os
import subprocess
import sys

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "tools"))
from tg_tools import check, checks_exit_status, psql  # noqa: E402

RELEASES = ["0.1.0"]
def current_version():
    with open(os.path.join(REPO, "terra_gpu.control")) as f:
        for line in f:
            if line.startswith("default_version"):
                return line.split("'")[1]


def fresh_db(db, version=None):
    psql("DROP DATABASE IF EXISTS %s" % db)
    psql("CREATE DATABASE %s" % db)
    psql("SET client_min_messages = warning; CREATE EXTENSION postgis; CREATE EXTENSION postgis_raster; "
         "CREATE EXTENSION terra_gpu%s" % (" VERSION '%s'" % version if version else ""), db)


# a coverage of 3 x 2 tiles of 40 x 30 cells, values that vary in both directions
COVERAGE = """
CREATE TABLE up_dem (rid integer PRIMARY KEY, rast raster);
INSERT INTO up_dem
SELECT tx + 3 * ty + 1, ST_SetValues(
         ST_AddBand(ST_MakeEmptyRaster(40, 30, 500000 + 400 * tx, 4000000 - 300 * ty, 10, -10, 0, 0, 32633),
                    '32BF'::text, 0, -9999),
         1, 1, 1, ARRAY(SELECT ARRAY(SELECT (100 * sin((40 * tx + c) / 17.0) + 80 * cos((30 * ty + r) / 11.0))::real
                                     FROM generate_series(0, 39) c)
                        FROM generate_series(0, 29) r)::float8[])
FROM generate_series(0, 2) tx, generate_series(0, 1) ty;
"""

QUERIES = [
    "SELECT tile_id, level, morton, min_bin, max_bin, boundary FROM tg_bmmq_roi('up', -50, 50) ORDER BY 1, 2, 3",
    "SELECT tile_id, level, morton FROM tg_bmmq_roi('up', -20, 35, refine => true) ORDER BY 1, 2, 3",
    "SELECT tile_id, level, morton, min_bin, max_bin FROM tg_bmmq_range('up', "
    "ST_MakeEnvelope(500123, 3999555, 500987, 3999888, 32633)) ORDER BY 1, 2, 3",
    "SELECT tile_id, level, morton, boundary FROM tg_bmmq_roi(ARRAY['up', 'up_q'], ARRAY[-50, 0], ARRAY[50, 1000]) "
    "ORDER BY 1, 2, 3",
]


def answers(db, role=None):
    pre = "SET ROLE %s; " % role if role else ""
    return [psql(pre + q, db) for q in QUERIES]


# What a fresh install and an upgraded database must agree on, one query each.
SHAPE = {
    "extension members": """
        SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
        WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
          AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu') ORDER BY 1""",
    "function definitions, comments and privileges": """
        SELECT p.oid::regprocedure, md5(pg_get_functiondef(p.oid)), obj_description(p.oid, 'pg_proc'),
               (SELECT array_agg(a::text ORDER BY a::text) FROM unnest(coalesce(p.proacl, acldefault('f', p.proowner))) a)
        FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
        WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
          AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'terra_gpu') ORDER BY p.oid::regprocedure::text""",
    "table columns": """
        SELECT c.oid::regclass, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(ad.adbin, ad.adrelid)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
        WHERE c.relnamespace = 'terra_gpu'::regnamespace ORDER BY c.oid::regclass::text, a.attnum""",
    "tables: comments, privileges, row-level security, indexes": """
        SELECT c.oid::regclass, c.relkind, obj_description(c.oid, 'pg_class'), c.relacl, c.relrowsecurity,
               c.relforcerowsecurity, (SELECT array_agg(pg_get_indexdef(i.indexrelid) ORDER BY pg_get_indexdef(i.indexrelid))
                                       FROM pg_index i WHERE i.indrelid = c.oid)
        FROM pg_class c WHERE c.relnamespace = 'terra_gpu'::regnamespace ORDER BY c.oid::regclass::text""",
    "policies": "SELECT tablename, policyname, permissive, roles, cmd, qual, with_check FROM pg_policies "
                "WHERE schemaname = 'terra_gpu' ORDER BY 1, 2",
    "schema": "SELECT nspname, nspacl, obj_description(oid, 'pg_namespace') FROM pg_namespace "
              "WHERE nspname = 'terra_gpu'",
    "event triggers": "SELECT evtname, evtevent, evtfoid::regprocedure, evtenabled, evttags FROM pg_event_trigger "
                      "ORDER BY 1",
    "configuration tables": "SELECT extversion, (SELECT array_agg(c::regclass ORDER BY c::regclass::text) "
                            "FROM unnest(extconfig) c), extcondition FROM pg_extension WHERE extname = 'terra_gpu'",
}


def main():
    version = current_version()
    print("== upgrade script up to date")
    gen = subprocess.run([sys.executable, os.path.join(REPO, "tools", "gen_upgrade.py"), RELEASES[-1], "--check"],
                         capture_output=True, text=True)
    print("  " + (gen.stdout + gen.stderr).strip())
    check(gen.returncode == 0, "sql/terra_gpu--%s--%s.sql is what tools/gen_upgrade.py writes" % (RELEASES[-1], version))

    fresh = "tg_check_upgrade_fresh"
    fresh_db(fresh)
    check(psql("SELECT tg_version() = extversion FROM pg_extension WHERE extname = 'terra_gpu'", fresh) == "t",
          "tg_version() is the extension's version %s" % version)

    for old in RELEASES:
        db = "tg_check_upgrade_from_%s" % old.replace(".", "_")
        print("== from %s" % old)
        fresh_db(db, old)
        check(psql("SELECT extversion FROM pg_extension WHERE extname = 'terra_gpu'", db) == old,
              "the frozen %s script installs with the current library" % old)
        psql(COVERAGE, db)
        psql("SELECT tg_bmmq_build('up', 'up_dem', nbins => 12); "
             "SELECT tg_bmmq_build('up_q', 'up_dem', nbins => 6, bin_method => 'quantile')", db)
        before = answers(db)
        check(all(len(a.splitlines()) > 0 for a in before), "%s answers every query (%s rows)"
              % (old, "/".join(str(len(a.splitlines())) for a in before)))

        psql("ALTER EXTENSION terra_gpu UPDATE TO '%s'" % version, db)
        check(psql("SELECT extversion FROM pg_extension WHERE extname = 'terra_gpu'", db) == version
              and psql("SELECT tg_version()", db) == version, "updated to %s" % version)
        check(answers(db) == before, "the index answers the same after the update")
        psql("SET client_min_messages = warning; DROP ROLE IF EXISTS tg_check_upgrade_reader; "
             "CREATE ROLE tg_check_upgrade_reader")
        psql("GRANT SELECT ON up_dem TO tg_check_upgrade_reader", db)
        try:
            check(answers(db, "tg_check_upgrade_reader") == before, "and the same to a role that may read the table")
        finally:
            psql("REVOKE SELECT ON up_dem FROM tg_check_upgrade_reader", db)
            psql("DROP ROLE tg_check_upgrade_reader")
        triggers = psql("SELECT string_agg(tgname, ',' ORDER BY tgname) FROM pg_trigger "
                        "WHERE tgrelid = 'up_dem'::regclass", db)
        check(triggers == "tg_bmmq_stale_delete,tg_bmmq_stale_insert,tg_bmmq_stale_truncate,tg_bmmq_stale_update",
              "the source has the %s stale triggers: %s" % (version, triggers))
        psql("UPDATE up_dem SET rid = rid WHERE false", db)
        check(psql("SELECT bool_or(stale) FROM terra_gpu.bmmq_index", db) == "f", "a no-op UPDATE leaves it fresh")
        psql("UPDATE up_dem SET rast = rast WHERE rid = 1", db)
        check(psql("SELECT bool_and(stale) FROM terra_gpu.bmmq_index", db) == "t", "a real UPDATE marks it stale")
        psql("SELECT tg_bmmq_refresh('up'), tg_bmmq_refresh('up_q')", db)
        check(answers(db) == before, "refreshed, it answers the same")

        for what, q in SHAPE.items():
            a, b = psql(q, db), psql(q, fresh)
            check(a == b, "same %s as a fresh install (%d rows)" % (what, len(b.splitlines())))
            if a != b:
                sa, sb = set(a.splitlines()), set(b.splitlines())
                for line in sorted(sa - sb)[:10]:
                    print("      upgraded only: " + line[:300])
                for line in sorted(sb - sa)[:10]:
                    print("      fresh only:    " + line[:300])
        psql("DROP DATABASE %s" % db)
    psql("DROP DATABASE %s" % fresh)
    sys.exit(checks_exit_status("upgrade"))


if __name__ == "__main__":
    main()
