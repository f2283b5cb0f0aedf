#!/usr/bin/env python3
"""Benchmark terra_gpu's value-form functions on real DEMs.

For each DEM (loaded as one raster value) and each function, in one run:
  - tg_* through SQL on the CPU path and, where a GPU is usable, the GPU path:
    end-to-end statement time (median), time inside the library, and on the GPU
    the device kernel and transfer times (CUDA events, from tg_last_run());
  - the same call with the result stored (CREATE TEMP TABLE AS: TOAST included);
  - the peers computing the same thing: PostGIS ST_Slope (one run; it calls a
    PL/pgSQL function per pixel, so it is skipped above --st-slope-max-cells)
    and gdaldem slope (file to file);
  - build/bench_core on the same pixels: the core without a server, device-side
    throughput and GPU/CPU agreement.
Prints a Markdown report (also written to --out).  It measures and reports; it
never passes or fails on time.

Connection: the usual PG* environment variables.  Needs psql, raster2pgsql,
gdalinfo, gdal_translate, gdaldem on PATH and the extension installed.
"""

import argparse
import datetime
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import (Dem, load_dem, load_dem_table, machine_description, print_report, psql,  # noqa: E402
                      psql_script, run)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed_statements(statements, reps, db):
    """Run each statement 1 + reps times in one session (the first is a warm-up)
    and return, per statement, the median statement time and the medians of what
    tg_last_run() reports.  A statement may be a pair (untimed setup, timed SQL)."""
    script = []
    for s in statements:
        setup, sql = s if isinstance(s, tuple) else (None, s)
        for _ in range(reps + 1):
            if setup:
                script.append(setup + ";")
            script += ["\\timing on", sql + ";", "\\timing off"]
            script.append("SELECT 'RUN', backend, coalesce(kernel_ms, -1), "
                          "coalesce(transfer_ms, -1), coalesce(core_ms, -1), coalesce(chunks, 0), "
                          "coalesce(prep_ms, 0), coalesce(method, '') FROM tg_last_run();")
    out = psql_script("\n".join(script) + "\n", db)
    times = [float(m) for m in re.findall(r"^Time: ([0-9.]+) ms", out, re.M)]
    runs = [line.split("|") for line in out.splitlines() if line.startswith("RUN|")]
    assert len(times) == len(runs) == len(statements) * (reps + 1), out
    results = []
    for i in range(len(statements)):
        t = times[i * (reps + 1) + 1:(i + 1) * (reps + 1)] or times[i:i + 1]
        r = runs[i * (reps + 1) + 1:(i + 1) * (reps + 1)] or runs[i:i + 1]
        results.append({
            "sql_ms": statistics.median(t),
            "backend": r[-1][1],
            "kernel_ms": statistics.median(float(x[2]) for x in r),
            "transfer_ms": statistics.median(float(x[3]) for x in r),
            "core_ms": statistics.median(float(x[4]) for x in r),
            "chunks": int(r[-1][5]),
            "prep_ms": statistics.median(float(x[6]) for x in r),
            "method": r[-1][7],
        })
    return results


