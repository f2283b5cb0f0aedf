#!/usr/bin/env python3
"""A coverage partitioned over several servers (tools/cluster.sh), on a real DEM.

Sets up a coordinator and 3 workers as throwaway clusters (Unix sockets only),
loads the DEM in tiles partitioned by rows of tiles, and checks:
  - every worker holds one contiguous range of tile rows, the ranges in order,
    disjoint and covering every row, sizes differing by at most one row;
  - every tile, read on the coordinator through its postgres_fdw partition,
    equals byte for byte the same tile loaded by raster2pgsql into a local
    table (same rid, same WKB);
  - a query for one tile row touches only the worker holding it (partition
    pruning on tile_row), so a worker's partition is addressed on its own;
  - the coverage forms of tg_fill and tg_flow_accumulation over the
    partitioned table equal those over the local table, tile for tile;
  - tg_create_partitioned_result (tg_fill, tg_slope, D8 tg_flow_direction,
    D8 tg_flow_accumulation of the filled DEM and of the DEM as it is, MFD-md
    and D-infinity accumulation, D8 and MFD-md tg_hydrology) on the
    workers equals the single-server coverage form tile for tile, each
    worker writing its own tiles as a raster table, with little crossing
    between servers; its argument errors carry their SQLSTATEs;
  - canceling it, or killing a worker, while that worker is held up in the
    last phase ends the statement (naming the worker) and leaves no result
    table and no prepared transaction on any server;
  - a query reaching a stopped worker fails naming that worker's server;
  - 'down' leaves no cluster files behind.
Fails (exit 1) when one does not hold.  Needs terra_gpu installed in the
PostgreSQL of PG_BIN (default /usr/lib/postgresql/15/bin) with postgres_fdw.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import check, checks_exit_status, run, tiles_sql  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLUSTER = os.path.join(REPO, "tools", "cluster.sh")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dem")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--tile", type=int, default=64)
    ap.add_argument("--port", type=int, default=int(os.environ.get("TG_CLUSTER_PORT", "5470")))
    args = ap.parse_args()
    n = args.workers
    tmp = tempfile.mkdtemp(prefix="tgcluster-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    env = dict(os.environ, TG_CLUSTER_DIR=os.path.join(tmp, "c"), TG_CLUSTER_PORT=str(args.port))

    def sql(node, q):
        return run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", env.get("TG_PGSOCKET", "/tmp"),
                    "-p", str(args.port + node), "-d", env.get("TG_DATABASE", "terra_gpu"), "-c", q],
                   env=env).strip()

    owner = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    pg_bin = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
    try:
        print("== %s over %d workers, tiles of %d" % (os.path.basename(args.dem), n, args.tile))
        run([CLUSTER, "up", str(n)], env=env)
        run([CLUSTER, "load", args.dem, "dem", str(args.tile)], env=env)
        # the same tiles, loaded locally on the coordinator
        srid = sql(0, "SELECT ST_SRID(rast) FROM dem LIMIT 1")
        tiles = tiles_sql(args.dem, srid, "dem_local", args.tile)
        run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", env.get("TG_PGSOCKET", "/tmp"),
             "-p", str(args.port), "-d", env.get("TG_DATABASE", "terra_gpu")], input=tiles, env=env)

        nrows = int(sql(0, "SELECT count(DISTINCT ST_UpperLeftY(rast)) FROM dem_local"))
        ranges = []
        for k in range(1, n + 1):
            lo, hi, cnt = sql(k, "SELECT min(tile_row), max(tile_row), count(*) FROM dem").split("|")
            ranges.append((int(lo), int(hi), int(cnt)))
        check(ranges[0][0] == 0 and ranges[-1][1] == nrows - 1
              and all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(n - 1)),
              "workers hold contiguous tile rows 0..%d in order: %s"
              % (nrows - 1, ", ".join("%d..%d" % r[:2] for r in ranges)))
        sizes = [r[1] - r[0] + 1 for r in ranges]
        check(max(sizes) - min(sizes) <= 1, "rows per worker differ by at most one: %s" % sizes)
        total = int(sql(0, "SELECT count(*) FROM dem_local"))
        check(sum(r[2] for r in ranges) == total, "the workers' tiles add up to the DEM's %d" % total)
        same = sql(0, "SELECT count(*) FROM dem d JOIN dem_local l USING (rid) "
                      "WHERE ST_AsBinary(d.rast) = ST_AsBinary(l.rast)")
        check(int(same) == total, "every tile read through postgres_fdw equals the local load (%s of %d)"
              % (same, total))
        rows_ok = sql(0, "SELECT bool_and(ST_UpperLeftY(d.rast) = y.uly) FROM dem d JOIN "
                         "(SELECT DISTINCT ON (r) r, uly FROM (SELECT dense_rank() OVER (ORDER BY ST_UpperLeftY(rast) DESC)"
                         " - 1 AS r, ST_UpperLeftY(rast) AS uly FROM dem_local) s) y ON y.r = d.tile_row")
        check(rows_ok == "t", "tile_row numbers rows of tiles north to south")
        plan = sql(0, "EXPLAIN (COSTS OFF) SELECT count(*) FROM dem WHERE tile_row = %d" % ranges[-1][0])
        check("dem_w%d" % n in plan and not any("dem_w%d" % k in plan for k in range(1, n)),
              "a query for one tile row reaches only the worker holding it")

        for name, call in (("tg_fill", "tg_fill(coverage => '%s')"),
                           ("tg_flow_accumulation", "tg_flow_accumulation(coverage => '%s')")):
            eq = sql(0, "SELECT count(*) FILTER (WHERE ST_AsBinary(a.rast) = ST_AsBinary(b.rast)) || '|' || count(*) "
                        "FROM %s a JOIN %s b USING (rid)" % (call % "dem", call % "dem_local"))
            same, cnt = map(int, eq.split("|"))
            check(same == cnt == total, "%s over the partitioned table equals the local one (%d of %d tiles)"
                  % (name, same, total))

        # the same operations computed where the partitions live
        dem_bytes = int(sql(0, "SELECT sum(ST_Width(rast) * ST_Height(rast) * 2) FROM dem_local"))
        for op, opts, local in (("tg_fill", "{}", "tg_fill(coverage => 'dem_local')"),
                                ("tg_slope", '{"units": "PERCENT"}', "tg_slope(coverage => 'dem_local', units => 'PERCENT')"),
                                ("tg_flow_direction", "{}", "tg_flow_direction(coverage => 'dem_local')"),
                                ("tg_flow_accumulation", "{}", "tg_flow_accumulation(coverage => 'dem_local')"),
                                ("tg_flow_accumulation", '{"fill": false}',
                                 "tg_flow_accumulation(coverage => 'dem_local', fill => false)"),
                                ("tg_flow_accumulation", '{"routing": "mfd-md"}',
                                 "tg_flow_accumulation(coverage => 'dem_local', routing => 'mfd-md')"),
                                ("tg_flow_accumulation", '{"routing": "dinf", "fill": false, "units": "sca"}',
                                 "tg_flow_accumulation(coverage => 'dem_local', routing => 'dinf', fill => false, "
                                 "units => 'sca')"),
                                ("tg_hydrology", "{}", "tg_hydrology(coverage => 'dem_local')"),
                                ("tg_hydrology", '{"routing": "mfd-md", "units": "area"}',
                                 "tg_hydrology(coverage => 'dem_local', routing => 'mfd-md', units => 'area')")):
            cols = ["filled", "direction", "accumulation"] if op == "tg_hydrology" else ["rast"]
            scans = "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'dem'"
            scans_before = None
            while scans_before != int(sql(1, scans)):   # the last run's statistics in
                scans_before = int(sql(1, scans))
                time.sleep(0.3)
            rows = sql(0, "SELECT part, server, tiles, bytes_sent + bytes_received FROM "
                          "tg_create_partitioned_result('res', 'dem', '%s', '%s', replace => true) ORDER BY part"
                       % (op, opts)).splitlines()
            if opts == '{"routing": "mfd-md"}':
                # the worker's statistics arrive when its connection has closed
                for _ in range(50):
                    scanned = int(sql(1, scans)) - scans_before
                    if scanned > 0:
                        break
                    time.sleep(0.1)
                # its table read once for the layout and once in each phase that
                # reads tiles (edges, scan, surface, finish), not in every round
                check(0 < scanned <= 5, "%s %s: the worker scanned its table %d times" % (op, opts, scanned))
            parts = [r.split("|") for r in rows]
            check(len(parts) == n and all(int(p[2]) == r[2] for p, r in zip(parts, ranges)),
                  "%s over %d workers: each wrote its own tiles (%s)" % (op, n, ", ".join(p[2] for p in parts)))
            eq = sql(0, "SELECT count(*) FILTER (WHERE %s) || '|' || count(*) FROM res a JOIN %s b USING (rid)"
                     % (" AND ".join("ST_AsBinary(a.%s) = ST_AsBinary(b.%s)" % (c, c) for c in cols), local))
            same, cnt = map(int, eq.split("|"))
            check(same == cnt == total, "%s %s on the workers equals the single-server coverage form (%d of %d tiles%s)"
                  % (op, opts, same, total, ", each of " + ", ".join(cols) if len(cols) > 1 else ""))
            moved = sum(int(p[3]) for p in parts)
            # what crosses grows with the width, not the rows: on this small DEM
            # (a few hundred rows) a fraction, on the 13 M-cell one under 2 %;
            # a splitting routing also hands over the routing of the rows its
            # neighbours compute too (a few rows each way: on parts of two rows
            # of 64-pixel tiles, most of the DEM's bytes) and then a row each way
            # per round, as often as water leaves those rows and comes back
            bound = dem_bytes if "routing" in opts else dem_bytes / 3
            check(0 < moved < bound, "%s %s: %d bytes crossed between servers, %.1f %% of the DEM's %d"
                  % (op, opts, moved, 100.0 * moved / dem_bytes, dem_bytes))
            on_worker = sql(1, "SELECT count(*) FROM raster_columns WHERE r_table_name = 'res_part1'")
            check(on_worker == str(len(cols)), "%s: the worker's part is a raster table GIS clients list (%s columns)"
                  % (op, on_worker))
        for bad, state in (("SELECT * FROM tg_create_partitioned_result('x', 'dem_local', 'tg_fill')", "22023"),
                           ("SELECT * FROM tg_create_partitioned_result('x', 'dem', 'tg_rusle')", "0A000"),
                           ("SELECT * FROM tg_create_partitioned_result('x', 'dem', 'tg_flow_accumulation', "
                            "'{\"routing\": \"mfd-md\", \"weight\": \"dem_w1\"}')", "0A000"),
                           ("SELECT * FROM tg_create_partitioned_result('res', 'dem', 'tg_fill')", "42P07")):
            p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
                                "-h", env.get("TG_PGSOCKET", "/tmp"), "-p", str(args.port),
                                "-d", env.get("TG_DATABASE", "terra_gpu"), "-c", bad],
                               capture_output=True, text=True, env=env)
            check(p.returncode != 0 and state in p.stderr, "refused with %s: %s" % (state, bad))

        # a worker held up in the last phase: canceling the statement, then
        # killing that worker, ends it naming the worker and leaves no result
        # table and no prepared transaction on any server
        for how in ("cancel", "kill"):
            blocker = subprocess.Popen(["psql", "-X", "-q", "-h", env.get("TG_PGSOCKET", "/tmp"), "-p", str(args.port + 2),
                                        "-d", env.get("TG_DATABASE", "terra_gpu")], stdin=subprocess.PIPE,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, env=env)
            blocker.stdin.write("BEGIN; CREATE TABLE gone_part2 (x integer);\n")
            blocker.stdin.flush()
            # the blocking transaction holds its table before the statement starts
            for _ in range(300):
                if sql(2, "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'") == "1":
                    break
                time.sleep(0.05)
            run_ = subprocess.Popen(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", env.get("TG_PGSOCKET", "/tmp"),
                                     "-p", str(args.port), "-d", env.get("TG_DATABASE", "terra_gpu"),
                                     "-c", "SELECT * FROM tg_create_partitioned_result('gone', 'dem', 'tg_fill')"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            waited = 0
            for _ in range(300):
                waited = int(sql(2, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%tg_part_finish%' "
                                    "AND wait_event_type = 'Lock'"))
                if waited:
                    break
                time.sleep(0.1)
            check(waited == 1, "%s: the worker on w2 waits in the last phase" % how)
            if how == "cancel":
                sql(0, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%tg_create_partitioned%' "
                       "AND pid <> pg_backend_pid()")
            else:
                run(owner + [os.path.join(pg_bin, "pg_ctl"), "-D", os.path.join(env["TG_CLUSTER_DIR"], "w2"),
                             "-m", "immediate", "-w", "stop"], cwd="/")
            out, errtext = run_.communicate(timeout=120)
            errline = [l for l in errtext.splitlines() if l.startswith("ERROR")][:1]
            blocker.stdin.close()
            blocker.wait(timeout=60)
            if how == "cancel":
                check(run_.returncode != 0 and "canceling statement" in errtext,
                      "cancel: the statement stops: %s" % errline)
            else:
                check(run_.returncode != 0 and '"w2"' in errtext,
                      "kill: the statement fails naming the worker: %s" % errline)
                run([CLUSTER, "up", str(n)], env=env)    # w2 again, after its crash
            left = [sql(0, "SELECT count(*) FROM pg_class WHERE relname LIKE 'gone%'")]
            for k in range(1, n + 1):
                left.append(sql(k, "SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'gone%') + "
                                   "(SELECT count(*) FROM pg_prepared_xacts)"))
            check(all(c == "0" for c in left), "%s: no result table or prepared transaction is left on any server (%s)"
                  % (how, ", ".join(left)))

        # a worker that is gone: the statement fails and names its server
        data = os.path.join(env["TG_CLUSTER_DIR"], "w2")
        run(owner + [os.path.join(pg_bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"], cwd="/")
        p = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", env.get("TG_PGSOCKET", "/tmp"),
                            "-p", str(args.port), "-d", env.get("TG_DATABASE", "terra_gpu"),
                            "-c", "SELECT count(*) FROM dem"], capture_output=True, text=True, env=env)
        check(p.returncode != 0 and '"w2"' in p.stderr,
              "a query reaching a stopped worker fails naming it: %s" % p.stderr.strip().splitlines()[0:1])
    finally:
        down = subprocess.run([CLUSTER, "down"], env=env, capture_output=True, text=True)
    gone = not os.path.exists(env["TG_CLUSTER_DIR"])
    check(gone, "down removes the clusters")
    if not gone:
        print("     tools/cluster.sh down: rc %d %s" % (down.returncode, (down.stdout + down.stderr).strip()))
        for root, dirs, files in os.walk(env["TG_CLUSTER_DIR"]):
            print("     left: %s %s" % (root, sorted(files)[:10]))
        subprocess.run([CLUSTER, "down"], env=env)
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(checks_exit_status("partition"))


if __name__ == "__main__":
    main()
