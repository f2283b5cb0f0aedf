#!/usr/bin/env python3
"""A coverage partitioned over several servers against the same coverage on
one server: tg_fill, tg_slope, tg_flow_accumulation (D8 and MFD-md of the filled DEM) and tg_hydrology through
tg_create_partitioned_result on a
coordinator and N throwaway workers (tools/cluster.sh, Unix sockets, one
machine), and tg_create_result over the same tiles in one local table of the
coordinator.  Prints wall times, each phase's time (from the NOTICEs), each
worker's busy time and the bytes that crossed between servers against the
DEM's size, and checks the two results tile for tile.

    bench/partitions_sql.py DEM.tif [--workers 3] [--tile 256] [--reps 3] [--ops fill,slope,d8,mfd-md,hydrology]

Every server runs on this machine: the workers share its cores, so the wall
time measures the stitch and its traffic, not a cluster's speed-up.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import machine_description, tiles_sql  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CLUSTER = os.path.join(REPO, "tools", "cluster.sh")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dem")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--tile", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--port", type=int, default=5490)
    ap.add_argument("--ops", default="fill,slope,d8,mfd-md,hydrology",
                    help="which of fill, slope, d8, mfd-md, hydrology")
    ap.add_argument("--backend", help="terra_gpu.backend of the single-server run")
    ap.add_argument("--worker-backend", help="terra_gpu.backend of the workers (their parts' fill follows it; "
                    "their other phases compute on the CPU)")
    ap.add_argument("--worker-devices", type=int, default=0,
                    help="GPUs of this host to spread the workers over: worker k gets terra_gpu.device (k - 1) %% N")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="tgbench-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    env = dict(os.environ, TG_CLUSTER_DIR=os.path.join(tmp, "c"), TG_CLUSTER_PORT=str(args.port))
    sock = env.get("TG_PGSOCKET", "/tmp")
    db = env.get("TG_DATABASE", "terra_gpu")

    def psql(q, node=0):
        p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p",
                            str(args.port + node), "-d", db, "-c", q], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return p.stdout.strip(), p.stderr

    def timed(q):
        t0 = time.perf_counter()
        out, notices = psql(q)
        return time.perf_counter() - t0, out, notices

    try:
        subprocess.run([CLUSTER, "up", str(args.workers)], env=env, check=True, capture_output=True)
        subprocess.run([CLUSTER, "load", args.dem, "dem", str(args.tile)], env=env, check=True, capture_output=True)
        srid = psql("SELECT ST_SRID(rast) FROM dem LIMIT 1")[0]
        if args.backend:
            psql("ALTER DATABASE %s SET terra_gpu.backend = '%s'" % (db, args.backend))
        for node in range(1, args.workers + 1) if args.worker_backend else []:
            psql("ALTER DATABASE %s SET terra_gpu.backend = '%s'" % (db, args.worker_backend), node)
        for node in range(1, args.workers + 1) if args.worker_devices else []:
            psql("ALTER DATABASE %s SET terra_gpu.device = %d" % (db, (node - 1) % args.worker_devices), node)
        tiles = tiles_sql(args.dem, srid, "dem_local", args.tile)
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p", str(args.port), "-d", db],
                       input=tiles, text=True, env=env, check=True, capture_output=True)
        cells, dem_bytes = map(int, psql("SELECT sum(ST_Width(rast) * ST_Height(rast)), "
                                         "sum(ST_Width(rast) * ST_Height(rast) * "
                                         "(CASE ST_BandPixelType(rast) WHEN '16BSI' THEN 2 WHEN '16BUI' THEN 2 "
                                         "WHEN '8BUI' THEN 1 ELSE 4 END)) FROM dem_local")[0].split("|"))
        print("# %s: %d cells in tiles of %d, %d workers and a coordinator on one machine"
              % (os.path.basename(args.dem), cells, args.tile, args.workers))
        print("# host: %s; %s; single server: backend %s; workers: backend %s%s\n"
              % (machine_description(), time.strftime("%Y-%m-%d"), args.backend or "auto",
                 args.worker_backend or "auto",
                 ", spread over %d GPUs" % args.worker_devices if args.worker_devices else ""))
        print("| operation | one server, s | %d workers, s | phases (slowest worker), s | worker busy, s |"
              " bytes between servers | of the DEM | tiles equal |" % args.workers)
        print("|---|---:|---:|---|---|---:|---:|---|")
        operations = {"fill": ("tg_fill", "{}", "tg_fill(coverage => ''dem_local'')"),
                      "slope": ("tg_slope", "{}", "tg_slope(coverage => ''dem_local'')"),
                      "d8": ("tg_flow_accumulation", "{}", "tg_flow_accumulation(coverage => ''dem_local'')"),
                      "mfd-md": ("tg_flow_accumulation", '{"routing": "mfd-md"}',
                                 "tg_flow_accumulation(coverage => ''dem_local'', routing => ''mfd-md'')"),
                      "hydrology": ("tg_hydrology", "{}", "tg_hydrology(coverage => ''dem_local'')")}
        for key in args.ops.split(","):
            op, opts, local = operations[key]
            one, many, phases, busy, moved = [], [], "", "", 0
            for _ in range(args.reps):
                w, _, _ = timed("SELECT tg_create_result('one', 'SELECT * FROM %s', replace => true)" % local)
                one.append(w)
                w, out, notices = timed("SELECT * FROM tg_create_partitioned_result('many', 'dem', '%s', '%s', "
                                        "replace => true)" % (op, opts))
                many.append(w)
                rows = [r.split("|") for r in out.splitlines()]
                busy = ", ".join("%.2f" % float(r[4]) for r in rows)
                moved = sum(int(r[5]) + int(r[6]) for r in rows)
                phases = ", ".join(
                    "%s %s%s" % (m[0], m[1], " (%s rounds)" % m[3] if m[3] else "")
                    for m in re.findall(r": (\w+) of \w+ on \d+ workers in ([\d.]+) s, ([\d.]+) kB(?: \((\d+) rounds\))?",
                                        notices))
            cols = ["filled", "direction", "accumulation"] if op == "tg_hydrology" else ["rast"]
            same = psql("SELECT count(*) FILTER (WHERE %s) || ' of ' || count(*) FROM many a JOIN one b USING (rid)"
                        % " AND ".join("ST_AsBinary(a.%s) = ST_AsBinary(b.%s)" % (c, c) for c in cols))[0]
            print("| %s %s | %.2f | %.2f | %s | %s | %d | %.2f %% | %s |"
                  % (op, opts if opts != "{}" else "", statistics.median(one), statistics.median(many), phases, busy, moved,
                     100.0 * moved / dem_bytes, same))
    finally:
        subprocess.run([CLUSTER, "down"], env=env, capture_output=True)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
