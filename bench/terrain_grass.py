#!/usr/bin/env python3
"""The curvatures and geomorphons against GRASS: r.param.scale and r.geomorphon.

For each DEM, both tools see the same grid: a copy with planar square cells
of the DEM's spacing in metres (a geographic DEM's degrees times 111,120 m,
as tg_* with scale => 111120 and ST_Slope take them), so that the figures
compare definitions, not geodesy.  GRASS runs in a throwaway XY location
(grass --tmp-location XY --exec).

Curvatures: r.param.scale size=3 fits the same least-squares quadratic as
Evans-Young (Wood 1996); each of its measures is compared with the tg_curvature
type of the same definition through the relation the definitions give
(identity, sign, the metric factor (1 + g^2)^k, r^2 + 2s^2 + t^2 = minic^2 +
maxic^2), on every cell both compute: GRASS leaves the raster's edge ring and
cells with a nodata neighbour NULL; tg_* gives them values (a missing
neighbour takes the centre's).

Geomorphons: r.geomorphon in the three comparison modes (anglev1, anglev2,
anglev2_distance) against tg_geomorphons, per landform.  The search radius
goes to GRASS in metres, (radius + 1/100) cells, so that no cell lies exactly
on the search distance (GRASS keeps cells strictly nearer than it, and whether
the one at exactly radius cells is nearer depends on how its coordinates
round; the run in cells shows the effect).  Each cell where the landforms
differ is traced in Python under GRASS's conventions, added one at a time
to ours, and the first that gives GRASS's landform is its explanation:
 - nodata: a direction whose first cell is nodata is level in GRASS; tg_*
   passes over nodata cells along every line;
 - skip: GRASS skips `skip` cells in every direction; tg_* skips the cells
   within `skip` cell widths (a diagonal step is sqrt 2 wide);
 - last row: GRASS's lines of sight stop one row short of the raster's last
   row (its row buffer at the bottom edge);
 - ties: GRASS decides on the angles' magnitudes: equal magnitudes are level
   in anglev1; in anglev2 "higher" (also when the line of sight only
   descends, e.g. one cell, or cells at one slope, and when it sees only
   nodata), in anglev2_distance the farther one decides, else "higher";
   tg_* compares signed slopes (a line of sight that only descends is
   lower), an equal rise and drop are level, and a line that sees nothing
   is level;
 - rounding: GRASS compares elevation angles atan2(dz, distance) computed
   in floating point from the cells' coordinates, so where a line's rise and
   drop are equally steep and that slope is seen at several distances
   (integer DEMs are full of them) they may round apart either way; tg_*
   compares them exactly;
 - edge: GRASS leaves the raster's outer ring NULL.
It measures and reports; nothing passes or fails.

    bench/terrain_grass.py DEM.tif [DEM.tif ...] [--radius 3] [--skip 0] [--flat 1] [--db NAME]
"""

import argparse
import collections
import datetime
import math
import os
import subprocess
import sys
import tempfile
from array import array
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "regress", "checks"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, load_dem, psql, psql_script, raw_pixels, run,  # noqa: E402
                      sql_raster_band)
from check_terrain import form  # noqa: E402

LANDFORMS = ["flat", "peak", "ridge", "shoulder", "spur", "slope", "hollow", "footslope", "valley", "pit"]
MODES = ["anglev1", "anglev2", "anglev2_distance"]
MEASURES = ["profc", "planc", "longc", "crosc", "minic", "maxic", "slope"]
CURVATURES = ["profile", "plan", "tangential", "mean", "gaussian", "minimal", "maximal", "total"]
# E, SE, S, SW, W, NW, N, NE as (columns, rows) steps
DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))


def planar_copy(dem, path, px, py):
    """The DEM with planar cells of px x py metres (nodata kept)."""
    run(["gdal_translate", "-q", "-a_srs", 'LOCAL_CS["planar metres",UNIT["metre",1]]',
         "-a_ullr", "0", repr(dem.height * py), repr(dem.width * px), "0", dem.path, path])


