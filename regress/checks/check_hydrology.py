#!/usr/bin/env python3
"""Hydrology invariants on real DEMs, through SQL.

For each DEM (loaded as one raster value), with terra_gpu's functions:
  - the filled DEM is >= the input on every valid cell, nodata stays nodata,
    and both fill methods give the same surface;
  - D8: a cell has no direction (code 0) exactly where it lies on the
    raster's edge or next to nodata and no neighbour is lower on the filled
    surface (edge cells and cells beside nodata with a lower neighbour drain
    inward), and the accumulation summed over those cells equals the number of
    valid cells: every valid cell drains to exactly one of them;
  - every accumulation method gives the same D8 result;
  - multiple-flow routings (fd8, mfd-md) conserve water: what reaches the cells
    that send nothing on equals the number of valid cells (to 1e-6);
  - D-infinity: the flow angle is the one of the facet its shares name, in
    each row's cell geometry (metres per row, WGS84, on geographic DEMs): the
    side's direction turned towards the corner by the corner's share of the
    facet's angle, the corner's direction atan2(dy, dx) where it takes all;
  - the breached DEM (tg_fill, method breach) is <= the input on every valid
    cell, nodata stays nodata, filling it changes nothing, and routed as it
    is (fill => false) every valid cell drains to an outlet as above.
Fails (exit 1) when one does not hold.  Connection: PG* variables; needs a
superuser (results are read through a byteasend-based helper).
"""

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import (RASTER_BYTES_FUNCTION, Dem, dem_checks_arguments, load_dem, psql,  # noqa: E402
                      row_spacing, sql_raster_band)

DX = (1, 1, 0, -1, -1, -1, 0, 1)    # ESRI codes 1, 2, 4 ... 128: E, SE, S, SW, W, NW, N, NE
DY = (0, 1, 1, 1, 0, -1, -1, -1)


def band_values(expr, typecode, db, band=1):
    """Pixels, width and height of band `band` of a raster expression."""
    b = sql_raster_band(expr, typecode, db, band)
    return b.pixels, b.width, b.height


