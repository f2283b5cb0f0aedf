#!/usr/bin/env python3
"""terra_gpu under a server's real load, on real DEMs: many sessions, cancels, repetition.

1. Eight sessions at once, each with every core (terra_gpu.threads = 0),
   run coverage and value forms (fill, tg_hydrology, multiple-flow
   accumulation, a viewshed); each result equals the same call run alone
   on one thread, bit for bit.
2. pg_cancel_backend stops a threaded call within a second, for several
   operations; the same session then answers a query, nothing is left
   behind, and the backend runs as many threads as before the call (/proc:
   one, plus a GPU context's own).
3. A thousand threaded calls in one session leave the backend with the
   threads it had and without memory growth beyond a few MB (/proc VmRSS).

The cancels run on the DEM enlarged --big-scale times a side (bilinear, by
gdalwarp; 3: about 13 M cells for the demo DEM), so that one call takes
seconds; the cumulative viewshed's observers stand on valid cells only.  The
server must run on this machine (it reads /proc/<backend pid>).

    check_sessions.py DEM.tif [--big-scale 3] [--backend cpu]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import check, failures, Dem, load_dem, psql, run  # noqa: E402

def digest_sql(call, columns):
    """One md5 over every result tile of a call, in rid order (or of one raster)."""
    parts = " || ".join("md5(ST_AsBinary(%s))" % c for c in columns)
    return "SELECT md5(string_agg(%s, ',' ORDER BY rid)) FROM %s" % (parts, call)


CALLS = [
    ("fill coverage", "tg_fill(coverage => 'ses_tiles')", ["rast"]),
    ("tg_hydrology coverage", "tg_hydrology(coverage => 'ses_tiles')", ["filled", "direction", "accumulation"]),
    ("mfd-md accumulation value form",
     "(SELECT rid, tg_flow_accumulation(rast, routing => 'mfd-md') AS rast FROM ses_whole) s", ["rast"]),
    ("viewshed value form",
     "(SELECT rid, tg_viewshed(rast, ST_Centroid(ST_Envelope(rast)), observer_height => 30) AS rast FROM ses_whole) s",
     ["rast"]),
]


def session(sql, db, settings, tag=None):
    env = dict(os.environ, PGAPPNAME=tag or "tg_session")
    cmd = ["psql", "-X", "-q", "-At"] + (["-d", db] if db else [])
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env), settings + "\n" + sql + ";\n"


def concurrent(db, backend):
    print("eight sessions at once, every core each")
    alone = {name: psql("SET terra_gpu.backend = %s; SET terra_gpu.threads = 1; %s"
                        % (backend, digest_sql(call, cols)), db).splitlines()[-1]
             for name, call, cols in CALLS}
    procs = []
    for k in range(8):
        name, call, cols = CALLS[k % len(CALLS)]
        p, script = session(digest_sql(call, cols), db,
                            "SET terra_gpu.backend = %s; SET terra_gpu.threads = 0;" % backend)
        procs.append((name, p, script))
    outs = []
    threads = [threading.Thread(target=lambda n=n, p=p, s=s: outs.append((n, p.communicate(s))))
               for n, p, s in procs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name, (out, err) in sorted(outs):
        got = out.strip().splitlines()[-1] if out.strip() else err.strip()
        check(got == alone[name], "%s with every core, 7 other sessions busy: equals the call alone on one thread"
              % name)


def proc_status(pid):
    fields = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    # a process on its way out has no VmRSS any more
    return int(fields.get("Threads", "0")), int(fields.get("VmRSS", "0 kB").split()[0]) // 1024


def backend_pid(tag, db):
    for _ in range(100):
        pid = psql("SELECT pid FROM pg_stat_activity WHERE application_name = '%s' AND state = 'active'" % tag, db)
        if pid:
            return int(pid.splitlines()[0])
        time.sleep(0.05)
    return None


def state_of(pid, db):
    return psql("SELECT state || ':' || query FROM pg_stat_activity WHERE pid = %d" % pid, db)


def observers_on_valid_cells(dem, count):
    """EWKT points on a circle around the DEM's centre (a quarter of its width
    across), those on a valid cell."""
    info = json.loads(run(["gdalinfo", "-json", dem.path]))
    (x0, y0), (x1, y1) = info["cornerCoordinates"]["upperLeft"], info["cornerCoordinates"]["lowerRight"]
    cx, cy, r = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 4
    points = []
    for k in range(count):
        x, y = cx + r * math.cos(2 * math.pi * k / count), cy + r * math.sin(2 * math.pi * k / count)
        value = run(["gdallocationinfo", "-valonly", "-geoloc", dem.path, repr(x), repr(y)]).strip()
        if value and (dem.nodata is None or float(value) != dem.nodata):
            points.append("SRID=%d;POINT(%r %r)" % (dem.srid, x, y))
    return points


def cancels(db, backend, observers):
    print("pg_cancel_backend on threaded calls")
    # calls repeated so that one is surely running when the cancel comes, however fast the machine
    jobs = [
        ("tg_hydrology mfd-md coverage",
         "CREATE TABLE ses_out AS SELECT count(*) FROM generate_series(1, 100) g, "
         # band depends on g, so the function runs again for every g (rather than a kept result)
         "LATERAL (SELECT count(*) FROM tg_hydrology(coverage => 'ses_big', routing => 'mfd-md', band => 1 + 0 * g)) h"),
        ("fill value form",
         "CREATE TABLE ses_out AS SELECT count(tg_fill(rast)) FROM ses_big_whole, generate_series(1, 100)"),
        ("rusle mfd-md value form",
         "CREATE TABLE ses_out AS SELECT count(tg_rusle(rast, 300.0, 0.03, routing => 'mfd-md')) FROM ses_big_whole, "
         "generate_series(1, 100)"),
        ("cumulative viewshed of %d observers" % len(observers),
         "CREATE TABLE ses_out AS SELECT count(tg_viewshed_count(rast, ARRAY[%s]::geometry[], observer_height => 10)) "
         "FROM ses_big_whole, generate_series(1, 100)" % ", ".join("'%s'" % p for p in observers)),
    ]
    for name, sql in jobs:
        tag = "tg_cancel_%d" % abs(hash(name))
        # a first call starts what stays with the backend (a GPU context and its threads)
        script = ("SET terra_gpu.backend = %s; SET terra_gpu.threads = 0; SET client_min_messages = warning;\n"
                  "SELECT count(tg_fill(rast)) FROM ses_big_whole;\nSELECT pg_sleep(0.5);\n"
                  "%s;\nSELECT 'after:' || count(*) FROM ses_tiles;\nSELECT pg_sleep(1);\n" % (backend, sql))
        p = subprocess.Popen(["psql", "-X", "-q", "-At"] + (["-d", db] if db else []), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PGAPPNAME=tag))
        p.stdin.write(script)
        p.stdin.close()
        pid = backend_pid(tag, db)
        while pid and "pg_sleep" not in state_of(pid, db) and p.poll() is None:
            time.sleep(0.02)
        before = proc_status(pid)[0] if pid and p.poll() is None else 0
        while pid and "CREATE TABLE ses_out" not in state_of(pid, db) and p.poll() is None:
            time.sleep(0.02)
        busy = before
        for _ in range(50):     # the most threads seen during a second of the call
            time.sleep(0.02)
            if pid and os.path.exists("/proc/%d" % pid):
                busy = max(busy, proc_status(pid)[0])
        if pid is None or p.poll() is not None or "active:CREATE TABLE ses_out" not in state_of(pid, db):
            check(False, "%s: the call ran until the cancel (%s)" % (name, p.stderr.read().strip()[:300]))
            p.wait()
            continue
        t0 = time.time()
        psql("SELECT pg_cancel_backend(%d)" % pid, db)
        # the error reaches psql, which then runs the next statement
        line = p.stdout.readline()
        while line and not line.startswith("after:"):
            line = p.stdout.readline()
        took = time.time() - t0
        time.sleep(0.3)
        after = proc_status(pid)[0] if os.path.exists("/proc/%d" % pid) else -1
        rest = p.stdout.read()
        err = p.stderr.read()
        p.wait()
        left = psql("SELECT to_regclass('ses_out') IS NULL", db)
        canceled = "canceling statement due to user request" in err
        check(canceled and took < 1.0 and line.startswith("after:") and left == "t" and after == before and
              (busy > before or backend != "cpu"),
              "%s: stopped %.2f s after the request; up to %d threads while it ran, %d before and after; the "
              "session answers next; no table left" % (name, took, busy, after))
        if not canceled:
            print("     psql said: %s" % (err.strip() or line + rest)[:300])
        psql("DROP TABLE IF EXISTS ses_out", db)


def repetition(db, backend, calls=1000):
    print("a thousand threaded calls in one session")
    tag = "tg_repeat"
    script = ("SET terra_gpu.backend = %s; SET terra_gpu.threads = 0;\n"
              "SELECT count(tg_fill(rast)) FROM ses_tiles, generate_series(1, 5) WHERE rid = 1;\n"
              "SELECT pg_sleep(0.3);\n"
              "SELECT count(tg_fill(rast)) + count(tg_slope(rast)) FROM ses_tiles, generate_series(1, %d) "
              "WHERE rid = 1;\n"
              "SELECT pg_sleep(0.3);\nSELECT 'done';\n" % (backend, calls // 2))
    p = subprocess.Popen(["psql", "-X", "-q", "-At"] + (["-d", db] if db else []), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, PGAPPNAME=tag))
    p.stdin.write(script)
    p.stdin.flush()
    p.stdin.close()
    pid = None
    samples = []
    while p.poll() is None:
        if pid is None:
            found = psql("SELECT pid FROM pg_stat_activity WHERE application_name = '%s'" % tag, db)
            pid = int(found.splitlines()[0]) if found else None
        elif os.path.exists("/proc/%d" % pid):
            try:
                samples.append((time.time(), psql("SELECT query FROM pg_stat_activity WHERE pid = %d" % pid, db),
                                proc_status(pid)))
            except (OSError, ValueError, KeyError):
                pass
        time.sleep(0.1)
    out = p.stdout.read()
    asleep = [s for s in samples if "pg_sleep" in s[1]]
    if len(asleep) < 2 or "done" not in out:
        check(False, "the session ran (%s)" % p.stderr.read().strip()[:200])
        return
    first, last = asleep[0][2], asleep[-1][2]
    check(last[0] == first[0] and last[1] - first[1] < 16,
          "%d calls of tg_fill and tg_slope on every core: %d threads between calls before (the backend's own, "
          "and a GPU context's), %d after; resident memory %d MB before, %d MB after"
          % (calls, first[0], last[0], first[1], last[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dem")
    ap.add_argument("--big-scale", type=int, default=3,
                    help="the cancels' DEM: DEM enlarged this many times a side (default 3)")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--db")
    args = ap.parse_args()
    db = args.db
    os.environ["PGOPTIONS"] = "-c client_min_messages=warning"
    dem = Dem(args.dem)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "%s_x%d.tif" % (dem.name, args.big_scale))
        run(["gdalwarp", "-q", "-r", "bilinear", "-ot", "Float32", "-ts", str(dem.width * args.big_scale),
             str(dem.height * args.big_scale), dem.path, path])
        big = Dem(path)
        print("%s; cancels on it enlarged to %d x %d cells; %s path" % (dem.name, big.width, big.height, args.backend))
        load_dem(dem, "ses_tiles", db, tile=256)
        load_dem(dem, "ses_whole", db)
        load_dem(big, "ses_big", db, tile=256)
        load_dem(big, "ses_big_whole", db)
        observers = observers_on_valid_cells(big, 40)
    psql("DROP TABLE IF EXISTS ses_out", db)
    concurrent(db, args.backend)
    cancels(db, args.backend, observers)
    repetition(db, args.backend)
    psql("DROP TABLE IF EXISTS ses_tiles, ses_whole, ses_big, ses_big_whole, ses_out", db)
    print("session checks: %s" % ("all ok" if failures() == 0 else "%d FAILED" % failures()))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
