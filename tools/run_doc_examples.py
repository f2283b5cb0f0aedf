#!/usr/bin/env python3
"""Run every ```sql block of the README in a fresh database, in order, and fail
on the first error: the documentation's examples must work as written, on real
data.

The examples refer to the user's DEM as two tables, both loaded here from the
demo DEM (tools/data/medium_alps_n46e008_srtm3.tif: SRTM 3", 1201 x 1201
cells, 7.2 % radar voids as nodata) by raster2pgsql: `dem`, in 256 x 256
tiles (-t 256x256 -I -C), and `dem_whole`, the same grid as one raster value.
Connection: PG* variables; the database is created and dropped here.
"""
import os
import re
import subprocess
import sys
import time

DB = "terra_gpu_doc_examples"
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEM = os.path.join(REPO, "tools", "data", "medium_alps_n46e008_srtm3.tif")


def load(table, tiled):
    """raster2pgsql's SQL for the demo DEM as `table`."""
    args = ["raster2pgsql", "-s", "4326"] + (["-t", "256x256", "-I"] if tiled else []) + ["-C", "-M", DEM, table]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("raster2pgsql failed:\n" + p.stderr)
    return p.stdout


def psql(args, script=None):
    p = subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1"] + args, input=script,
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    readme = os.path.join(REPO, "README.md")
    blocks = re.findall(r"^```sql\n(.*?)^```", open(readme).read(), re.M | re.S)
    psql(["-d", "postgres", "-qc", "DROP DATABASE IF EXISTS %s" % DB])
    rc, out = psql(["-d", "postgres", "-qc", "CREATE DATABASE %s" % DB])
    if rc:
        print(out)
        return 1
    try:
        rc, out = psql(["-d", DB, "-q", "-o", os.devnull], "SET client_min_messages = warning;\n"
                       "CREATE EXTENSION terra_gpu CASCADE;\n" + load("dem", True) + load("dem_whole", False))
        if rc:
            print(out)
            return 1
        start = time.time()
        for i, block in enumerate(blocks, 1):
            sql = block.replace("CREATE EXTENSION terra_gpu", "CREATE EXTENSION IF NOT EXISTS terra_gpu")
            t = time.time()
            rc, out = psql(["-d", DB, "-q"], sql)
            if rc:
                print("README example %d failed:\n%s\n%s" % (i, block, out))
                return 1
            if os.environ.get("TG_DOC_VERBOSE"):
                print("-- block %d (%.1f s)\n%s" % (i, time.time() - t, out))
        print("README examples: %d blocks ran on the real demo DEM in %.0f s" % (len(blocks), time.time() - start))
        return 0
    finally:
        psql(["-d", "postgres", "-qc", "DROP DATABASE IF EXISTS %s" % DB])


if __name__ == "__main__":
    sys.exit(main())
