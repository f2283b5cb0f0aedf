#!/usr/bin/env python3
"""Generate the upgrade script sql/terra_gpu--OLD--NEW.sql.

Installs release OLD (its frozen script) and the current NEW in two scratch
databases of the running server (both must be installed: make install) and
writes, deterministically:
  1. sql/upgrade/terra_gpu--OLD--NEW.pre.sql, by hand: catalog changes;
  2. DROP FUNCTION for every function OLD has and NEW has not, or whose
     arguments, defaults or result changed (CREATE OR REPLACE cannot change
     those);
  3. CREATE OR REPLACE FUNCTION, as pg_get_functiondef prints it, for every
     function that is new or whose definition changed, in NEW's creation
     order, with its comment and privileges;
  4. sql/upgrade/terra_gpu--OLD--NEW.post.sql, by hand: what needs the new
     functions (event triggers, data);
  5. the install script's closing block that fixes the search_path of every
     PL/pgSQL function.
Other objects (tables, policies, grants) belong in the hand-written parts;
regress/checks/check_upgrade.py fails when an upgraded database differs from
a fresh install in any of them, or when the committed script is not what
this program writes (--check).  Connection: PG* variables.
"""

import argparse
import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = "terra_gpu"
SCRATCH_SCHEMA = "tg_upgrade_scratch"
POSTGIS_SCHEMA = "tg_upgrade_postgis"     # dropped from names: an update runs with PostGIS' schema on its path
DEFAULT_ACL = [{"grantee": "PUBLIC", "privilege": "EXECUTE"}]     # a new function's: EXECUTE for PUBLIC


def psql(sql, db="postgres"):
    out = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def default_version():
    with open(os.path.join(REPO, EXT + ".control")) as f:
        return re.search(r"^default_version = '(.*)'", f.read(), re.M).group(1)


def install(db, version):
    psql("DROP DATABASE IF EXISTS %s" % db)
    psql("CREATE DATABASE %s" % db)
    psql("SET client_min_messages = warning; CREATE SCHEMA %s; CREATE EXTENSION postgis SCHEMA %s; "
         "CREATE EXTENSION postgis_raster SCHEMA %s; CREATE SCHEMA %s; "
         "CREATE EXTENSION %s VERSION '%s' SCHEMA %s"
         % (POSTGIS_SCHEMA, POSTGIS_SCHEMA, POSTGIS_SCHEMA, SCRATCH_SCHEMA, EXT, version, SCRATCH_SCHEMA), db)


FUNCTIONS_SQL = """
SELECT coalesce(json_agg(json_build_object(
         'oid', p.oid::bigint,
         'sig', p.oid::regprocedure::text,
         'args', pg_get_function_arguments(p.oid),
         'result', pg_get_function_result(p.oid),
         'def', pg_get_functiondef(p.oid),
         'comment', obj_description(p.oid, 'pg_proc'),
         'acl', coalesce((SELECT json_agg(json_build_object('grantee', g.who, 'privilege', a.privilege_type)
                                 ORDER BY g.who, a.privilege_type)
                 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a,
                      LATERAL (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                           ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who) g
                 WHERE a.grantee <> p.proowner), '[]'::json))
       ORDER BY p.oid), '[]')
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = '%s')
""" % EXT


def functions(db):
    # names printed schema-qualified: nothing but pg_catalog on the path
    rows = json.loads(psql("SET search_path = pg_catalog; " + FUNCTIONS_SQL, db))
    return {r["sig"]: r for r in rows}


def portable(text):
    """The scratch schemas and library path as the script's placeholders; search_path settings
    out (step 5 sets them)."""
    text = text.replace(SCRATCH_SCHEMA + ".", "@extschema@.").replace(POSTGIS_SCHEMA + ".", "")
    text = text.replace("\nAS '$libdir/terra_gpu', ", "\nAS 'MODULE_PATHNAME', ")
    return "\n".join(line for line in text.split("\n")
                     if not (line.startswith(" SET search_path TO ") and SCRATCH_SCHEMA in line))


