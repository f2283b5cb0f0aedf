#!/usr/bin/env python3
"""The coverage pipeline end to end in SQL, where the time goes, on both paths.

A DEM is loaded as 256 x 256 tiles (as raster2pgsql -t makes them, stored
with lz4).  For each path (GPU, CPU), tg_hydrology over the whole coverage,
not stored (count(*)) and stored with each TOAST choice (lz4, pglz,
uncompressed), with tg_last_run()'s breakdown: fetching the tiles (SPI),
decoding them into the grid, the computation's phases, device kernels and
host-device copies (GPU), encoding the result tiles, handing them to the
executor; what the statement took beyond the call is storing.  Then
PostgreSQL's own floors for the same bytes: detoasting every input tile, and
writing the same result rows again (CREATE TABLE c AS SELECT * FROM stored).
Then the CPU path's scaling with terra_gpu.threads, not stored.  Finally the
stored accumulation is checked against the value form on the DEM as one raster,
read back through GDAL's PostGISRaster driver, byte for byte.

It measures and reports; nothing passes or fails on time.

    bench/e2e_sql.py DEM.tif [--backends gpu,cpu] [--threads 1,2,4,8,16] [--tile 256] [--reps 1]
"""

import datetime
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import (Dem, dem_bench_arguments, file_sha256, load_dem, machine_description, psql,  # noqa: E402
                      psql_command, run)

LAST_RUN = ("SELECT backend, threads, core_ms, coalesce(kernel_ms, 0), coalesce(transfer_ms, 0), "
            "coalesce(phases, '') FROM tg_last_run()")


