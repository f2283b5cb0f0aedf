#!/usr/bin/env python3
"""The local terrain derivatives in SQL: speed against PostGIS, and the
coverage form of tg_terrain against PostgreSQL's floor for the same bytes.

Value form (the DEM as one raster value): each PostGIS function (ST_Slope,
ST_Aspect, ST_HillShade, ST_TPI, ST_TRI, ST_Roughness) and its tg_*
counterpart on --backend, timed interleaved in one session (PostGIS, tg,
PostGIS, tg, ... --reps times each, the tg function warmed up once first),
the medians and their ratio, with the load average before and after: the
machine's load slows both alike, so the ratio is the figure.  Then
tg_curvature, tg_geomorphons and tg_terrain with three products, which
PostGIS lacks (median of --reps after a warm-up, in one session).

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
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_sql import repeat  # noqa: E402
from tg_tools import Dem, load_dem, machine_description, psql  # noqa: E402

PEERS = [
    ("slope", "ST_Slope(rast, 1, '32BF', 'DEGREES', {s})", "tg_slope(rast, scale => {s}, backend => '{b}')"),
    ("aspect", "ST_Aspect(rast)", "tg_aspect(rast, backend => '{b}')"),
    ("hillshade", "ST_HillShade(rast, 1, '32BF', 315, 45, 255, {s})", "tg_hillshade(rast, scale => {s}, backend => '{b}')"),
    ("tpi", "ST_TPI(rast)", "tg_tpi(rast, backend => '{b}')"),
    ("tri", "ST_TRI(rast)", "tg_tri(rast, backend => '{b}')"),
    ("roughness", "ST_Roughness(rast)", "tg_roughness(rast, backend => '{b}')"),
]
OURS = [
    ("curvature (profile)", "tg_curvature(rast, scale => {s}, backend => '{b}')"),
    ("geomorphons (radius 10)", "tg_geomorphons(rast, search_radius => 10, scale => {s}, backend => '{b}')"),
    ("tg_terrain: slope, aspect, hillshade",
     "(tg_terrain(rast, scale => {s}, backend => '{b}')).hillshade"),
]
THREE = "ARRAY['slope', 'aspect', 'hillshade']"


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def one_session(statements, db):
    """The ms of each statement (each a ST_Width(...) of tb_whole) run in
    order in one session, and where the last terra_gpu call ran (backend,
    threads)."""
    script = "\\set ON_ERROR_STOP 1\n\\timing on\n%s\\timing off\n%s;\n" % (
        "".join("SELECT ST_Width(%s) FROM tb_whole;\n" % q for q in statements),
        "SELECT backend, threads FROM tg_last_run()")
    cmd = ["psql", "-X", "-q", "-At"] + (["-d", db] if db else [])
    p = subprocess.run(cmd, input=script, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("psql failed:\n%s\n%s" % (script, p.stderr))
    ms = [float(t) for t in re.findall(r"^Time: ([\d.]+) ms", p.stdout, re.M)]
    return ms, p.stdout.strip().splitlines()[-1].split("|")


def value_form(dem, args, db):
    s, b = repr(dem.scale), args.backend
    load_dem(dem, "tb_whole", db)
    print("PostGIS and terra_gpu interleaved in one session (terra_gpu warmed up first), %d runs each; "
          "medians; load average (1 min) before → after each pair of series." % args.reps)
    print()
    print("| function | PostGIS ms | tg ms (%s) | speed-up | load | ran on | threads |" % b)
    print("|---|---:|---:|---:|---|---|---|")
    for name, peer, tg in PEERS:
        before = load_average()
        ours = tg.format(s=s, b=b)
        ms, last = one_session([ours] + [q for _ in range(args.reps) for q in (peer.format(s=s), ours)], db)
        peer_ms, ours_ms = median(ms[1::2]), median(ms[2::2])
        print("| %s | %.0f | %.1f | %.0f× | %s → %s | %s | %s |" %
              (name, peer_ms, ours_ms, peer_ms / ours_ms, before, load_average(), last[0], last[1]))
        sys.stdout.flush()
    print()
    print("| function (no PostGIS counterpart) | tg ms (%s) | ran on | threads |" % b)
    print("|---|---:|---|---|")
    for name, tg in OURS:
        ms, last = one_session([tg.format(s=s, b=b)] * (args.reps + 1), db)
        print("| %s | %.1f | %s | %s |" % (name, median(ms[1:]), last[0], last[1]))
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