def grass(planar, tmp, radius, skip, flat, ns_res):
    """r.param.scale's measures and r.geomorphon's forms (every mode; and
    anglev2 with the radius in cells) as Float64 GeoTIFFs in tmp."""
    outs = {m: os.path.join(tmp, "grass_%s.tif" % m) for m in MEASURES}
    outs.update({"forms_" + m: os.path.join(tmp, "grass_forms_%s.tif" % m) for m in MODES})
    outs["forms_cells"] = os.path.join(tmp, "grass_forms_cells.tif")
    lines = ["set -e", "r.in.gdal -o --quiet input=%s output=dem" % planar, "g.region raster=dem"]
    for m in MEASURES:
        lines.append("r.param.scale --quiet input=dem output=%s method=%s size=3" % (m, m))
    common = "elevation=dem flat=%r dist=0" % flat
    for m in MODES:
        lines.append("r.geomorphon --quiet -m %s forms=forms_%s search=%r skip=%r comparison=%s" %
                     (common, m, (radius + 0.01) * ns_res, (skip + 0.25) * ns_res if skip else 0, m))
    lines.append("r.geomorphon --quiet %s forms=forms_cells search=%d skip=%d comparison=anglev2" %
                 (common, radius, skip))
    for name, path in outs.items():
        lines.append("r.out.gdal --quiet -c input=%s output=%s type=Float64 format=GTiff" % (name, path))
    script = os.path.join(tmp, "grass.sh")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run(["grass", "--tmp-location", "XY", "--exec", "bash", script], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise RuntimeError("GRASS failed:\n%s" % p.stderr)
    return {name: raw_pixels(path) for name, path in outs.items()}


def ours(dem, radius, skip, flat, db):
    """tg_curvature (every type) and tg_geomorphons of the raster file."""
    table = "tg_grass_dem_%d" % os.getpid()
    load_dem(dem, table, db)
    out = {t: sql_raster_band("(SELECT tg_curvature(rast, type => '%s', pixeltype => '64BF', backend => 'cpu') "
                              "FROM %s)" % (t, table), "d", db).pixels for t in CURVATURES}
    out["forms"] = sql_raster_band("(SELECT tg_geomorphons(rast, search_radius => %d, skip => %d, "
                                   "flat_threshold => %r, backend => 'cpu') FROM %s)" % (radius, skip, flat, table),
                                   "B", db).pixels
    psql("DROP TABLE %s" % table, db)
    return out


# ------------------------------------------------------------------------
# Curvatures
# ------------------------------------------------------------------------
def relation_rows(g, o, valid):
    """(GRASS measure, tg_* side, relation, the pairs compared)."""
    tan2 = [math.tan(math.radians(s)) ** 2 if s == s else float("nan") for s in g["slope"]]

    def pairs(grass_of, ours_of):
        return [(grass_of(i), ours_of(i)) for i in valid]
    return [
        ("profc", "profile", "identity (kv)", pairs(lambda i: g["profc"][i], lambda i: o["profile"][i])),
        ("planc", "plan", "planc = -kp (Wood signs it the other way)",
         pairs(lambda i: g["planc"][i], lambda i: -o["plan"][i])),
        ("longc", "profile", "longc = kv (1 + g^2)^(3/2) (no metric)",
         pairs(lambda i: g["longc"][i], lambda i: o["profile"][i] * (1 + tan2[i]) ** 1.5)),
        ("crosc", "tangential", "crosc = kh (1 + g^2)^(1/2) (no metric)",
         pairs(lambda i: g["crosc"][i], lambda i: o["tangential"][i] * math.sqrt(1 + tan2[i]))),
        ("minic² + maxic²", "total", "r^2 + 2 s^2 + t^2: the Hessian's eigenvalues squared",
         pairs(lambda i: g["minic"][i] ** 2 + g["maxic"][i] ** 2, lambda i: o["total"][i])),
        ("minic", "minimal", "equal only where g = 0 (Wood's: the Hessian's eigenvalues, no metric)",
         pairs(lambda i: g["minic"][i], lambda i: o["minimal"][i])),
        ("maxic", "maximal", "as minic", pairs(lambda i: g["maxic"][i], lambda i: o["maximal"][i])),
    ]


def compare_curvatures(g, o, valid_dem):
    """Each relation on the cells both compute; the cells of a zero gradient
    apart: tg_* finds it exactly zero there (Evans-Young's p = q = 0) and
    sets the curvatures along and across it to 0, while GRASS's
    least-squares solve leaves a roundoff gradient (slope ~1e-16 degrees)
    whose direction, and so its profc, planc, longc and crosc, are noise."""
    both = [i for i in valid_dem if g["profc"][i] == g["profc"][i]]
    level = [i for i in both if g["slope"][i] < 1e-9]
    sloped = [i for i in both if g["slope"][i] >= 1e-9]
    print("| GRASS | tg_curvature | relation by definition | cells | max abs diff | RMS of GRASS's | "
          "max diff ÷ RMS | within 1e-4 of RMS |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name, side, relation, pairs in relation_rows(g, o, sloped):
        rms = math.sqrt(sum(a * a for a, _ in pairs) / len(pairs))
        diffs = [abs(a - b) for a, b in pairs]
        within = sum(d <= 1e-4 * rms for d in diffs)
        print("| %s | %s | %s | %d | %.3g | %.3g | %.2g | %.4f %% |" %
              (name, side, relation, len(pairs), max(diffs), rms, max(diffs) / rms, 100.0 * within / len(pairs)))
    print()
    print("Cells of a zero fitted gradient (GRASS's slope < 1e-9°), left out above: %d; there tg_curvature's "
          "profile, plan and tangential are 0 on %d of them." %
          (len(level), sum(o["profile"][i] == 0 and o["plan"][i] == 0 and o["tangential"][i] == 0 for i in level)))


# ------------------------------------------------------------------------
# Geomorphons: lines of sight under either convention
# ------------------------------------------------------------------------
class Rules:
    """Which of GRASS's conventions a trace follows (none: tg_geomorphons')."""

    def __init__(self, nodata=False, skip=False, last_row=False, ties=None, angles=False):
        self.nodata, self.skip, self.last_row = nodata, skip, last_row
        self.ties, self.angles = ties, angles


class Grid:
    """A DEM's values (nodata NaN), its size and each direction's step in metres."""

    def __init__(self, z, W, H, px, py):
        self.z, self.W, self.H = z, W, H
        self.step_len = [math.hypot(ddx * px, ddy * py) for ddx, ddy in DIRECTIONS]


def verdict(rise, drop, threshold, rise_at, drop_at, ties):
    """1 higher, -1 lower, 0 level from the steepest rise and drop (tangents
    of the elevation angles, fractions where exact); ties: None for
    tg_geomorphons' signed rule, else GRASS's mode on the magnitudes."""
    if ties is None:
        if rise > threshold and rise > drop:
            return 1
        if drop > threshold and drop > rise:
            return -1
        return 0
    zenith, nadir = abs(rise), abs(drop)    # GRASS's |zenith angle|, |nadir angle|, as tangents
    if ties == "anglev1":
        if zenith > threshold or nadir > threshold:
            return 1 if nadir < zenith else -1 if nadir > zenith else 0
        return 0
    over_n, over_z = nadir > threshold, zenith > threshold
    if not over_n and not over_z:
        return 0
    if over_z and not over_n:
        return 1
    if over_n and not over_z:
        return -1
    if nadir != zenith:
        return 1 if nadir < zenith else -1
    if ties == "anglev2_distance" and rise_at != drop_at:
        return 1 if drop_at < rise_at else -1
    return 1


def with_nan(dem, z):
    """The DEM's values, nodata as NaN (a float nodata matched in single precision, as stored)."""
    if dem.nodata is None:
        return z
    nodata = array("f", [dem.nodata])[0]
    return array("d", (math.nan if v == nodata or array("f", [v])[0] == nodata else v for v in z))


def trace(grid, x, y, radius, skip, flat, rules):
    """The landforms cell (x, y) may have from its eight lines of sight: the
    steepest rise and drop are slopes per step as exact fractions, the
    nearest kept among equals (as both tools keep them), and one landform
    comes out; with rules.angles, where the rise and the drop are equally
    steep and that slope is seen at more than one distance, GRASS's
    floating-point angles may also round either way, and every outcome is a
    landform it may give."""
    z, W, H = grid.z, grid.W, grid.H
    z0 = z[y * W + x]
    counts = {(0, 0)}     # (lower, higher) so far
    for k, (ddx, ddy) in enumerate(DIRECTIONS):
        cells = math.sqrt(2) if ddx and ddy else 1.0
        first = skip + 1 if rules.skip else int(math.floor(skip / cells)) + 1
        if rules.nodata:
            nx, ny = x + ddx, y + ddy
            if not (0 <= nx < W and 0 <= ny < H) or z[ny * W + nx] != z[ny * W + nx]:
                continue
        rows = H - 1 if rules.last_row else H
        seen = []     # (slope, n)
        n = first
        while n * cells <= radius + 1e-9:
            xx, yy = x + n * ddx, y + n * ddy
            if not (0 <= xx < W and 0 <= yy < rows):
                break
            v = z[yy * W + xx]
            if v == v:
                seen.append((Fraction(v - z0) / n, n))
            n += 1
        if not seen:
            # GRASS: a line of sight that starts inside the raster but sees only nodata keeps its
            # initial angles, +90 and -90 degrees: a tie of magnitudes (anglev2_distance then
            # compares distances it never set)
            if rules.ties and 0 <= x + first * ddx < W and 0 <= y + first * ddy < rows:
                verdicts = {"anglev1": {0}, "anglev2": {1}}.get(rules.ties, {1, -1})
                counts = {(lo + (v < 0), hi + (v > 0)) for lo, hi in counts for v in verdicts}
            continue
        rise, rise_at = max(seen, key=lambda s: (s[0], -s[1]))
        drop, drop_at = min(seen, key=lambda s: (s[0], s[1]))
        threshold = Fraction(math.tan(math.radians(flat)) * grid.step_len[k])
        verdicts = {verdict(rise, -drop, threshold, rise_at, drop_at, rules.ties)}
        if (rules.angles and abs(rise) == abs(drop) and abs(rise) > threshold and
                len({n for slope, n in seen if slope in (rise, drop)}) > 1):
            verdicts |= {1, -1}
        counts = {(lo + (v < 0), hi + (v > 0)) for lo, hi in counts for v in verdicts}
    return {form(lo, hi) for lo, hi in counts}


def explain(grid, x, y, radius, skip, flat, mode, target):
    """The first of GRASS's conventions, added one at a time, that gives its landform."""
    if x == 0 or y == 0 or x == grid.W - 1 or y == grid.H - 1:
        return "edge"
    steps = [("nodata", Rules(nodata=True)), ("skip", Rules(nodata=True, skip=True)),
             ("last row", Rules(nodata=True, skip=True, last_row=True)),
             ("ties", Rules(nodata=True, skip=True, last_row=True, ties=mode)),
             ("rounding", Rules(nodata=True, skip=True, last_row=True, ties=mode, angles=True))]
    for name, rules in steps:
        if target in trace(grid, x, y, radius, skip, flat, rules):
            return name
    return "unexplained"


def compare_geomorphons(dem, z, g, o, px, py, args):
    W, H = dem.width, dem.height
    grid = Grid(z, W, H, px, py)
    valid = [i for i in range(W * H) if z[i] == z[i]]
    print("| mode | cells (GRASS not NULL) | same landform | differing | explained by: nodata | skip | "
          "last row | ties | rounding | edge | unexplained |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_form = None
    for mode in MODES + ["cells"]:
        gf = g["forms_" + mode]
        cells = [i for i in valid if gf[i] == gf[i]]
        same = [i for i in cells if o["forms"][i] == int(gf[i])]
        differing = [i for i in cells if o["forms"][i] != int(gf[i])]
        causes = collections.Counter()
        if mode != "cells":
            for i in differing:
                y, x = divmod(i, W)
                causes[explain(grid, x, y, args.radius, args.skip, args.flat, mode, int(gf[i]))] += 1
            # GRASS's outer ring is NULL: cells tg_* gives a landform GRASS has none for
            causes["edge"] += len(valid) - len(cells)
        label = mode if mode != "cells" else "anglev2, radius in cells (ties on the search distance)"
        print("| %s | %d | %d (%.2f %%) | %d | %s |" %
              (label, len(cells), len(same), 100.0 * len(same) / len(cells), len(differing),
               " | ".join(str(causes[c]) if mode != "cells" else "—" for c in
                          ("nodata", "skip", "last row", "ties", "rounding", "edge",
                                                         "unexplained"))))
        if mode == "anglev2":
            per_form = (gf, cells)
    gf, cells = per_form
    print()
    print("Per landform (GRASS anglev2 against tg_geomorphons):")
    print()
    print("| landform | GRASS cells | tg_geomorphons cells | same | same ÷ GRASS's |")
    print("|---|---:|---:|---:|---:|")
    theirs = collections.Counter(int(gf[i]) for i in cells)
    mine = collections.Counter(o["forms"][i] for i in cells)
    same = collections.Counter(o["forms"][i] for i in cells if o["forms"][i] == int(gf[i]))
    for k, name in enumerate(LANDFORMS, 1):
        print("| %s | %d | %d | %d | %.2f %% |" %
              (name, theirs[k], mine[k], same[k], 100.0 * same[k] / theirs[k] if theirs[k] else 100.0))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dems", nargs="+")
    ap.add_argument("--radius", type=int, default=3, help="geomorphons' search radius in cells (3)")
    ap.add_argument("--skip", type=int, default=0, help="geomorphons' skip in cells (0)")
    ap.add_argument("--flat", type=float, default=1.0, help="flat threshold in degrees (1)")
    ap.add_argument("--db")
    args = ap.parse_args()
    os.environ["PGOPTIONS"] = os.environ.get("PGOPTIONS", "") + " -c client_min_messages=warning"
    p = subprocess.run(["grass", "--version"], capture_output=True, text=True)
    version = (p.stdout + p.stderr).splitlines()[0]
    psql_script(RASTER_BYTES_FUNCTION, args.db)
    for path in args.dems:
        dem = Dem(path)
        with tempfile.TemporaryDirectory() as tmp:
            planar = os.path.join(tmp, "planar.tif")
            px, py = dem.pixel_width * dem.scale, dem.pixel_height * dem.scale
            planar_copy(dem, planar, px, py)
            print("### %s (%d × %d), %s, %s" % (dem.name, dem.width, dem.height, version,
                                                 datetime.date.today().isoformat()))
            print()
            print("Cells of %.6g × %.6g m; geomorphons: radius %d, skip %d, flat %g°." %
                  (px, py, args.radius, args.skip, args.flat))
            print()
            g = grass(planar, tmp, args.radius, args.skip, args.flat, py)
            o = ours(Dem(planar), args.radius, args.skip, args.flat, args.db)
            if px != py:
                # r.param.scale takes one spacing for both axes: the north-south one (the mean of
                # the two beyond 1 % apart); tg_curvature's curvatures on cells of that spacing
                side = py if max(px / py, py / px) < 1.01 else (px + py) / 2
                square = os.path.join(tmp, "square.tif")
                planar_copy(dem, square, side, side)
                o.update({t: v for t, v in ours(Dem(square), args.radius, args.skip, args.flat,
                                                args.db).items() if t in CURVATURES})
                print("r.param.scale takes one spacing for both axes, %.6g m: the curvatures below are "
                      "tg_curvature's on cells of %.6g × %.6g m." % (side, side, side))
                print()
            z = with_nan(dem, raw_pixels(planar))
            valid = [i for i in range(dem.cells) if z[i] == z[i]]
            compare_curvatures(g, o, valid)
            print()
            compare_geomorphons(dem, z, g, o, px, py, args)
            print()


if __name__ == "__main__":
    main()