def check_dem(dem, db):
    t = "hydro_dem"
    load_dem(dem, t, db)
    failures = []
    # the nodata value as stored (raster2pgsql rounds a 32BF band's to single
    # precision: GDAL's -3.4e+38 becomes -3.3999999521443642e+38)
    stored = psql("SELECT ST_BandNoDataValue(rast) FROM %s LIMIT 1" % t, db)
    nd = float(stored) if stored else None
    z, W, H = band_values("(SELECT ST_MapAlgebra(rast, '64BF', '[rast]') FROM %s)" % t, "d", db)
    valid = [not (v != v or (nd is not None and v == nd)) for v in z]
    nvalid = sum(valid)

    fill_type = "d" if dem.pixtype in ("64BF", "32BSI", "32BUI") else "f"
    filled, _, _ = band_values("(SELECT tg_fill(rast) FROM %s)" % t, fill_type, db)
    fnd = float(psql("SELECT ST_BandNoDataValue(tg_fill(rast)) FROM %s" % t, db))
    same = psql("SELECT (SELECT ST_DumpValues(tg_fill(rast))) = (SELECT ST_DumpValues(tg_fill(rast, method => "
                "'planchon-darboux'))) FROM %s" % t, db) == "t"
    bad_fill = sum(1 for i in range(W * H)
                   if (valid[i] and (filled[i] == fnd or filled[i] < z[i] - 1e-3)) or (not valid[i] and filled[i] != fnd))
    if bad_fill or not same:
        failures.append("fill: %d cells below the input or with the wrong nodata; methods agree: %s" % (bad_fill, same))

    def on_edge(i):
        """On the raster's edge or next to nodata."""
        x, y = i % W, i // W
        return x == 0 or y == 0 or x == W - 1 or y == H - 1 or any(
            not valid[(y + dy) * W + x + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1))

    def drained(surface, fill):
        """D8 of a surface: cells without a direction inside, and what the outlets receive."""
        codes, _, _ = band_values("(SELECT tg_flow_direction(%s, fill => %s) FROM %s)" % (surface, fill, t), "B", db)
        acc, _, _ = band_values("(SELECT tg_flow_accumulation(%s, fill => %s) FROM %s)" % (surface, fill, t), "d", db)
        at_outlets = 0.0
        inner_sinks = 0
        for i in range(W * H):
            if not valid[i] or codes[i] != 0:
                continue
            inner_sinks += not on_edge(i)
            at_outlets += acc[i]
        return inner_sinks, at_outlets, codes

    inner_sinks, at_outlets, codes = drained("rast", "true")
    if inner_sinks or at_outlets != nvalid:
        failures.append("d8: %d cells without a direction inside; outlets receive %g of %d cells"
                        % (inner_sinks, at_outlets, nvalid))
    # where water leaves: code 0 on the edge (or beside nodata) exactly where no neighbour of the
    # filled surface is lower
    edge_cells = leaving = wrong = 0
    for i in range(W * H):
        if not valid[i] or not on_edge(i):
            continue
        x, y = i % W, i // W
        lower = any(0 <= x + dx < W and 0 <= y + dy < H and valid[(y + dy) * W + x + dx]
                    and filled[(y + dy) * W + x + dx] < filled[i] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
        edge_cells += 1
        leaving += codes[i] == 0
        wrong += (codes[i] == 0) == lower
    if wrong:
        failures.append("outlets: %d edge or nodata-adjacent cells break the rule (code 0 exactly where no "
                        "neighbour is lower)" % wrong)

    breached, _, _ = band_values("(SELECT tg_fill(rast, method => 'breach') FROM %s)" % t, fill_type, db)
    bad_breach = sum(1 for i in range(W * H)
                     if (valid[i] and (breached[i] == fnd or breached[i] > z[i] + 1e-3))
                     or (not valid[i] and breached[i] != fnd))
    unfilled = psql("SELECT (SELECT ST_DumpValues(tg_fill(tg_fill(rast, method => 'breach')))) "
                    "= (SELECT ST_DumpValues(tg_fill(rast, method => 'breach'))) FROM %s" % t, db) == "t"
    b_sinks, b_outlets, _ = drained("tg_fill(rast, method => 'breach')", "false")
    lowered = sum(1 for i in range(W * H) if valid[i] and breached[i] < z[i] - 1e-3)
    raised = sum(1 for i in range(W * H) if valid[i] and filled[i] > z[i] + 1e-3)
    if bad_breach or not unfilled or b_sinks or b_outlets != nvalid:
        failures.append("breach: %d cells above the input or with the wrong nodata; filling it changes nothing: %s; "
                        "%d cells without a direction inside; outlets receive %g of %d cells"
                        % (bad_breach, unfilled, b_sinks, b_outlets, nvalid))
    methods = psql("SELECT string_agg(m, ',') FROM unnest(ARRAY['topological', 'dependency-transfer']) m, %s "
                   "WHERE (SELECT ST_DumpValues(tg_flow_accumulation(rast, method => m))) "
                   "<> (SELECT ST_DumpValues(tg_flow_accumulation(rast))) " % t, db)
    if methods:
        failures.append("d8: methods disagree with indegree: %s" % methods)

    conserved = {}
    for routing in ("fd8", "mfd-md"):
        acc, _, _ = band_values("(SELECT tg_flow_accumulation(rast, routing => '%s') FROM %s)" % (routing, t), "d", db)
        shares = [band_values("(SELECT tg_flow_direction(rast, routing => '%s') FROM %s)" % (routing, t), "f", db, b)[0]
                  for b in range(1, 9)]
        out = sum(acc[i] for i in range(W * H) if valid[i] and all(s[i] <= 0 for s in shares))
        conserved[routing] = out
        if abs(out - nvalid) > 1e-6 * nvalid:
            failures.append("%s: outflow cells receive %.9g of %d cells" % (routing, out, nvalid))
    angles, cornered, worst = dinf_angles(dem, t, db, W, H)
    if worst > 1e-5:
        failures.append("dinf: the angle differs from its shares' facet by up to %.3g rad" % worst)
    psql("DROP TABLE %s" % t, db)
    return (nvalid, at_outlets, conserved, (lowered, raised), (leaving, edge_cells), (angles, cornered, worst),
            failures)


def dinf_angles(dem, t, db, W, H):
    """D-infinity's angle against the one its shares give, in each row's metric cell
    geometry: the side's direction turned towards the corner by the corner's share
    of the facet angle; the corner's direction atan2(dy, dx) where it takes all.
    Returns the cells with a flow angle, those sending all to a corner and the
    largest difference (radians)."""
    angle, _, _ = band_values("(SELECT tg_flow_direction(rast, routing => 'dinf', output => 'angle') FROM %s)"
                              % t, "f", db)
    shares = [band_values("(SELECT tg_flow_direction(rast, routing => 'dinf') FROM %s)" % t, "f", db, b)[0]
              for b in range(1, 9)]
    geo = [float(v) for v in psql("SELECT concat_ws(',', ST_UpperLeftX(rast), ST_ScaleX(rast), 0, "
                                  "ST_UpperLeftY(rast), 0, ST_ScaleY(rast)) FROM %s" % t, db).split(",")]
    cells = cornered = 0
    worst = 0.0
    for y in range(H):
        dx, dy = row_spacing(dem, geo, y)
        direction = [math.atan2(-DY[k] * dy, DX[k] * dx) % (2 * math.pi) for k in range(8)]
        for i in range(y * W, (y + 1) * W):
            if angle[i] < 0:
                continue
            to = [k for k in range(8) if shares[k][i] > 0]
            side = [k for k in to if k % 2 == 0]
            corner = [k for k in to if k % 2 == 1]
            if not side:
                want = direction[corner[0]]
                cornered += 1
            elif not corner:
                want = direction[side[0]]
            else:
                turn = math.remainder(direction[corner[0]] - direction[side[0]], 2 * math.pi)
                want = direction[side[0]] + shares[corner[0]][i] * turn
            cells += 1
            worst = max(worst, abs(math.remainder(angle[i] - want, 2 * math.pi)))
    return cells, cornered, worst


def main():
    args = dem_checks_arguments(__doc__).parse_args()
    psql(RASTER_BYTES_FUNCTION, args.db)
    psql("SET client_min_messages = warning", args.db)
    failed = False
    print("| DEM | valid cells | D8 outlets receive | edge or nodata-adjacent cells: code 0 / all "
          "| fd8 outflow | mfd-md outflow | cells lowered by breaching / raised by filling "
          "| dinf cells: all to a corner / all; angle vs shares' facet (rad) | result |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for path in args.dems:
        dem = Dem(path)
        nvalid, d8, conserved, changed, leaving, dinf, failures = check_dem(dem, args.db)
        failed |= bool(failures)
        print("| %s | %d | %d | %d / %d | %.6f | %.6f | %d / %d | %d / %d; %.2g | %s |"
              % (dem.name, nvalid, d8, leaving[0], leaving[1], conserved["fd8"], conserved["mfd-md"], changed[0],
                 changed[1], dinf[1], dinf[0], dinf[2], "ok" if not failures else "FAIL: " + "; ".join(failures)),
              flush=True)
    print("hydrology invariants: %s" % ("FAILED" if failed else "ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
