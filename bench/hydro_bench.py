#!/usr/bin/env python3
"""Benchmark the hydrology core on a real DEM, in the shape of the source papers.

Runs build/bench_core (no server) on the DEM's pixels and prints Markdown:
  - fill: priority-flood and Planchon-Darboux (the same surface), whole call
    and device kernel time, Gcell/s;
  - Sten et al. (2016) Table 2 shape: accumulation strategy x routing, the
    accumulation alone (the routing it works on is prepared first and timed
    apart), plus the preparation (fill, flats, directions) once per routing;
  - Qin & Zhan (2012) Table 1 shape: preprocessing (Planchon-Darboux fill),
    MFD-md by flow transfer (their flow-transfer-matrix strategy), MFD-md by
    indegree (their graph strategy), and the whole workflow.
Every GPU run is also checked against the CPU where both ran.  It measures
and reports; nothing passes or fails on time.

    bench/hydro_bench.py DEM.tif [--backends cpu,gpu] [--reps 3] [--timeout 600]
"""

import datetime
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, dem_bench_arguments, machine_description, print_report, run  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROUTINGS = ["d8", "fd8", "fdd8", "mfd-md"]
METHODS = ["flow-transfer", "dependency-transfer", "indegree", "topological", "auto"]


def bench(raw, dem, backend, timeout, reps, **opts):
    """One bench_core run; returns its key=value pairs, or {'error': ...}."""
    exe = os.path.join(REPO, "build", "bench_core")
    geo = (["geographic=1", "lat_top=%r" % dem.lat_top, "lat_step=%r" % dem.lat_step,
            "lon_step=%r" % dem.lon_step] if dem.geographic else
           ["pixel_w=%r" % dem.pixel_width, "pixel_h=%r" % dem.pixel_height])
    args = [exe, raw, str(dem.width), str(dem.height), dem.pixtype,
            "none" if dem.nodata is None else repr(dem.nodata), "backends=%s" % backend,
            "reps=%d" % reps] + geo + ["%s=%s" % kv for kv in opts.items()]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "> %d s" % timeout}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', out.stdout)}


def ms(r, key):
    return "%.1f" % float(r[key]) if key in r else r.get("error", "–")


