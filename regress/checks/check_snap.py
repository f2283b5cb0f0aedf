#!/usr/bin/env python3
"""Pour point snapping on the demo DEM (SRTM 3" N46E008, Central Swiss Alps):

  - a point about 460 m off the Rhône below Mörel, snapped within 500 m,
    lands on the river: its watershed is the upper Rhône, hundreds of km²
    (a range is asserted), where the unsnapped point's is a hillside's;
  - the snapped cell holds the highest D8 accumulation of the cells whose
    centres lie within the distance (a reference from tg_flow_accumulation and
    ST_PixelAsCentroids, with geodesic distances: the snapping measures on the
    point's row spacing, so cells within 2 % of the edge are left out of the
    comparison);
  - the value and coverage forms snap to the same point, and snap => d on
    tg_watershed equals tg_watershed at the snapped point;
  - on a GPU machine, the GPU snaps to the CPU's cell.

    regress/checks/check_snap.py [DEM.tif] [--db DB]
Exit status 1 on any mismatch.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from tg_tools import Dem, check, checks_exit_status, load_dem, psql  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
POINT = "'SRID=4326;POINT(8.06 46.36)'::geometry"
DISTANCE = 500.0
KM2 = (300.0, 500.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dem", nargs="?", default=os.path.join(REPO, "tools", "data", "medium_alps_n46e008_srtm3.tif"))
    ap.add_argument("--db")
    args = ap.parse_args()
    db = args.db
    dem = Dem(args.dem)
    load_dem(dem, "snap_whole", db)
    load_dem(dem, "snap_tiles", db, tile=256)
    snapped = psql("SELECT ST_AsText(tg_snap_pour_point(rast, %s, %g, backend => 'cpu')) FROM snap_whole"
                   % (POINT, DISTANCE), db)
    moved = float(psql("SELECT ST_Distance(%s::geography, ST_GeomFromText('%s', 4326)::geography)"
                       % (POINT, snapped), db))
    print("%s snapped within %g m to %s, %.0f m away" % (POINT, DISTANCE, snapped, moved))
    check(moved <= DISTANCE * 1.02, "the snapped cell's centre lies within the distance (%.0f m)" % moved)

    km2 = float(psql("SELECT ST_Area(tg_watershed_polygon(rast, %s, snap => %g)::geography) / 1e6 FROM snap_whole"
                     % (POINT, DISTANCE), db))
    km2_0 = float(psql("SELECT coalesce(ST_Area(tg_watershed_polygon(rast, %s)::geography), 0) / 1e6 FROM snap_whole"
                       % POINT, db))
    print("watershed: %.1f km² snapped, %.3f km² unsnapped" % (km2, km2_0))
    check(KM2[0] <= km2 <= KM2[1], "the snapped watershed is the upper Rhône's, %g to %g km² (%.1f)" % (KM2 + (km2,)))
    check(km2_0 < 1, "the unsnapped point's watershed is a hillside's, under 1 km² (%.3f)" % km2_0)

    # the reference: the highest accumulation among centres safely within the distance,
    # and the snapped cell's accumulation
    best, at_snapped = psql(
        "WITH a AS (SELECT tg_flow_accumulation(rast, routing => 'd8', fill => true, backend => 'cpu') AS r FROM snap_whole), "
        "c AS (SELECT p.val, p.geom FROM a, ST_PixelAsCentroids(a.r) p "
        "      WHERE ST_DWithin(p.geom, %s, 0.02)) "
        "SELECT (SELECT max(val) FROM c WHERE ST_DWithin(geom::geography, %s::geography, %g)), "
        "       (SELECT max(val) FROM c WHERE ST_DWithin(geom, ST_GeomFromText('%s', 4326), 1e-9))"
        % (POINT, POINT, DISTANCE * 0.98, snapped), db).split("|")
    print("accumulation: %s cells at the snapped cell, %s the most within %g m" % (at_snapped, best, DISTANCE * 0.98))
    check(float(at_snapped) >= float(best), "no cell within the distance drains more than the snapped one")

    coverage = psql("SELECT ST_AsText(tg_snap_pour_point(coverage => 'snap_tiles', point => %s, distance => %g))"
                    % (POINT, DISTANCE), db)
    check(coverage == snapped, "the coverage form snaps to the same point (%s)" % coverage)
    same = psql("SELECT ST_DumpValues(tg_watershed(rast, %s, snap => %g)) = "
                "ST_DumpValues(tg_watershed(rast, ST_GeomFromText('%s', 4326))) FROM snap_whole"
                % (POINT, DISTANCE, snapped), db)
    check(same == "t", "tg_watershed with snap equals tg_watershed at the snapped point")

    if psql("SELECT available FROM tg_gpu_info()", db) == "t":
        gpu = psql("SELECT ST_AsText(tg_snap_pour_point(rast, %s, %g, backend => 'gpu')) FROM snap_whole"
                   % (POINT, DISTANCE), db)
        check(gpu == snapped, "the GPU snaps to the CPU's cell (%s)" % gpu)
        same = psql("SELECT ST_DumpValues(tg_watershed(rast, %s, snap => %g, backend => 'gpu')) = "
                    "ST_DumpValues(tg_watershed(rast, %s, snap => %g, backend => 'cpu')) FROM snap_whole"
                    % (POINT, DISTANCE, POINT, DISTANCE), db)
        check(same == "t", "the GPU's snapped watershed equals the CPU's")
    else:
        print("skipped: GPU snapping (no GPU)")

    psql("DROP TABLE snap_whole; DROP TABLE snap_tiles", db)
    return checks_exit_status("snapping")


if __name__ == "__main__":
    sys.exit(main())