def wall_ms(cmd, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run(cmd)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench_core(dem, reps):
    exe = os.path.join(REPO, "build", "bench_core")
    if not os.path.exists(exe):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "dem.bil")
        run(["gdal_translate", "-q", "-of", "ENVI", dem.path, raw])
        nodata = "none" if dem.nodata is None else repr(dem.nodata)
        out = run([exe, raw, str(dem.width), str(dem.height), dem.pixtype, nodata, "op=slope",
                   "pixel_w=%r" % dem.pixel_width, "pixel_h=%r" % dem.pixel_height,
                   "scale=%r" % dem.scale, "reps=%d" % reps])
    return dict(re.findall(r'(\w+)=("[^"]*"|\S+)', out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dems", nargs="+", help="DEM files (GeoTIFF)")
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions (median reported)")
    ap.add_argument("--st-slope-max-cells", type=int, default=2_000_000,
                    help="skip ST_Slope above this many cells (it runs ~70k cells/s)")
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--db", help="database (default: PGDATABASE)")
    args = ap.parse_args()

    db = args.db
    gpu = psql("SELECT available, coalesce(name, reason) FROM tg_gpu_info()", db).split("|")
    gpu_ok = gpu[0] == "t"
    versions = psql("SELECT split_part(version(), ' on ', 1) || ', PostGIS ' || postgis_lib_version() "
                    "|| ', terra_gpu ' || tg_version()", db)
    gdal_version = run(["gdalinfo", "--version"]).strip()

    lines = []
    lines.append("### Slope (value form), %s" % datetime.date.today().isoformat())
    lines.append("")
    lines.append("- Host: %s" % machine_description())
    lines.append("- GPU: %s" % (gpu[1] if gpu_ok else "none (%s)" % gpu[1]))
    lines.append("- Software: %s; %s" % (versions, gdal_version))
    lines.append("- Statement times are medians of %d runs after a warm-up; `tg_slope` is called as "
                 "`SELECT ST_Width(tg_slope(rast, scale => S, backend => B))` on one raster value, "
                 "\"stored\" as `CREATE TEMP TABLE AS SELECT tg_slope(...)` (TOAST compression of the "
                 "result included)." % args.reps)
    lines.append("")
    lines.append("| DEM | cells | path | SQL call ms | SQL stored ms | in library ms | kernel ms "
                 "| transfers ms | device Gcell/s | vs ST_Slope |")
    lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    peers = []
    tile_rows = []

    for path in args.dems:
        dem = Dem(path)
        print("loading %s (%d x %d) ..." % (dem.name, dem.width, dem.height), file=sys.stderr)
        table = load_dem_table(dem, "bench_", db)

        backends = ["cpu"] + (["gpu"] if gpu_ok else [])
        call = "SELECT ST_Width(tg_slope(rast, scale => %r, backend => '%s')) FROM %s"
        store = "CREATE TEMP TABLE bench_out AS SELECT tg_slope(rast, scale => %r, backend => '%s') AS rast FROM %s"
        stmts = []
        for b in backends:
            stmts += [call % (dem.scale, b, table),
                      ("DROP TABLE IF EXISTS bench_out", store % (dem.scale, b, table))]
        res = timed_statements(stmts, args.reps, db)

        st_slope_ms = None
        if dem.cells <= args.st_slope_max_cells:
            print("  ST_Slope ...", file=sys.stderr)
            st_slope_ms = timed_statements(
                ["SELECT ST_Width(ST_Slope(rast, 1, '32BF', 'DEGREES', %r)) FROM %s" % (dem.scale, table)],
                0, db)[0]["sql_ms"]
        with tempfile.TemporaryDirectory() as tmp:
            gdaldem_ms = wall_ms(["gdaldem", "slope", "-q", "-s", repr(dem.scale), dem.path,
                                  os.path.join(tmp, "slope.tif")], max(1, min(args.reps, 3)))
        core = bench_core(dem, max(1, args.reps))

        # the same DEM as raster2pgsql -t 256x256 tiles, slope per tile
        tiles = table + "_tiles"
        load_dem(dem, tiles, db, tile=256)
        ntiles = int(psql("SELECT count(*) FROM %s" % tiles, db))
        tiled = timed_statements(
            ["SELECT sum(ST_Width(tg_slope(rast, scale => %r, backend => '%s'))) FROM %s" % (dem.scale, b, tiles)
             for b in backends], args.reps, db)
        psql("DROP TABLE %s" % tiles, db)
        tile_rows.append((dem, ntiles, dict(zip(backends, tiled))))

        for i, b in enumerate(backends):
            c, s = res[2 * i], res[2 * i + 1]
            kernel = "%.3f" % c["kernel_ms"] if b == "gpu" else "–"
            transfers = "%.1f" % c["transfer_ms"] if b == "gpu" else "–"
            gcells = "%.0f" % (dem.cells / c["kernel_ms"] / 1e6) if b == "gpu" and c["kernel_ms"] > 0 else "–"
            speedup = "%.0f×" % (st_slope_ms / c["sql_ms"]) if st_slope_ms else "–"
            lines.append("| %s | %d | %s | %.1f | %.1f | %.1f | %s | %s | %s | %s |" % (
                dem.name, dem.cells, b.upper(), c["sql_ms"], s["sql_ms"], c["core_ms"],
                kernel, transfers, gcells, speedup))
        peers.append((dem, st_slope_ms, gdaldem_ms, core))
        psql("DROP TABLE IF EXISTS %s" % table, db)

    lines.append("")
    lines.append("Peers on the same inputs, and the core alone (no server, `build/bench_core`):")
    lines.append("")
    lines.append("| DEM | ST_Slope ms | gdaldem slope ms (file to file) | core CPU ms | core GPU ms "
                 "| core kernel ms | GPU vs CPU max rel. diff |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for dem, st_ms, gd_ms, core in peers:
        core = core or {}
        lines.append("| %s | %s | %.1f | %s | %s | %s | %s |" % (
            dem.name, "%.0f" % st_ms if st_ms else "skipped", gd_ms, core.get("cpu_ms", "–"),
            core.get("gpu_ms", "–"), core.get("gpu_kernel_ms", "–"), core.get("max_rel_diff", "–")))
    lines.append("")
    lines.append("Per tile, as users call it on a `raster2pgsql -t 256x256` table "
                 "(`SELECT sum(ST_Width(tg_slope(rast, ...))) FROM tiles`, statement time):")
    lines.append("")
    lines.append("| DEM | tiles | CPU ms | GPU ms | CPU ms per tile | GPU ms per tile |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for dem, ntiles, t in tile_rows:
        gpu_ms = t["gpu"]["sql_ms"] if "gpu" in t else None
        lines.append("| %s | %d | %.1f | %s | %.3f | %s |" % (
            dem.name, ntiles, t["cpu"]["sql_ms"], "%.1f" % gpu_ms if gpu_ms else "–",
            t["cpu"]["sql_ms"] / ntiles, "%.3f" % (gpu_ms / ntiles) if gpu_ms else "–"))
    lines.append("")

    print_report(lines, args.out)


if __name__ == "__main__":
    main()
