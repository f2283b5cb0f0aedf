#!/usr/bin/env python3
"""Stream order, HAND and flow length of terra_gpu against pyflwdir (Eilander
et al. 2021) on real DEMs: agreement and time.

Both walk the same network: pyflwdir is given terra_gpu's D8 codes (and the
filled DEM for HAND), so differences come from the algorithms, not from the
routing.  Times: terra_gpu as SQL wall time of a call on the DEM stored as one
raster (CPU backend, every core), with the core's phases from tg_last_run;
pyflwdir as the Python wall time of each method after a warm-up call (numba's
compilation excluded), on the network it built from the codes.  The
end-to-end rows time DEM -> streams: tg_stream_order against
pyflwdir.from_dem (its own fill and D8) + stream_order.

    bench/drainage_peers.py [DEM.tif ...] [--threshold CELLS] [--db DB]
Needs numpy and pyflwdir (pip install pyflwdir); psql from the PG* variables.
"""

import argparse
import os
import sys
import time

import numpy as np
import pyflwdir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, load_dem, machine_description, psql,  # noqa: E402
                      psql_script, raw_pixels, sql_raster_band)

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "dem")
DEFAULT = ["small_bigtujunga_srtm30_utm11", "medium_alps_n46e008_srtm3", "medium_srilanka_srtm3_3x3"]


def timed_sql(sql, db):
    """SQL wall time of a statement, and the core's phases (asked in the same session)."""
    t0 = time.perf_counter()
    phases = psql("%s; SELECT phases FROM tg_last_run()" % sql, db).splitlines()[-1]
    return time.perf_counter() - t0, phases


def timed(fn, *a, **kw):
    fn(*a, **kw)                    # numba compiles on the first call
    t0 = time.perf_counter()
    out = fn(*a, **kw)
    return out, time.perf_counter() - t0


def band(expr, typecode, shape, db):
    return np.frombuffer(sql_raster_band(expr, typecode, db).pixels, dtype=typecode).reshape(shape)