def timed(statements, db, settings="", report=LAST_RUN):
    """Run statements in one session with psql's \\timing; the server-side ms
    of the last one and the last line `report` prints after it (by default
    tg_last_run()'s fields, separated by |)."""
    script = "%s\n%s\n\\timing on\n%s;\n\\timing off\n%s;\n" % (
        settings, ";\n".join(statements[:-1]) + (";" if len(statements) > 1 else ""),
        statements[-1], report)
    p = subprocess.run(psql_command(db), input=script, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("psql failed:\n%s\n%s" % (script, p.stderr))
    ms = float(re.findall(r"^Time: ([\d.]+) ms", p.stdout, re.M)[-1])
    return ms, p.stdout.strip().splitlines()[-1]


def repeat(n, statements, db, settings="", before=None):
    """Median SQL ms of n runs (before: statements run ahead of each, untimed)."""
    runs = []
    for _ in range(n):
        if before:
            psql(before, db)
        ms, last = timed(statements, db, settings)
        runs.append((ms, last.split("|")))
    runs.sort(key=lambda r: r[0])
    return runs[len(runs) // 2]


def phases_ms(text):
    return {name: float(ms) for name, ms in re.findall(r"([\w\- ]+?) ([\d.]+) ms(?:, |$)", text)}


def digest_of_table(table, db, tmp):
    out = os.path.join(tmp, table + ".bil")
    conn = "PG:dbname=%s table=%s mode=2" % (db or os.environ.get("PGDATABASE", ""), table)
    run(["gdal_translate", "-q", "-of", "ENVI", conn, out])
    digest = file_sha256(out)
    os.remove(out)
    return digest


def main():
    ap = dem_bench_arguments(__doc__, reps=1)
    ap.add_argument("--backends", default="gpu,cpu")
    ap.add_argument("--threads", default="1,2,4,8,16", help="CPU thread counts to scale over ('' for none)")
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--db")
    args = ap.parse_args()
    db = args.db
    os.environ["PGOPTIONS"] = (os.environ.get("PGOPTIONS", "") +
                               " -c client_min_messages=warning -c default_toast_compression=lz4")
    dem = Dem(args.dem)
    cores = len(os.sched_getaffinity(0))
    gpu = psql("SELECT available FROM tg_gpu_info()", db) == "t"
    backends = [b for b in args.backends.split(",") if b and (b != "gpu" or gpu)]

    load_dem(dem, "e2e_tiles", db, tile=args.tile)
    ntiles = int(psql("SELECT count(*) FROM e2e_tiles", db))
    tile_mb = float(psql("SELECT pg_total_relation_size('e2e_tiles') / 1048576.0", db))
    print("### %s (%d × %d = %.1f M cells, %d tiles of %d², %.0f MB stored lz4), %s" %
          (dem.name, dem.width, dem.height, dem.cells / 1e6, ntiles, args.tile, tile_mb,
           datetime.date.today().isoformat()))
    print()
    print("- Host: %s%s; median of %d" % (
        machine_description(), ", " + psql("SELECT name FROM tg_gpu_info()", db) if gpu else ", no GPU",
        args.reps))
    if "gpu" in args.backends and not gpu:
        print("- GPU path skipped: %s" % psql("SELECT coalesce(reason, 'no GPU') FROM tg_gpu_info()", db))
    print()

    # PostgreSQL's floors for the same bytes
    detoast_ms, _ = repeat(args.reps, ["SELECT sum(length(rast::bytea)) FROM e2e_tiles"], db)

    hydro = "tg_hydrology(coverage => 'e2e_tiles')"
    drop = "DROP TABLE IF EXISTS e2e_h, e2e_c"
    rows = []
    write_floor_ms = None
    for backend in backends:
        settings = "SET terra_gpu.backend = %s;" % backend
        if backend == "gpu":    # CUDA starts in the session, outside the timings (a session's first call pays it)
            settings += "\nSELECT tg_slope(rast) IS NOT NULL FROM e2e_tiles LIMIT 1;"

        rows.append((backend, "not stored",
                     repeat(args.reps, ["SELECT count(*) FROM %s" % hydro], db, settings)))
        for storage, sql in [
                ("stored, lz4", ["CREATE TABLE e2e_h AS SELECT * FROM %s" % hydro]),
                ("stored, pglz", ["SET default_toast_compression = pglz",
                                  "CREATE TABLE e2e_h AS SELECT * FROM %s" % hydro]),
                ("stored, uncompressed", [
                    "CREATE TABLE e2e_h (rid integer, filled raster, directions raster, accumulation raster)",
                    "ALTER TABLE e2e_h ALTER filled SET STORAGE EXTERNAL, ALTER directions SET STORAGE EXTERNAL, "
                    "ALTER accumulation SET STORAGE EXTERNAL",
                    "INSERT INTO e2e_h SELECT * FROM %s" % hydro])]:
            rows.append((backend, storage, repeat(args.reps, sql, db, settings, before=drop)))
        if write_floor_ms is None:
            psql(drop, db)
            psql("CREATE TABLE e2e_h AS SELECT * FROM %s" % hydro, db)
            write_floor_ms, _ = repeat(args.reps, ["CREATE TABLE e2e_c AS SELECT * FROM e2e_h"], db,
                                       before="DROP TABLE IF EXISTS e2e_c")

    print("| path | result | SQL ms | call ms | threads | fetch | decode | compute | kernels | copies "
          "| encode | hand-off | beyond the call |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for backend, storage, (ms, last) in rows:
        _, threads, core_ms, kernel_ms, transfer_ms, phases = last
        ph = phases_ms(phases)
        core_ms, kernel_ms, transfer_ms = float(core_ms), float(kernel_ms), float(transfer_ms)
        fetch, decode, encode, store = (ph.get(k, 0.0) for k in ("fetch", "decode", "encode", "store"))
        compute = sum(v for k, v in ph.items() if k not in ("fetch", "decode", "encode", "store"))
        print("| %s | %s | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %s | %s | %.0f | %.0f | %.0f |" % (
            backend, storage, ms, core_ms, threads, fetch, decode, compute,
            "%.1f" % kernel_ms if backend == "gpu" else "–", "%.1f" % transfer_ms if backend == "gpu" else "–",
            encode, store, ms - core_ms))
    print()
    for backend, storage, (ms, last) in rows:
        if storage == "not stored":
            print("- %s phases: %s" % (backend, last[5]))
    print("- PostgreSQL's floors: detoasting every input tile %.0f ms; writing the same result rows again "
          "(CREATE TABLE c AS SELECT * FROM stored, lz4) %s ms" %
          (detoast_ms, "%.0f" % write_floor_ms if write_floor_ms is not None else "–"))
    print()

    counts = [t for t in (int(x) for x in args.threads.split(",") if x) if t <= cores]
    if counts and "cpu" in backends:
        print("CPU path, not stored, by terra_gpu.threads:")
        print()
        print("| threads | SQL ms | call ms | speed-up | phases |")
        print("|---:|---:|---:|---:|---|")
        base = None
        for t in counts:
            ms, last = repeat(args.reps, ["SELECT count(*) FROM %s" % hydro], db,
                              "SET terra_gpu.backend = cpu; SET terra_gpu.threads = %d;" % t)
            base = base or ms
            print("| %s | %.0f | %.0f | %.2f× | %s |" % (last[1], ms, float(last[2]), base / ms, last[5]),
                  flush=True)
        print()

    # the stored accumulation read back through GDAL equals the value form's
    load_dem(dem, "e2e_whole", db)
    psql("DROP TABLE IF EXISTS e2e_value, e2e_acc; "
         "CREATE TABLE e2e_value AS SELECT 1 AS rid, tg_flow_accumulation(rast) AS rast FROM e2e_whole; "
         "CREATE TABLE e2e_acc AS SELECT rid, accumulation AS rast FROM e2e_h; "
         "SELECT AddRasterConstraints('e2e_acc'::name, 'rast'::name)", db)
    with tempfile.TemporaryDirectory() as tmp:
        same = digest_of_table("e2e_acc", db, tmp) == digest_of_table("e2e_value", db, tmp)
    print("- the stored accumulation, read back with gdal_translate, equals the value form: %s" %
          ("yes" if same else "NO"))
    psql("DROP TABLE IF EXISTS e2e_h, e2e_c, e2e_value, e2e_acc, e2e_whole, e2e_tiles", db)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
