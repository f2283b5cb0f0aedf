#!/usr/bin/python3
"""terra_gpu's fill and flow accumulation beside SAGA and GRASS on real DEMs.

For each DEM, on the CPU (build/bench_core, no server):
  - fill: terra_gpu (priority-flood; Planchon-Darboux gives the same surface)
    against SAGA's Planchon/Darboux and Wang & Liu fills (minimum slope 0) and
    GRASS r.fill.dir;
  - accumulation: each peer routes terra_gpu's filled DEM (so that differences
    come from routing and flats, not from filling): terra_gpu D8, FD8 and
    MFD-md against SAGA ta_hydrology 0 (Deterministic 8; Multiple Flow
    Direction, convergence 1.1; Multiple Maximum Downslope Gradient, i.e.
    MFD-md) and GRASS r.watershed -s (D8);
  - the time each took on the same machine (whole command: peers read and
    write files).
Prints Markdown tables of agreement and timing.  Needs saga_cmd, grass and
the GDAL Python bindings (Debian: saga, grass-core, python3-gdal).

    bench/hydro_peers.py DEM.tif [DEM.tif ...]
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from osgeo import gdal

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
gdal.UseExceptions()


def timed(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (cmd[0], p.stdout[-2000:], p.stderr[-2000:]))
    return time.perf_counter() - t0


def try_timed(cmd):
    """timed(), or None when the command fails."""
    try:
        return timed(cmd)
    except RuntimeError:
        return None


def fmt_s(t):
    return "failed" if t is None else "%.2f" % t


def read(path):
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    a = band.ReadAsArray().astype(np.float64)
    nd = band.GetNoDataValue()
    if nd is not None:
        a[a == nd] = np.nan
    return a


def write_like(src, array, path, nodata=-9999.0):
    ds = gdal.Open(src)
    out = gdal.GetDriverByName("GTiff").Create(path, ds.RasterXSize, ds.RasterYSize, 1, gdal.GDT_Float64)
    out.SetGeoTransform(ds.GetGeoTransform())
    out.SetProjection(ds.GetProjection())
    b = out.GetRasterBand(1)
    b.SetNoDataValue(nodata)
    b.WriteArray(np.where(np.isnan(array), nodata, array))
    out.FlushCache()


def ours(dem_path, tmp, op, **opts):
    """Run bench_core on the DEM; returns (array, seconds)."""
    info = json.loads(subprocess.run(["gdalinfo", "-json", dem_path], capture_output=True, text=True).stdout)
    w, h = info["size"]
    gt = info["geoTransform"]
    band = info["bands"][0]
    pixtype = {"Int16": "16BSI", "Float32": "32BF", "Float64": "64BF", "UInt16": "16BUI", "Byte": "8BUI",
               "Int32": "32BSI"}[band["type"]]
    wkt = info.get("coordinateSystem", {}).get("wkt", "")
    geo = (["geographic=1", "lat_top=%r" % (gt[3] + 0.5 * gt[5]), "lat_step=%r" % gt[5],
            "lon_step=%r" % abs(gt[1])] if wkt.startswith("GEOGCRS") or wkt.startswith("GEOGCS")
           else ["pixel_w=%r" % abs(gt[1]), "pixel_h=%r" % abs(gt[5])])
    raw = os.path.join(tmp, os.path.splitext(os.path.basename(dem_path))[0] + ".bil")
    if not os.path.exists(raw):
        subprocess.run(["gdal_translate", "-q", "-of", "ENVI", dem_path, raw], check=True)
    out = os.path.join(tmp, "out.raw")
    nodata = band.get("noDataValue")
    cmd = [os.path.join(REPO, "build", "bench_core"), raw, str(w), str(h), pixtype,
           "none" if nodata is None else repr(nodata), "op=" + op, "backends=cpu", "reps=1",
           "save=" + out] + geo + ["%s=%s" % kv for kv in opts.items()]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    seconds = float(p.stdout.split("cpu_ms=")[1].split()[0]) / 1e3
    a = np.fromfile(out, dtype=np.float64).reshape(h, w)
    if op == "fill":
        a[a == -9999] = np.nan
    return a, seconds


def agreement(a, b):
    """Share of cells valid in both that are equal, and the largest difference."""
    m = ~np.isnan(a) & ~np.isnan(b)
    d = np.abs(a[m] - b[m])
    return 100.0 * np.mean(d == 0), float(d.max()) if d.size else 0.0


def relative(a, b, floor=1.0):
    m = ~np.isnan(a) & ~np.isnan(b)
    r = np.abs(a[m] - b[m]) / np.maximum(np.abs(b[m]), floor)
    return 100.0 * np.mean(r == 0), 100.0 * np.mean(r <= 0.01), float(np.median(r)), float(np.percentile(r, 99))


def grass(dem_path, script, tmp):
    loc = os.path.join(tmp, "grassloc")
    if not os.path.exists(loc):
        subprocess.run(["grass", "-c", dem_path, "-e", loc], capture_output=True, check=True)
    path = os.path.join(tmp, "job.sh")
    with open(path, "w") as f:
        f.write("set -e\n" + script)
    return timed(["grass", os.path.join(loc, "PERMANENT"), "--exec", "bash", path])


EPSILON = 1e-3  # metres between a filled cell and its outlet-ward neighbour


def saga_accumulation(dem_tif, out, method, *extra):
    """SAGA's top-down flow accumulation, in cells (FLOW_UNIT 0) like terra_gpu's."""
    return timed(["saga_cmd", "ta_hydrology", "0", "-ELEVATION", dem_tif, "-FLOW", out, "-METHOD", method,
                  "-FLOW_UNIT", "0"] + list(extra))


def main():
    fill_rows, acc_rows, time_rows = [], [], []
    for dem_path in sys.argv[1:]:
        name = os.path.splitext(os.path.basename(dem_path))[0]
        print("%s ..." % name, file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            z = read(dem_path)
            filled, t_fill = ours(dem_path, tmp, "fill", method="priority-flood")
            filled_tif = os.path.join(tmp, "filled.tif")
            write_like(dem_path, filled, filled_tif)

            # fills (a peer that fails, as SAGA's Planchon/Darboux does on large
            # grids, is reported as such)
            pd = os.path.join(tmp, "pd.sdat")
            wl = os.path.join(tmp, "wl.sdat")
            xxl = os.path.join(tmp, "xxl.sdat")
            t_pd = try_timed(["saga_cmd", "ta_preprocessor", "3", "-DEM", dem_path, "-RESULT", pd, "-MINSLOPE", "0"])
            t_wl = try_timed(["saga_cmd", "ta_preprocessor", "4", "-ELEV", dem_path, "-FILLED", wl, "-MINSLOPE", "0"])
            t_xxl = try_timed(["saga_cmd", "ta_preprocessor", "5", "-ELEV", dem_path, "-FILLED", xxl,
                               "-MINSLOPE", "0"])
            t_rfd = grass(dem_path, "r.in.gdal -o input=%s output=dem --quiet --overwrite\n"
                          "g.region raster=dem\n"
                          "r.fill.dir input=dem output=rfd direction=rfd_dir --quiet --overwrite\n"
                          "r.out.gdal input=rfd output=%s/rfd.tif type=Float64 --quiet --overwrite\n"
                          % (dem_path, tmp), tmp)
            raised = np.nansum(filled > z)
            for peer, path, t in [("SAGA Planchon/Darboux", pd, t_pd), ("SAGA Wang & Liu", wl, t_wl),
                                  ("SAGA Wang & Liu XXL", xxl, t_xxl),
                                  ("GRASS r.fill.dir", os.path.join(tmp, "rfd.tif"), t_rfd)]:
                if t is None:
                    fill_rows.append("| %s | %s | %d | failed | – |" % (name, peer, raised))
                    continue
                same, worst = agreement(filled, read(path))
                fill_rows.append("| %s | %s | %d | %.3f | %.3g |" % (name, peer, raised, same, worst))

            # accumulation on our filled DEM
            d8, t_d8 = ours(dem_path, tmp, "accumulation", routing="d8", method="indegree")
            fd8, _ = ours(dem_path, tmp, "accumulation", routing="fd8", method="indegree")
            md, t_md = ours(dem_path, tmp, "accumulation", routing="mfd-md", method="indegree")
            sd8 = os.path.join(tmp, "sd8.sdat")
            smfd = os.path.join(tmp, "smfd.sdat")
            smd = os.path.join(tmp, "smd.sdat")
            t_sd8 = saga_accumulation(filled_tif, sd8, "0")
            # contour-length weighting on, as Quinn (1991) and Qin (2007) define
            # the shares (SAGA leaves it off by default)
            saga_accumulation(filled_tif, smfd, "4", "-CONVERGENCE", "1.1", "-MFD_CONTOUR", "1")
            t_smd = saga_accumulation(filled_tif, smd, "6", "-MFD_CONTOUR", "1")
            t_rw = grass(filled_tif, "r.in.gdal -o input=%s output=f --quiet --overwrite\n"
                         "g.region raster=f\n"
                         "r.watershed -s elevation=f accumulation=acc --quiet --overwrite\n"
                         "r.out.gdal input=acc output=%s/rw.tif type=Float64 --quiet --overwrite\n"
                         % (filled_tif, tmp), tmp)
            rw = np.abs(read(os.path.join(tmp, "rw.tif")))
            for label, a, peer, path in [("D8", d8, "SAGA D8", sd8), ("D8", d8, "GRASS r.watershed -s", None),
                                         ("FD8 (p 1.1)", fd8, "SAGA MFD (convergence 1.1, contour lengths)", smfd),
                                         ("MFD-md", md, "SAGA MMDGFD (MFD-md, contour lengths)", smd)]:
                b = rw if path is None else read(path)
                eq, within, med, p99 = relative(a, b)
                acc_rows.append("| %s | %s | %s | %.2f | %.2f | %.2g | %.2g |" % (name, label, peer, eq, within, med, p99))

            # the same on a strictly drainable surface (epsilon fill): no flats,
            # so D8 differences can only come from ties and edge rules
            eps_tif = os.path.join(tmp, "drainable.tif")
            eps, _ = ours(dem_path, tmp, "fill", method="priority-flood", eps=EPSILON)
            write_like(dem_path, eps, eps_tif)
            d8e, _ = ours(eps_tif, tmp, "accumulation", routing="d8", method="indegree", fill=0)
            saga_accumulation(eps_tif, sd8, "0")
            grass(eps_tif, "r.in.gdal -o input=%s output=e --quiet --overwrite\n"
                  "g.region raster=e\n"
                  "r.watershed -s elevation=e accumulation=acc --quiet --overwrite\n"
                  "r.out.gdal input=acc output=%s/rw.tif type=Float64 --quiet --overwrite\n"
                  % (eps_tif, tmp), tmp)
            for peer, b in [("SAGA D8", read(sd8)), ("GRASS r.watershed -s", np.abs(read(os.path.join(tmp, "rw.tif"))))]:
                eq, within, med, p99 = relative(d8e, b)
                acc_rows.append("| %s | D8, drainable surface (epsilon %g) | %s | %.2f | %.2f | %.2g | %.2g |"
                                % (name, EPSILON, peer, eq, within, med, p99))
            time_rows.append("| %s | %.2f | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                name, t_fill, fmt_s(t_pd), fmt_s(t_wl), fmt_s(t_xxl), t_rfd, t_d8, t_sd8, t_rw, t_md))

    print("Fill: share of valid cells where terra_gpu's filled DEM equals the peer's (%), largest difference (m):")
    print("")
    print("| DEM | peer | cells terra_gpu raises | equal % | max abs diff |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(fill_rows))
    print("")
    print("Accumulation on terra_gpu's filled DEM (cells, each counting itself; relative difference to the peer):")
    print("")
    print("| DEM | terra_gpu | peer | equal % | within 1 % | median rel. diff | 99th pct rel. diff |")
    print("|---|---|---|---:|---:|---:|---:|")
    print("\n".join(acc_rows))
    print("")
    print("Seconds on this machine (terra_gpu: the core on the CPU, fill and accumulation from the raw DEM; peers: "
          "whole commands, reading and writing files):")
    print("")
    print("| DEM | terra_gpu fill | SAGA P/D | SAGA W&L | SAGA W&L XXL | r.fill.dir | terra_gpu D8 acc | SAGA D8 | "
          "r.watershed -s | terra_gpu MFD-md acc |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(time_rows))


if __name__ == "__main__":
    main()