def one(path, threshold, db):
    dem = Dem(path)
    shape = (dem.height, dem.width)
    print("\n%s: %d x %d = %.1f M cells%s, streams from %d cells"
          % (dem.name, dem.width, dem.height, dem.cells / 1e6, " (geographic)" if dem.geographic else "", threshold))
    load_dem(dem, "peer_dem", db)
    psql("SET terra_gpu.backend = 'cpu'", db)
    q = "SELECT count(%s) FROM peer_dem"
    ours = {}
    for name, call in [("stream order", "tg_stream_order(rast, threshold => %d, backend => 'cpu')" % threshold),
                       ("HAND", "tg_hand(rast, threshold => %d, backend => 'cpu')" % threshold),
                       ("flow length", "tg_flow_length(rast, backend => 'cpu')"),
                       ("D8 accumulation", "tg_flow_accumulation(rast, backend => 'cpu')"),
                       ("stream links", None)]:
        if call is None:
            wall, phases = timed_sql("SELECT count(*) FROM peer_dem, tg_stream_links(rast, threshold => %d, "
                                     "backend => 'cpu')" % threshold, db)
        else:
            wall, phases = timed_sql(q % call, db)
        ours[name] = wall
        print("  terra_gpu %-16s %6.2f s  (%s)" % (name, wall, phases))

    codes = band("(SELECT tg_flow_direction(rast, backend => 'cpu') FROM peer_dem)", "B", shape, db)
    acc = band("(SELECT tg_flow_accumulation(rast, backend => 'cpu') FROM peer_dem)", "d", shape, db)
    filled = band("(SELECT ST_MapAlgebra(tg_fill(rast, backend => 'cpu'), 1, '64BF', '[rast]') FROM peer_dem)",
                  "d", shape, db)
    strahler = band("(SELECT tg_stream_order(rast, threshold => %d, backend => 'cpu') FROM peer_dem)" % threshold,
                    "I", shape, db)
    hand = band("(SELECT tg_hand(rast, threshold => %d, backend => 'cpu') FROM peer_dem)" % threshold,
                "f", shape, db)
    length = band("(SELECT tg_flow_length(rast, backend => 'cpu') FROM peer_dem)", "f", shape, db)
    nlinks = int(psql("SELECT count(*) FROM peer_dem, tg_stream_links(rast, threshold => %d, backend => 'cpu')"
                      % threshold, db))

    transform = tuple(float(v) for v in psql(
        "SELECT ST_ScaleX(rast), ST_SkewX(rast), ST_UpperLeftX(rast), ST_SkewY(rast), ST_ScaleY(rast), "
        "ST_UpperLeftY(rast) FROM peer_dem", db).split("|"))
    valid = codes != 255
    pcodes = np.where(valid, codes, 247).astype(np.uint8)
    t0 = time.perf_counter()
    flw = pyflwdir.from_array(pcodes, ftype="d8", transform=transform, latlon=dem.geographic, check_ftype=False)
    t_build = time.perf_counter() - t0
    upa, t_upa = timed(flw.upstream_area, unit="cell")
    stream = valid & (acc >= threshold)
    sto, t_sto = timed(flw.stream_order, type="strahler", mask=stream)
    phand, t_hand = timed(flw.hand, drain=stream, elevtn=np.where(valid, filled, -9999.0))
    dist, t_dist = timed(flw.stream_distance, unit="m")
    segs, t_segs = timed(flw.streams, mask=stream)

    same_acc = np.array_equal(upa[valid], acc[valid])
    on = stream
    sto_same = np.mean(sto[on] == strahler[on]) * 100
    # terra_gpu's nodata (-9999): the path ends before it meets a stream; pyflwdir measures
    # those cells from the end of their path instead
    ours_hand = valid & (hand != -9999)
    both = ours_hand & (phand != -9999)
    hand_diff = np.abs(phand[both] - hand[both])
    hand_ok = np.mean(hand_diff <= 1e-3 * np.maximum(1, np.abs(phand[both]))) * 100
    missing = int(np.sum(valid & ~ours_hand))
    rel = np.abs(dist[valid] - length[valid]) / np.maximum(1.0, dist[valid])
    print("  pyflwdir: network built in %.2f s from the codes; accumulation %s"
          % (t_build, "identical" if same_acc else "DIFFERS"))
    print("  pyflwdir upstream_area %.2f s, stream_order %.2f s, hand %.2f s, stream_distance %.2f s, "
          "streams %.2f s" % (t_upa, t_sto, t_hand, t_dist, t_segs))
    print("  Strahler: %d stream cells, %.3f %% the same order (highest %d, pyflwdir %d)"
          % (on.sum(), sto_same, strahler.max(), sto.max()))
    print("  HAND: %.3f %% of %d cells within 1e-3 (largest difference %.3g m); %d cells (%.1f %%) only "
          "pyflwdir gives (their path meets no stream)"
          % (hand_ok, both.sum(), hand_diff.max() if hand_diff.size else 0, missing, 100.0 * missing / valid.sum()))
    print("  flow length downstream: median relative difference %.2e, 99th percentile %.2e, largest %.2e"
          % (np.median(rel), np.percentile(rel, 99), rel.max()))
    # link heads: stream cells into which no or several stream cells drain
    down = np.zeros(shape, dtype=np.int64)
    ys, xs = np.nonzero(stream & (codes != 0))
    k = np.log2(codes[ys, xs]).astype(int)
    ry, rx = ys + np.array([0, 1, 1, 1, 0, -1, -1, -1])[k], xs + np.array([1, 1, 0, -1, -1, -1, 0, 1])[k]
    inside = (ry >= 0) & (rx >= 0) & (ry < shape[0]) & (rx < shape[1])
    ry, rx = ry[inside], rx[inside]
    np.add.at(down, (ry[stream[ry, rx]], rx[stream[ry, rx]]), 1)
    heads = stream & (down != 1)
    starts = np.array([seg["properties"]["idx"] for seg in segs], dtype=np.int64)
    at_heads = int(np.sum(heads.ravel()[starts]))
    print("  links: terra_gpu %d, pyflwdir streams %d, %d of them starting at terra_gpu's link heads"
          % (nlinks, len(segs), at_heads))

    # basins: of every path end (pyflwdir: its pits, numbered by cell index like terra_gpu's ends),
    # and of 200 gauges spread over the stream cells (nested; pyflwdir: basins of those cells)
    outlet_basins = band("(SELECT tg_basins(rast, backend => 'cpu') FROM peer_dem)", "I", shape, db)
    pbas, t_pbas = timed(flw.basins)
    same_outlets = np.mean(outlet_basins[valid] == pbas[valid]) * 100
    cells = np.flatnonzero(stream.ravel())
    gauges = cells[np.linspace(0, cells.size - 1, 200).astype(int)]
    sx, _, ulx, _, sy, uly = transform
    srid = psql("SELECT ST_SRID(rast) FROM peer_dem", db)
    points = ", ".join("'SRID=%s;POINT(%.12g %.12g)'::geometry" % (srid, ulx + (g % dem.width + 0.5) * sx,
                                                                 uly + (g // dem.width + 0.5) * sy) for g in gauges)
    call = "tg_basins(rast, ARRAY[%s], backend => 'cpu')" % points
    t_gauges, _ = timed_sql("SELECT count(%s) FROM peer_dem" % call, db)
    gauge_basins = band("(SELECT %s FROM peer_dem)" % call, "I", shape, db)
    pg, t_pg = timed(flw.basins, idxs=gauges, ids=np.arange(1, gauges.size + 1, dtype=np.uint32))
    same_gauges = np.mean(gauge_basins[valid] == pg[valid]) * 100
    print("  basins of every outlet: %d basins, %.3f %% of the valid cells labelled alike (pyflwdir %.2f s)"
          % (outlet_basins.max(), same_outlets, t_pbas))
    print("  basins of 200 nested gauges: %.3f %% of the valid cells labelled alike (terra_gpu %.2f s in SQL, "
          "chain included; pyflwdir %.2f s)" % (same_gauges, t_gauges, t_pg))

    # end to end: DEM -> Strahler order
    elev = np.frombuffer(raw_pixels(path, "d"), dtype="d").reshape(shape)
    nod = dem.nodata if dem.nodata is not None else -9999.0

    def chain():
        f = pyflwdir.from_dem(np.where(elev == nod, -9999.0, elev), nodata=-9999.0, transform=transform,
                              latlon=dem.geographic)
        u = f.upstream_area(unit="cell")
        return f.stream_order(type="strahler", mask=u >= threshold)
    _, t_chain = timed(chain)
    print("  end to end DEM -> Strahler: terra_gpu %.2f s, pyflwdir from_dem + stream_order %.2f s"
          % (ours["stream order"], t_chain))
    psql("DROP TABLE peer_dem", db)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dems", nargs="*")
    ap.add_argument("--threshold", type=int, default=1000)
    ap.add_argument("--db")
    args = ap.parse_args()
    dems = args.dems or [os.path.join(SHARED, d + ".tif") for d in DEFAULT]
    print("host: %s; pyflwdir %s; terra_gpu %s" % (machine_description(), pyflwdir.__version__,
                                                    psql("SELECT tg_version()", args.db)))
    psql_script(RASTER_BYTES_FUNCTION, args.db)
    for d in dems:
        one(d, args.threshold, args.db)


if __name__ == "__main__":
    main()
