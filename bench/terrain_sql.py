#!/usr/bin/env python3
"""The local terrain derivatives in SQL: speed against PostGIS, and the
coverage form of tg_terrain against PostgreSQL's floor for the same bytes.

Value form (the DEM as one raster value, same session): each PostGIS
function (ST_Aspect, ST_HillShade, ST_TPI, ST_TRI, ST_Roughness; once, they
are slow) against its tg_* counterpart (median of --reps after a warm-up),
on --backend, with the speed-up; then tg_curvature, tg_geomorphons and
tg_terrain with three products, which PostGIS lacks.

Coverage form (--coverage): the DEM in 256 x 256 tiles stored with lz4;
tg_terrain(coverage, products => slope, aspect, hillshade) not stored
(count(*)) and stored (CREATE TABLE AS), with tg_last_run()'s phases, next
to PostgreSQL's floor for the same bytes: reading every tile
(detoasting them) and writing the same result rows again (CREATE TABLE AS
SELECT * FROM the stored result).  It measures and reports; nothing passes
or fails on time.

    bench/terrain_sql.py DEM.tif [--backend cpu|gpu|auto] [--reps 3] [--coverage]
"""

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_sql import repeat  # noqa: E402
from tg_tools import Dem, load_dem, machine_description, psql  # noqa: E402

PEERS = [
    ("aspect", "ST_Aspect(rast)", "tg_aspect(rast, backend => '{b}')"),
    ("hillshade", "ST_HillShade(rast, 1, '32BF', 315, 45, 255, {s})", "tg_hillshade(rast, scale => {s}, backend => '{b}')"),
    ("tpi", "ST_TPI(rast)", "tg_tpi(rast, backend => '{b}')"),
    ("tri", "ST_TRI(rast)", "tg_tri(rast, backend => '{b}')"),
    ("roughness", "ST_Roughness(rast)", "tg_roughness(rast, backend => '{b}')"),
]
OURS = [
    ("slope", "tg_slope(rast, scale => {s}, backend => '{b}')"),
    ("curvature (profile)", "tg_curvature(rast, scale => {s}, backend => '{b}')"),
    ("geomorphons (radius 10)", "tg_geomorphons(rast, search_radius => 10, scale => {s}, backend => '{b}')"),
    ("tg_terrain: slope, aspect, hillshade",
     "(tg_terrain(rast, scale => {s}, backend => '{b}')).hillshade"),
]
THREE = "ARRAY['slope', 'aspect', 'hillshade']"


def value_form(dem, args, db):
    s, b = repr(dem.scale), args.backend
    load_dem(dem, "tb_whole", db)
    print("| function | PostGIS ms | tg ms (%s) | speed-up | ran on | threads |" % b)
    print("|---|---:|---:|---:|---|---|")

    def ours(expr):
        q = "SELECT ST_Width(%s) FROM tb_whole" % expr
        repeat(1, [q], db)      # warm-up
        ms, last = repeat(args.reps, [q], db)
        return ms, last
    for name, peer, tg in PEERS:
        peer_ms, _ = repeat(1, ["SELECT ST_Width(%s) FROM tb_whole" % peer.format(s=s)], db)
        ms, last = ours(tg.format(s=s, b=b))
        print("| %s | %.0f | %.1f | %.0f× | %s | %s |" % (name, peer_ms, ms, peer_ms / ms, last[0], last[1]))
    for name, tg in OURS:
        ms, last = ours(tg.format(s=s, b=b))
        print("| %s | — | %.1f | | %s | %s |" % (name, ms, last[0], last[1]))
    psql("DROP TABLE tb_whole", db)


def coverage_form(dem, args, db):
    s, b = repr(dem.scale), args.backend
    load_dem(dem, "tb_tiles", db, tile=256)
    call = ("tg_terrain(coverage => 'tb_tiles', products => %s, scale => %s, backend => '%s')" % (THREE, s, b))
    read_ms, _ = repeat(args.reps, ["SELECT sum(length(rast::bytea)) FROM tb_tiles"], db)
    psql("DROP TABLE IF EXISTS tb_stored", db)
    call_ms, last = repeat(args.reps, ["SELECT count(*) FROM %s" % call], db)
    stored_ms, stored = repeat(args.reps, ["CREATE TABLE tb_stored AS SELECT * FROM %s" % call], db,
                               before="DROP TABLE IF EXISTS tb_stored")
    write_ms, _ = repeat(args.reps, ["CREATE TABLE tb_copy AS SELECT * FROM tb_stored"], db,
                         before="DROP TABLE IF EXISTS tb_copy")
    print("| what | ms |")
    print("|---|---:|")
    print("| floor: reading every tile (detoasting) | %.0f |" % read_ms)
    print("| floor: writing the same result rows (CREATE TABLE AS SELECT * FROM stored) | %.0f |" % write_ms)
    print("| floor: both | %.0f |" % (read_ms + write_ms))
    print("| tg_terrain, 3 products, not stored (count(*)) | %.0f |" % call_ms)
    print("| tg_terrain, 3 products, stored | %.0f |" % stored_ms)
    print("| stored ÷ floor | %.2f |" % (stored_ms / (read_ms + write_ms)))
    print()
    print("- not stored: ran on %s, %s threads, kernels %s ms, copies %s ms; phases: %s" %
          (last[0], last[1], last[3], last[4], last[5]))
    print("- stored: ran on %s; phases: %s" % (stored[0], stored[5]))
    psql("DROP TABLE IF EXISTS tb_copy; DROP TABLE IF EXISTS tb_stored; DROP TABLE tb_tiles", db)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    ap.add_argument("--reps", type=int, default=3, help="median of this many runs per tg figure")
    ap.add_argument("--coverage", action="store_true", help="the coverage form against the floor instead")
    ap.add_argument("--db")
    args = ap.parse_args()
    os.environ["PGOPTIONS"] = (os.environ.get("PGOPTIONS", "") +
                               " -c client_min_messages=warning -c default_toast_compression=lz4")
    dem = Dem(args.dem)
    gpu = psql("SELECT name FROM tg_gpu_info() WHERE available", args.db)
    print("### %s (%d × %d = %.2f M cells), %s form, %s" %
          (dem.name, dem.width, dem.height, dem.cells / 1e6, "coverage" if args.coverage else "value",
           datetime.date.today().isoformat()))
    print()
    print("- Host: %s, %s; backend %s" % (machine_description(), gpu or "no GPU", args.backend))
    print()
    (coverage_form if args.coverage else value_form)(dem, args, args.db)


if __name__ == "__main__":
    main()
