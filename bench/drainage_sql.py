#!/usr/bin/env python3
"""The functions after the accumulation on each backend, through SQL: wall time
of one call on a DEM stored as one raster value (median of --reps, after a
warm-up), with tg_last_run()'s backend, device kernel and transfer times and
the core's phases, for the D8 accumulation and for stream order, basins,
stream links and HAND (each computes its own chain: fill, flats, D8,
accumulation, then its passes: orders and basin labels on the device where
the chain runs there, the rest on the host threads).

    bench/drainage_sql.py DEM.tif [...] [--backends cpu,gpu] [--threshold 1000] [--reps 3] [--db DB]

Connection: PG* variables.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem, machine_description, psql  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dems", nargs="+")
    ap.add_argument("--backends", default="cpu,gpu")
    ap.add_argument("--threshold", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--db")
    args = ap.parse_args()
    calls = [("D8 accumulation", "ST_Width(tg_flow_accumulation(rast))"),
             ("Strahler order", "ST_Width(tg_stream_order(rast, threshold => %d))" % args.threshold),
             ("basins of every outlet", "ST_Width(tg_basins(rast))"),
             ("stream links", "count(*) FROM tg_stream_links(rast, threshold => %d)" % args.threshold),
             ("HAND", "ST_Width(tg_hand(rast, threshold => %d))" % args.threshold)]
    print("# host: %s; %s\n" % (machine_description(), time.strftime("%Y-%m-%d")))
    print("| DEM | function | backend asked | ran on | SQL wall, s | kernels, ms | transfers, ms | phases |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for path in args.dems:
        dem = Dem(path)
        load_dem(dem, "drainage_dem", args.db)
        for backend in args.backends.split(","):
            for name, call in calls:
                sql = "SET terra_gpu.backend = '%s'; SELECT %s%s" % (
                    backend, call, "" if " FROM " in call else " FROM drainage_dem")
                if " FROM tg_stream_links" in sql:
                    sql = sql.replace("FROM tg_stream_links(rast", "FROM drainage_dem, tg_stream_links(rast")
                psql(sql, args.db)
                walls = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    out = psql(sql + "; SELECT backend, round(kernel_ms::numeric, 1), round(transfer_ms::numeric, 1), "
                               "phases FROM tg_last_run()", args.db)
                    walls.append(time.perf_counter() - t0)
                ran, kernel, transfer, phases = out.splitlines()[-1].split("|", 3)
                print("| %s | %s | %s | %s | %.2f | %s | %s | %s |"
                      % (dem.name, name, backend, ran, statistics.median(walls), kernel or "–", transfer or "–",
                         phases), flush=True)
        psql("DROP TABLE drainage_dem", args.db)


if __name__ == "__main__":
    main()
