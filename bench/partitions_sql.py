#!/usr/bin/env python3
"""A coverage partitioned over several servers against the same coverage on
one server: tg_fill, tg_slope, tg_flow_accumulation (D8 and MFD-md of the filled DEM) and tg_hydrology through
tg_create_partitioned_result on a coordinator and N throwaway workers
(tools/cluster.sh, Unix sockets, one machine), and tg_create_result over the
same tiles in one local table of the coordinator.  Prints wall times, each
phase's time (from the NOTICEs), each worker's busy and device time and the
bytes that crossed between servers against the DEM's size, and checks the
results tile for tile.

    bench/partitions_sql.py DEM [--workers 3] [--tile 256] [--reps 3] [--ops fill,slope,d8,mfd-md,hydrology]
                            [--worker-backend cpu|gpu] [--worker-device-mb N] [--gpus 4,2,1] [--budget-mb N]
                            [--no-local | --local-over-fdw] [--digests FILE]

--gpus G1,G2,...: the same N parts (loaded once) computed with the workers
spread over G1, then G2, ... GPUs of this host (worker k on device
(k - 1) mod G); every run's tiles are compared with the first's (a digest of
each worker's result tiles, computed on the worker).  --budget-mb: the
single-server run under terra_gpu.max_memory_mb = N (in bands where the grid
does not fit).  --no-local: no single-server run (a coverage too large to
load twice); the GPU counts are then compared with each other only.
--local-over-fdw: the single server reads the workers' tiles through the
coordinator's partitioned table (postgres_fdw) instead of a copy loaded on
it.  --digests FILE: each tile's digest of each operation's result, written
to FILE when it holds none for that operation, else compared with those it
holds (another run: another number of workers, another machine).  Tiles
are compared by digests computed where they lie.

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
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import machine_description, tiles_sql  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CLUSTER = os.path.join(REPO, "tools", "cluster.sh")

OPERATIONS = {"fill": ("tg_fill", "{}", "tg_fill(coverage => ''{table}'')"),
              "slope": ("tg_slope", "{}", "tg_slope(coverage => ''{table}'')"),
              "d8": ("tg_flow_accumulation", "{}", "tg_flow_accumulation(coverage => ''{table}'')"),
              "mfd-md": ("tg_flow_accumulation", '{"routing": "mfd-md"}',
                         "tg_flow_accumulation(coverage => ''{table}'', routing => ''mfd-md'')"),
              "hydrology": ("tg_hydrology", "{}", "tg_hydrology(coverage => ''{table}'')")}


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
    ap.add_argument("--budget-mb", type=int, help="terra_gpu.max_memory_mb of the single-server run")
    ap.add_argument("--no-local", action="store_true", help="no single-server run")
    ap.add_argument("--local-over-fdw", action="store_true",
                    help="the single server reads the workers' tiles through postgres_fdw (no second load)")
    ap.add_argument("--digests", help="per-tile digests: written when FILE has none for an operation, else compared")
    ap.add_argument("--worker-backend", help="terra_gpu.backend of the workers")
    ap.add_argument("--worker-device-mb", type=int, help="terra_gpu.max_device_memory_mb of the workers")
    ap.add_argument("--gpus", default="",
                    help="comma-separated GPU counts: the workers spread over that many GPUs of this host, in turn")
    args = ap.parse_args()
    gpu_counts = [int(g) for g in args.gpus.split(",") if g] or [0]
    tmp = tempfile.mkdtemp(prefix="tgbench-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    env = dict(os.environ, TG_CLUSTER_DIR=os.path.join(tmp, "c"), TG_CLUSTER_PORT=str(args.port))
    sock = env.get("TG_PGSOCKET", "/tmp")
    db = env.get("TG_DATABASE", "terra_gpu")

    def psql(node, *queries):
        cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p", str(args.port + node), "-d", db]
        for q in queries:
            cmd += ["-c", q]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        return p.stdout.strip(), p.stderr

    def timed(node, *queries):
        t0 = time.perf_counter()
        out, notices = psql(node, *queries)
        return time.perf_counter() - t0, out, notices

    def tile_digests(node, table, cols):
        """rid -> the digest of the tile's result columns, computed on that server."""
        out, _ = psql(node, "SELECT rid, md5(%s) FROM %s" % (" || ".join("ST_AsBinary(%s)" % c for c in cols), table))
        return dict(line.split("|") for line in out.splitlines())

    def part_digests(n, table, cols):
        """Per worker, its result tiles' digests (computed there, on every worker at once)."""
        with ThreadPoolExecutor(max_workers=n) as pool:
            return list(pool.map(lambda k: tile_digests(k, "%s_part%d" % (table, k), cols), range(1, n + 1)))

    def equal_tiles(a, b):
        return "%d of %d" % (sum(a.get(rid) == d for rid, d in b.items()), max(len(a), len(b)))

    saved = {}
    if args.digests and os.path.exists(args.digests):
        with open(args.digests) as f:
            for line in f:
                key, rid, d = line.split()
                saved.setdefault(key, {})[rid] = d

    try:
        subprocess.run([CLUSTER, "up", str(args.workers)], env=env, check=True, capture_output=True)
        t0 = time.perf_counter()
        subprocess.run([CLUSTER, "load", args.dem, "dem", str(args.tile)], env=env, check=True, capture_output=True)
        load_s = time.perf_counter() - t0
        if args.backend:
            psql(0, "ALTER DATABASE %s SET terra_gpu.backend = '%s'" % (db, args.backend))
        if args.budget_mb:
            psql(0, "ALTER DATABASE %s SET terra_gpu.max_memory_mb = %d" % (db, args.budget_mb))
        for node in range(1, args.workers + 1) if args.worker_backend else []:
            psql(node, "ALTER DATABASE %s SET terra_gpu.backend = '%s'" % (db, args.worker_backend))
        for node in range(1, args.workers + 1) if args.worker_device_mb else []:
            psql(node, "ALTER DATABASE %s SET terra_gpu.max_device_memory_mb = %d" % (db, args.worker_device_mb))
        cells, dem_bytes = map(int, psql(0, "SELECT sum(ST_Width(rast)::bigint * ST_Height(rast)), "
                                            "sum(ST_Width(rast)::bigint * ST_Height(rast) * "
                                            "(CASE ST_BandPixelType(rast) WHEN '16BSI' THEN 2 WHEN '16BUI' THEN 2 "
                                            "WHEN '8BUI' THEN 1 ELSE 4 END)) FROM dem")[0].split("|"))
        if not args.no_local and not args.local_over_fdw:
            srid = psql(0, "SELECT ST_SRID(rast) FROM dem LIMIT 1")[0]
            tiles = tiles_sql(args.dem, srid, "dem_local", args.tile)
            subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p", str(args.port), "-d", db],
                           input=tiles, text=True, env=env, check=True, capture_output=True)
        print("# %s: %d cells in tiles of %d, %d workers and a coordinator on one machine (loaded in %.1f s)"
              % (os.path.basename(args.dem), cells, args.tile, args.workers, load_s))
        print("# host: %s; %s; single server: %s; workers: backend %s%s\n"
              % (machine_description(), time.strftime("%Y-%m-%d"),
                 "none" if args.no_local else "backend %s%s%s" % (args.backend or "auto",
                                                               ", max_memory_mb %d" % args.budget_mb
                                                               if args.budget_mb else "",
                                                               ", over postgres_fdw" if args.local_over_fdw else ""),
                 args.worker_backend or "auto",
                 ", max_device_memory_mb %d" % args.worker_device_mb if args.worker_device_mb else ""))
        print("| operation | one server, s (device) | GPUs | %d workers, s | phases (slowest worker), s |"
              " worker busy, s | worker device, s | bytes between servers | of the DEM | tiles equal |"
              % args.workers)
        print("|---|---:|---:|---:|---|---|---|---:|---:|---|")
        for key in args.ops.split(","):
            op, opts, local = OPERATIONS[key]
            local = local.format(table="dem" if args.local_over_fdw else "dem_local")
            cols = ["filled", "direction", "accumulation"] if op == "tg_hydrology" else ["rast"]
            one, one_device = [], []
            for _ in range(0 if args.no_local else args.reps):
                w, out, _ = timed(0, "SELECT tg_create_result('one', 'SELECT * FROM %s', replace => true)" % local,
                                  "SELECT coalesce(kernel_ms, 0) + coalesce(transfer_ms, 0) FROM tg_last_run()")
                one.append(w)
                one_device.append(float(out.splitlines()[-1]) / 1000)
            one_tiles = tile_digests(0, "one", cols) if one else None
            first = None
            for g in gpu_counts:
                for node in range(1, args.workers + 1) if g else []:
                    psql(node, "ALTER DATABASE %s SET terra_gpu.device = %d" % (db, (node - 1) % g))
                many, phases, busy, device, moved = [], "", "", "", 0
                for _ in range(args.reps):
                    w, out, notices = timed(0, "SELECT * FROM tg_create_partitioned_result('many', 'dem', '%s', '%s', "
                                               "replace => true)" % (op, opts))
                    many.append(w)
                    rows = [r.split("|") for r in out.splitlines()]
                    busy = ", ".join("%.2f" % float(r[4]) for r in rows)
                    device = ", ".join("%.2f" % float(r[5]) for r in rows)
                    moved = sum(int(r[6]) + int(r[7]) for r in rows)
                    # each phase's NOTICE: name, seconds, kB, rounds (if in rounds)
                    said = re.findall(r": (\w+) of \w+ on \d+ workers in ([\d.]+) s, ([\d.]+) kB"
                                      r"(?: \((\d+) rounds\))?", notices)
                    phases = ", ".join("%s %s%s" % (m[0], m[1], " (%s rounds)" % m[3] if m[3] else "") for m in said)
                    by_phase = ", ".join("%s %s kB" % (m[0], m[2]) for m in said)
                    print("# %s %s: bytes by phase: %s" % (op, opts, by_phase), flush=True)
                parts = part_digests(args.workers, "many", cols)
                tiles = {rid: d for part in parts for rid, d in part.items()}
                same = []
                if one_tiles is not None:
                    same.append(equal_tiles(tiles, one_tiles) + " (one server)")
                if first is None:
                    first = (g, parts)
                else:
                    same.append("%d of %d parts (%d GPUs)" % (sum(a == b for a, b in zip(parts, first[1])),
                                                             len(parts), first[0]))
                if args.digests and key in saved:
                    same.append(equal_tiles(tiles, saved[key]) + " (%s)" % os.path.basename(args.digests))
                elif args.digests:
                    saved[key] = tiles
                    with open(args.digests, "a") as f:
                        f.writelines("%s %s %s\n" % (key, rid, d) for rid, d in sorted(tiles.items()))
                print("| %s %s | %s | %s | %.2f | %s | %s | %s | %d | %.2f %% | %s |"
                      % (op, opts if opts != "{}" else "",
                         "%.2f (%.2f)" % (statistics.median(one), statistics.median(one_device)) if one else "—",
                         g or "—", statistics.median(many), phases, busy, device, moved,
                         100.0 * moved / dem_bytes, "; ".join(same) or "—"), flush=True)
    finally:
        subprocess.run([CLUSTER, "down"], env=env, capture_output=True)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