def literal(s):
    return "'" + s.replace("'", "''") + "'"


def fixed_path_block():
    with open(os.path.join(REPO, "sql", EXT + ".sql")) as f:
        script = f.read()
    marker = "-- A fixed search_path for every function that resolves a name while it runs"
    start = script.rindex("\n-----", 0, script.index(marker)) + 1
    return script[start:].rstrip() + "\n"


def generate(old, new):
    old_db, new_db = "tg_upgrade_gen_old", "tg_upgrade_gen_new"
    install(old_db, old)
    install(new_db, new)
    try:
        before, after = functions(old_db), functions(new_db)
    finally:
        psql("DROP DATABASE IF EXISTS %s" % old_db)
        psql("DROP DATABASE IF EXISTS %s" % new_db)

    def sig(f):
        return portable(f["sig"])

    out = ["-- terra_gpu %s -> %s, written by tools/gen_upgrade.py: do not edit; change" % (old, new),
           "-- sql/terra_gpu.sql or sql/upgrade/terra_gpu--%s--%s.{pre,post}.sql and run it again." % (old, new),
           '\\echo Use "ALTER EXTENSION terra_gpu UPDATE TO \'%s\'" to load this file. \\quit' % new, ""]
    with open(os.path.join(REPO, "sql", "upgrade", "%s--%s--%s.pre.sql" % (EXT, old, new))) as f:
        out.append(f.read().rstrip() + "\n")

    recreate = set()
    drops = []
    for s in sorted(before, key=lambda s: -before[s]["oid"]):
        b, a = before[s], after.get(s)
        if a is None or (a["args"], a["result"]) != (b["args"], b["result"]):
            drops.append("DROP FUNCTION %s;" % sig(b))
            if a is not None:
                recreate.add(s)
    if drops:
        out.append("-- functions gone, or whose arguments or result changed")
        out += drops + [""]

    out.append("-- functions new or changed")
    for s in sorted(after, key=lambda s: after[s]["oid"]):
        a, b = after[s], before.get(s)
        fresh = b is None or s in recreate
        if fresh or portable(a["def"]) != portable(b["def"]):
            out.append(portable(a["def"]).rstrip() + ";")
        if (a["comment"] != b["comment"]) if not fresh else (a["comment"] is not None):
            out.append("COMMENT ON FUNCTION %s IS %s;" % (sig(a), "NULL" if a["comment"] is None
                                                           else literal(a["comment"])))
        if a["acl"] != (DEFAULT_ACL if fresh else b["acl"]):
            out.append("REVOKE ALL ON FUNCTION %s FROM PUBLIC;" % sig(a))
            for g in a["acl"]:
                out.append("GRANT %s ON FUNCTION %s TO %s;" % (g["privilege"], sig(a), g["grantee"]))
    out.append("")

    with open(os.path.join(REPO, "sql", "upgrade", "%s--%s--%s.post.sql" % (EXT, old, new))) as f:
        out.append(f.read().rstrip() + "\n")
    out.append(fixed_path_block())
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", help="the released version upgraded from, e.g. 0.1.0")
    ap.add_argument("new", nargs="?", help="the version upgraded to (default: terra_gpu.control's)")
    ap.add_argument("--check", action="store_true",
                    help="do not write: exit 1 when the committed script differs from what would be written")
    args = ap.parse_args()
    new = args.new or default_version()
    path = os.path.join(REPO, "sql", "%s--%s--%s.sql" % (EXT, args.old, new))
    text = generate(args.old, new)
    if args.check:
        try:
            with open(path) as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            print("%s is out of date: run tools/gen_upgrade.py %s %s (after make install)"
                  % (os.path.relpath(path, REPO), args.old, new))
            sys.exit(1)
        print("%s is up to date" % os.path.relpath(path, REPO))
        return
    with open(path, "w") as f:
        f.write(text)
    print("wrote %s" % os.path.relpath(path, REPO))


if __name__ == "__main__":
    main()
