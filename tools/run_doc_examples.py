#!/usr/bin/env python3
"""Run every ```sql block of the README in a fresh database, in order, and fail
on the first error: the documentation's examples must work as written.

A table `dem` (synthetic 256 x 256 tiles in EPSG:4326, as raster2pgsql -t
makes) stands in for the user's DEM the examples refer to.  Connection: PG*
variables; the database is created and dropped here.
"""
import os
import re
import subprocess
import sys

DB = "terra_gpu_doc_examples"
FIXTURE = """
CREATE TABLE dem AS
SELECT row_number() OVER () AS rid, t.rast
FROM (SELECT ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(600, 800, 8.0, 47.0, 1.0 / 1200, -1.0 / 1200, 0, 0, 4326),
                                     '16BSI'::text, 0, -32768),
                          1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                                     (SELECT y, array_agg(1000 + 400 * sin(x / 50.0) * cos(y / 40.0) ORDER BY x) AS r
                                      FROM generate_series(0, 599) x, generate_series(0, 799) y GROUP BY y) rows))
      AS rast) AS src, ST_Tile(src.rast, 256, 256) AS t(rast);
"""


def psql(args, script=None):
    p = subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1"] + args, input=script,
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
    blocks = re.findall(r"^```sql\n(.*?)^```", open(readme).read(), re.M | re.S)
    psql(["-d", "postgres", "-qc", "DROP DATABASE IF EXISTS %s" % DB])
    rc, out = psql(["-d", "postgres", "-qc", "CREATE DATABASE %s" % DB])
    if rc:
        print(out)
        return 1
    try:
        rc, out = psql(["-d", DB, "-q"], "SET client_min_messages = warning;\n"
                       "CREATE EXTENSION terra_gpu CASCADE;\n" + FIXTURE)
        if rc:
            print(out)
            return 1
        for i, block in enumerate(blocks, 1):
            sql = block.replace("CREATE EXTENSION terra_gpu", "CREATE EXTENSION IF NOT EXISTS terra_gpu")
            rc, out = psql(["-d", DB, "-q"], sql)
            if rc:
                print("README example %d failed:\n%s\n%s" % (i, block, out))
                return 1
        print("README examples: %d blocks ran" % len(blocks))
        return 0
    finally:
        psql(["-d", "postgres", "-qc", "DROP DATABASE IF EXISTS %s" % DB])


if __name__ == "__main__":
    sys.exit(main())