def main():
    ap = dem_bench_arguments(__doc__, reps=3)
    ap.add_argument("--backends", default="cpu,gpu")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="accumulation strategies to run (flow and dependency transfer are O(n L))")
    ap.add_argument("--drainage", action="store_true",
                    help="only the device's drainage passes (Strahler order, basins of every outlet) "
                    "against the D8 accumulation's device time")
    ap.add_argument("--threshold", type=float, default=1000, help="--drainage: stream cells' accumulation")
    ap.add_argument("--out")
    args = ap.parse_args()
    backends = args.backends.split(",")
    methods = args.methods.split(",")

    dem = Dem(args.dem)
    info = run(["gdalinfo", "-json", dem.path])
    import json
    gt = json.loads(info)["geoTransform"]
    dem.lat_top = gt[3] + 0.5 * gt[5]
    dem.lat_step = gt[5]
    dem.lon_step = abs(gt[1])

    lines = ["### Hydrology on %s (%d x %d = %d cells), %s" % (
        dem.name, dem.width, dem.height, dem.cells, datetime.date.today().isoformat()), "",
        "- Host: %s" % machine_description(), ""]
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "dem.bil")
        run(["gdal_translate", "-q", "-of", "ENVI", dem.path, raw])

        if args.drainage:
            r = bench(raw, dem, "gpu", args.timeout, args.reps, op="drainage", threshold=args.threshold)
            lines += ["Drainage passes on the device (ms, median of %d; threshold %g cells: %s stream cells, "
                      "%s path ends):" % (args.reps, args.threshold, r.get("stream_cells", "–"),
                                          r.get("ends", "–")), "",
                      "| pass | device | transfers | wall (core) | cells differing from the CPU's call |",
                      "|---|---:|---:|---:|---:|"]
            for key, name in [("strahler", "Strahler order"), ("basins", "basins of every outlet")]:
                lines.append("| %s | %s | %s | %s | %s |" % (
                    name, ms(r, key + "_kernel_ms"), ms(r, key + "_transfer_ms"), ms(r, key + "_wall_ms"),
                    r.get(key + "_cells_differing", r.get("error", "–"))))
            if "strahler_kernel_ms" in r and "basins_kernel_ms" in r:
                lines.append("| both | %.2f | | | |" % (float(r["strahler_kernel_ms"]) +
                                                        float(r["basins_kernel_ms"])))
            lines += ["| D8 accumulation alone (tiled, routing excluded) | %s | | | |" %
                      ms(r, "d8_accumulation_kernel_ms"), ""]
            print_report(lines, args.out)
            return

        # fill
        lines += ["Fill (ms; GPU: whole call / device kernels):", "",
                  "| method | " + " | ".join(backends) + " | GPU Gcell/s (device) | GPU = CPU |",
                  "|---|" + "---:|" * len(backends) + "---:|---|"]
        for m in ["priority-flood", "planchon-darboux"]:
            r = bench(raw, dem, ",".join(backends), args.timeout, args.reps, op="fill", method=m)
            cells = []
            for b in backends:
                if b == "gpu" and "gpu_ms" in r:
                    cells.append("%s / %s" % (ms(r, "gpu_ms"), "%.2f" % float(r["gpu_kernel_ms"])))
                else:
                    cells.append(ms(r, b + "_ms"))
            lines.append("| %s | %s | %s | %s |" % (
                m, " | ".join(cells), r.get("kernel_gcells", "–"),
                "yes" if r.get("cells_differing") == "0" else r.get("cells_differing", "–")))
        lines.append("")

        # Sten et al. 2016, Table 2 shape
        for b in backends:
            own = "gpu_own_ms" if b == "gpu" else "cpu_own_ms"
            prep = "gpu_prep_ms" if b == "gpu" else "cpu_prep_ms"
            results = {}
            for routing in ROUTINGS:
                for m in METHODS:
                    if m not in methods:
                        results[(routing, m)] = {"error": "not run"}
                        continue
                    if routing == "fdd8" and m == "flow-transfer":
                        results[(routing, m)] = {"error": "n/a"}
                        continue
                    print("  %s %s %s ..." % (b, routing, m), file=sys.stderr, flush=True)
                    results[(routing, m)] = bench(raw, dem, b, args.timeout, max(1, args.reps - 1),
                                                  op="accumulation", routing=routing, method=m)
            lines += ["Accumulation alone on the %s (ms; Sten et al. 2016 Table 2 shape; rounds in brackets):" %
                      b.upper(), "",
                      "| strategy | " + " | ".join(ROUTINGS) + " |", "|---|" + "---:|" * len(ROUTINGS)]
            for m in METHODS:
                row = []
                for routing in ROUTINGS:
                    r = results[(routing, m)]
                    if own in r:
                        row.append("%s (%s)" % (ms(r, own), r.get(b + "_iterations", "?")))
                    else:
                        row.append(r.get("error", "–"))
                lines.append("| %s | %s |" % (m, " | ".join(row)))
            lines.append("| *preparation: fill, flats, directions* | %s |" % " | ".join(
                ms(results[(routing, "indegree")], prep) for routing in ROUTINGS))
            if b == "gpu":
                lines.append("| *Gcell/s, auto* | %s |" % " | ".join(
                    "%.2f" % (dem.cells / float(results[(routing, "auto")][own]) / 1e6)
                    if own in results[(routing, "auto")] else "–" for routing in ROUTINGS))
            lines.append("")

        # Qin & Zhan 2012, Table 1 shape
        lines += ["Qin & Zhan (2012) Table 1 shape (ms):", "",
                  "| step | " + " | ".join(backends) + " |", "|---|" + "---:|" * len(backends)]
        rows = {"Preprocessing (Planchon-Darboux fill)": {}, "MFD-md, flow transfer (FTM strategy)": {},
                "MFD-md, indegree (graph strategy)": {}, "Whole workflow (fill + routing + MFD-md graph)": {}}
        for b in backends:
            key = b + "_ms"
            pd = bench(raw, dem, b, args.timeout, 1, op="fill", method="planchon-darboux")
            ft = (bench(raw, dem, b, args.timeout, 1, op="accumulation", routing="mfd-md", method="flow-transfer")
                  if "flow-transfer" in methods else {"error": "not run"})
            gr = bench(raw, dem, b, args.timeout, 1, op="accumulation", routing="mfd-md", method="indegree")
            own = b + "_own_ms"
            rows["Preprocessing (Planchon-Darboux fill)"][b] = ms(pd, key)
            rows["MFD-md, flow transfer (FTM strategy)"][b] = ms(ft, own)
            rows["MFD-md, indegree (graph strategy)"][b] = ms(gr, own)
            rows["Whole workflow (fill + routing + MFD-md graph)"][b] = ms(gr, key)
        for name, vals in rows.items():
            lines.append("| %s | %s |" % (name, " | ".join(vals.get(b, "–") for b in backends)))
        lines.append("")

    print_report(lines, args.out)


if __name__ == "__main__":
    main()
