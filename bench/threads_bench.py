#!/usr/bin/env python3
"""Thread scaling of the CPU path: each operation of the core on a real DEM
(build/bench_core, no server) with 1, 2, 4, 8 and 16 threads (no more than
the cores this process may use), the wall time of each and its speed-up over
one thread, and whether every thread count gave the same bits as one
thread (the outputs are saved and compared).  It measures and reports;
nothing passes or fails on time.

    bench/threads_bench.py DEM.tif [--threads 1,2,4,8,16] [--reps 1] [--ops slope,fill,...]
"""

import datetime
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, dem_bench_arguments, file_sha256, machine_description, run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# label, bench_core options
OPS = [
    ("slope", ["op=slope"]),
    ("terrain (8 products, geomorphons radius 10)", ["op=terrain"]),
    ("fill", ["op=fill"]),
    ("d8 directions", ["op=direction", "routing=d8", "fill=1"]),
    ("d8 accumulation (chain)", ["op=accumulation", "routing=d8", "fill=1"]),
    ("mfd-md accumulation (chain)", ["op=accumulation", "routing=mfd-md", "fill=1"]),
    ("rusle (mfd-md)", ["op=rusle", "routing=mfd-md", "fill=1"]),
    ("viewshed", ["op=viewshed"]),
    ("bmmq (256 tiles)", ["op=bmmq", "tile=256"]),
]


def geometry_options(dem):
    info = run(["gdalinfo", "-json", dem.path])
    gt = [float(v) for v in re.search(r'"geoTransform":\s*\[([^\]]*)\]', info).group(1).split(",")]
    if dem.geographic:
        return ["geographic=1", "lat_top=%r" % (gt[3] + 0.5 * gt[5]), "lat_step=%r" % gt[5],
                "lon_step=%r" % gt[1]]
    return ["pixel_w=%r" % dem.pixel_width, "pixel_h=%r" % dem.pixel_height]


def bench(raw, dem, opts, threads, reps, save):
    exe = os.path.join(REPO, "build", "bench_core")
    args = [exe, raw, str(dem.width), str(dem.height), dem.pixtype,
            "none" if dem.nodata is None else repr(dem.nodata), "backends=cpu", "reps=%d" % reps,
            "threads=%d" % threads, "scale=%r" % dem.scale] + geometry_options(dem) + opts
    if save:
        args.append("save=%s" % save)
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', out.stdout)}


def main():
    ap = dem_bench_arguments(__doc__, reps=1)
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--ops", help="labels to run, comma-separated prefixes (default: all)")
    args = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    counts = [t for t in (int(x) for x in args.threads.split(",")) if t <= cores] or [1]
    dem = Dem(args.dem)
    ops = [o for o in OPS if not args.ops or any(o[0].startswith(p) for p in args.ops.split(","))]

    print("### Thread scaling of the CPU path on %s (%d cells), %s" %
          (dem.name, dem.cells, datetime.date.today().isoformat()))
    print("")
    print("- Host: %s; the core alone (build/bench_core), median of %d after a warm-up" %
          (machine_description(), args.reps))
    print("")
    print("| operation | " + " | ".join("%d thread%s" % (t, "" if t == 1 else "s") for t in counts) +
          " | speed-up at %d | same bits |" % counts[-1])
    print("|---|" + "---:|" * len(counts) + "---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "dem.raw")
        run(["gdal_translate", "-q", "-of", "ENVI", dem.path, raw])
        for label, opts in ops:
            times, digests = [], set()
            for t in counts:
                save = os.path.join(tmp, "out.bin")
                r = bench(raw, dem, opts, t, args.reps, save)
                if "error" in r:
                    times.append(None)
                    print("%s with %d threads failed: %s" % (label, t, r["error"]), file=sys.stderr)
                    continue
                times.append(float(r["cpu_ms"]))
                if save:
                    digests.add(file_sha256(save))
            cells = ["%.0f ms" % x if x is not None else "–" for x in times]
            speedup = "%.2f×" % (times[0] / times[-1]) if times[0] and times[-1] else "–"
            same = "–" if not digests else "yes" if len(digests) == 1 else "NO"
            print("| %s | %s | %s | %s |" % (label, " | ".join(cells), speedup, same), flush=True)


if __name__ == "__main__":
    main()
