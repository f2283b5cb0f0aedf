#!/usr/bin/env python3
"""Digests of every coverage product on real DEMs, to show that a change of
the code leaves every result bit for bit as it was.

    bench/digests_sql.py --save BEFORE.json DEM.tif [DEM.tif ...] [--modes memory,strips,parts]
    bench/digests_sql.py --compare BEFORE.json DEM.tif [DEM.tif ...]

Each DEM is loaded in tiles (256 x 256 from 2,000,000 cells up, else 64 x 64,
32 x 32 under 256 rows, so that small DEMs still make several strips and parts) and every coverage
form runs on it:
  memory  one grid in memory: slope, every fill method, directions of every
          routing and output, accumulation of every routing with every method
          (on large DEMs only `auto`), units, weights, tg_hydrology, LS, RUSLE,
          wetness, travel time, watersheds, isochrones, pour point snapping,
          stream orders and links, basins, sub-basins, flow lengths, HAND,
          viewsheds, and a BMMQ-tree index queried by range and by region;
  strips  the operations that run in strips, under the smallest
          terra_gpu.max_memory_mb they accept (a strip is then one row of tiles;
          tg_last_run()'s method and note are part of the digest, so a run that
          stopped using strips shows), or --compare: under the budget the
          saved run used;
  parts   tg_create_partitioned_result over 3 throwaway workers
          (tools/cluster.sh; TG_CLUSTER_PORT picks its ports).
A product's digest is the md5 of its rows' md5s in order (rows as text: a
raster as its hex WKB); an error is kept as its SQLSTATE and message, so an
operation that is refused stays refused.  --compare prints every product whose
digest differs and exits 1 if any does.  The connection comes from the PG*
variables (tools/localpg.sh env).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tg_tools import Dem, load_dem_table  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CLUSTER = os.path.join(REPO, "tools", "cluster.sh")

ROUTINGS = ["d8", "fd8", "mfd-md", "fdd8", "dinf", "anisotropic"]
METHODS = ["auto", "flow-transfer", "dependency-transfer", "indegree", "topological"]
LARGE = 2000000


def memory_products(large):
    """name -> the SELECT list of a query over the coverage {t} (outlet {o}, observer {v}, scale {s})."""
    p = {"slope": "tg_slope(coverage => '{t}', scale => {s})",
         "slope_percent": "tg_slope(coverage => '{t}', units => 'PERCENT', scale => {s}, nodata => -1)",
         "fill": "tg_fill(coverage => '{t}')",
         "fill_pd": "tg_fill(coverage => '{t}', method => 'planchon-darboux')",
         "fill_eps": "tg_fill(coverage => '{t}', epsilon => 0.01)",
         "fill_breach": "tg_fill(coverage => '{t}', method => 'breach')",
         "dir_d8_mask": "tg_flow_direction(coverage => '{t}', output => 'mask')",
         "dir_d8_raw": "tg_flow_direction(coverage => '{t}', fill => false)",
         "dir_dinf_angle": "tg_flow_direction(coverage => '{t}', routing => 'dinf', output => 'angle')"}
    for r in ROUTINGS:
        p["dir_" + r] = "tg_flow_direction(coverage => '{t}', routing => '%s')" % r
        for m in METHODS[:1] if large else METHODS:
            if not (r == "fdd8" and m == "flow-transfer"):
                p["acc_%s_%s" % (r, m)] = ("tg_flow_accumulation(coverage => '{t}', routing => '%s', method => '%s')"
                                           % (r, m))
    p.update({
        "acc_d8_area": "tg_flow_accumulation(coverage => '{t}', units => 'area')",
        "acc_mfd_sca": "tg_flow_accumulation(coverage => '{t}', routing => 'mfd-md', units => 'sca')",
        "acc_d8_weight": "tg_flow_accumulation(coverage => '{t}', weight => '{t}')",
        "acc_mfd_weight_raw": "tg_flow_accumulation(coverage => '{t}', routing => 'mfd-md', weight => '{t}', "
                              "fill => false, pixeltype => '32BF')",
        "hydrology_d8": "tg_hydrology(coverage => '{t}')",
        "hydrology_mfd": "tg_hydrology(coverage => '{t}', routing => 'mfd-md', units => 'area')",
        "hydrology_dinf": "tg_hydrology(coverage => '{t}', routing => 'dinf')",
        "ls": "tg_ls_factor(coverage => '{t}')",
        "ls_d8_fill": "tg_ls_factor(coverage => '{t}', routing => 'd8', fill => true)",
        "rusle": "tg_rusle(coverage => '{t}', r => 100.0, k => 0.3)",
        "wetness": "tg_wetness_index(coverage => '{t}')",
        "travel_time": "tg_travel_time(coverage => '{t}', n => 0.05, k => 2.0)",
        "travel_time_outlet": "tg_travel_time(coverage => '{t}', outlet => {o}, snap => 2000)",
        "watershed": "tg_watershed(coverage => '{t}', outlet => {o}, snap => 2000)",
        "watershed_polygon": "tg_watershed_polygon(coverage => '{t}', outlet => {o}, snap => 2000)",
        "isochrone_bands": "tg_isochrone_bands(coverage => '{t}', outlet => {o}, \"interval\" => 1800, snap => 2000)",
        "isochrones": "tg_isochrones(coverage => '{t}', outlet => {o}, \"interval\" => 1800, snap => 2000)",
        "snap": "tg_snap_pour_point(coverage => '{t}', point => {o}, distance => 2000)",
        "stream_order": "tg_stream_order(coverage => '{t}', threshold => 200)",
        "stream_order_shreve": "tg_stream_order(coverage => '{t}', threshold => 200, ordering => 'shreve')",
        "stream_links": "tg_stream_links(coverage => '{t}', threshold => 200)",
        "basins": "tg_basins(coverage => '{t}')",
        "basins_points": "tg_basins(coverage => '{t}', pour_points => ARRAY[{o}], snap => 2000)",
        "subbasins": "tg_subbasins(coverage => '{t}', threshold => 200)",
        "flow_length_down": "tg_flow_length(coverage => '{t}')",
        "flow_length_up": "tg_flow_length(coverage => '{t}', direction => 'upstream')",
        "hand": "tg_hand(coverage => '{t}', threshold => 200)",
        "viewshed": "tg_viewshed(coverage => '{t}', observer => {v}, observer_height => 20)",
        "viewshed_angle": "tg_viewshed(coverage => '{t}', observer => {v}, output => 'angle', max_distance => 30000)",
        "viewshed_count": "tg_viewshed_count(coverage => '{t}', observers => ARRAY[{v}, {o}])",
    })
    return p


STRIPS = ["slope", "fill", "fill_pd", "dir_d8_raw", "acc_d8_area", "acc_d8_weight", "hydrology_d8",
          "hydrology_mfd"] + ["dir_" + r for r in ROUTINGS]


def strips_products():
    """The operations that run in strips: those of memory_products named in
    STRIPS, and the accumulation of every routing with its default method."""
    memory = memory_products(large=True)
    p = {name: memory[name] for name in STRIPS}
    for r in ROUTINGS:
        p["acc_" + r] = "tg_flow_accumulation(coverage => '{t}', routing => '%s')" % r
    return p


PARTS = {"fill": ("tg_fill", "{}"),
         "slope": ("tg_slope", '{"units": "PERCENT"}'),
         "dir_d8": ("tg_flow_direction", "{}"),
         "acc_d8": ("tg_flow_accumulation", "{}"),
         "acc_d8_raw": ("tg_flow_accumulation", '{"fill": false}'),
         "acc_fd8": ("tg_flow_accumulation", '{"routing": "fd8"}'),
         "acc_mfd": ("tg_flow_accumulation", '{"routing": "mfd-md"}'),
         "acc_dinf": ("tg_flow_accumulation", '{"routing": "dinf"}'),
         "acc_anisotropic": ("tg_flow_accumulation", '{"routing": "anisotropic"}'),
         "hydrology_d8": ("tg_hydrology", "{}"),
         "hydrology_mfd": ("tg_hydrology", '{"routing": "mfd-md"}')}


def psql(sql, port=None, env=None):
    """Run sql in a fresh session; (stdout, None) or (None, the error's SQLSTATE and message)."""
    cmd = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"]
    if port:
        cmd += ["-h", (env or os.environ).get("TG_PGSOCKET", "/tmp"), "-p", str(port),
                "-d", (env or os.environ).get("TG_DATABASE", "terra_gpu")]
    p = subprocess.run(cmd, input=sql, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        err = [line for line in p.stderr.splitlines() if line.startswith("ERROR")]
        if not err:
            raise RuntimeError(p.stderr)
        return None, err[0][:200]
    return p.stdout.strip(), None


def digest_query(select):
    return ("SELECT count(*) || ' ' || coalesce(md5(string_agg(h, ',' ORDER BY n)), '-') FROM "
            "(SELECT row_number() OVER () AS n, md5(r::text) AS h FROM %s AS r) d;" % select)


def in_strips(query, budget=None):
    """The query under `budget` MB or, where none is given, under the smallest
    terra_gpu.max_memory_mb its strips accept: first 1 MB, then what each
    refusal says a row of tiles, three rows, or the flats that cross strips
    need (a refusal for the grid as one piece stands: the operation does not
    run in strips).  Returns the rows, the error and the budget."""
    if budget:
        return psql("SET terra_gpu.max_memory_mb = %d;\n" % budget + query) + (budget,)
    budget = 1
    for _ in range(6):
        rows, err = psql("SET terra_gpu.max_memory_mb = %d;\n" % budget + query)
        need = re.search(r"(?:rows of tiles, .* need|resolving them needs) (\d+) MB", err or "")
        if need and int(need.group(1)) + 1 > budget:
            budget = int(need.group(1)) + 1     # the refusal's MB are rounded down
        elif err and "not even 3 rows" in err:
            budget *= 8
        else:
            break
    return rows, err, budget


def run_products(products, fmt, log, strips=False, budgets=None):
    """Each product's digest, with the method tg_last_run() names; in strips
    (in_strips) with tg_last_run()'s note too, after the budget it ran under
    (budgets: a product's budget to use, as an earlier run saved it)."""
    out = {}
    for name, expr in sorted(products.items()):
        t0 = time.perf_counter()
        query = ("SET client_min_messages = warning;\n" + digest_query(expr.format(**fmt))
                 + "SELECT coalesce(method, '') || coalesce(' / ' || note, '') FROM tg_last_run();\n")
        if strips:
            rows, err, budget = in_strips(query, (budgets or {}).get(name))
        else:
            rows, err = psql(query)
        if err:
            out[name] = err
        else:
            digest, method = (rows.splitlines() + [""])[:2]
            if not strips:
                method = method.split(" / ")[0]
            out[name] = digest + (" [%s]" % method if method else "")
        if strips:
            out[name] = "%d MB: %s" % (budget, out[name])
        log("  %-28s %6.1f s  %s" % (name, time.perf_counter() - t0, out[name]))
    return out


def bmmq_digests(table, log):
    """A BMMQ-tree index built on the table: the digests of a range query over
    its whole extent and of a region of interest above its 60th percentile."""
    rows, err = psql("SET client_min_messages = warning;\n"
                     "SELECT tg_bmmq_drop('digest_bins', if_exists => true) IS NOT NULL;\n"
                     "SELECT tg_bmmq_build('digest_bins', '%s', nbins => 8) > 0;\n"
                     "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM tg_bmmq_range('digest_bins', "
                     "(SELECT ST_Envelope(ST_Collect(ST_Envelope(rast))) FROM %s)) r;\n"
                     "SELECT md5(string_agg(r::text, ',' ORDER BY r::text)) FROM tg_bmmq_roi('digest_bins', "
                     "(SELECT percentile_disc(0.6) WITHIN GROUP (ORDER BY (ST_SummaryStats(rast)).mean) FROM %s), "
                     "'Infinity', refine => true) r;\n"
                     "SELECT tg_bmmq_drop('digest_bins');\n" % (table, table, table))
    lines = (rows or "").splitlines()
    out = {"bmmq": err or lines[2], "bmmq_roi": err or lines[3]}
    for k, v in out.items():
        log("  %-28s %s" % (k, v))
    return out


def parts_digests(dem, tile, log):
    tmp = tempfile.mkdtemp(prefix="tgdigests-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    port = int(os.environ.get("TG_CLUSTER_PORT", "5460"))
    env = dict(os.environ, TG_CLUSTER_DIR=os.path.join(tmp, "c"), TG_CLUSTER_PORT=str(port))
    out = {}
    try:
        for attempt in range(10):   # the workers' ports may be another cluster's for a while
            up = subprocess.run([CLUSTER, "up", "3"], env=env, capture_output=True, text=True)
            if up.returncode == 0:
                break
            subprocess.run([CLUSTER, "down"], env=env, capture_output=True)
            time.sleep(30)
        else:
            raise RuntimeError("tools/cluster.sh up 3 failed:\n" + up.stderr)
        subprocess.run([CLUSTER, "load", dem.path, "dem", str(tile)], env=env, check=True, capture_output=True)
        for name, (op, opts) in sorted(PARTS.items()):
            t0 = time.perf_counter()
            cols = "filled, direction, accumulation" if op == "tg_hydrology" else "rast"
            rows, err = psql("SET client_min_messages = warning;\n"
                             "SELECT count(*) FROM tg_create_partitioned_result('p', 'dem', '%s', '%s', replace => true);\n"
                             % (op, opts) + digest_query("(SELECT rid, %s FROM p ORDER BY rid)" % cols),
                             port=port, env=env)
            out[name] = err or rows.splitlines()[-1]
            log("  %-28s %6.1f s  %s" % (name, time.perf_counter() - t0, out[name]))
    finally:
        subprocess.run([CLUSTER, "down"], env=env, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dems", nargs="+")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", help="write the digests to this JSON file")
    what.add_argument("--compare", help="compare with the digests in this JSON file")
    ap.add_argument("--modes", default="memory,strips,parts")
    ap.add_argument("--only", help="a regular expression: the products whose names match")
    a = ap.parse_args()
    modes = a.modes.split(",")
    only = re.compile(a.only) if a.only else None

    def log(s):
        print(s, flush=True)

    def pick(products):
        return {k: v for k, v in products.items() if not only or only.search(k)}

    before = {}
    if a.compare:
        with open(a.compare) as f:
            before = json.load(f)
    found = {}
    for path in a.dems:
        dem = Dem(path)
        large = dem.cells >= LARGE
        tile = 256 if large else 64 if dem.height >= 256 else 32
        table = load_dem_table(dem, "digest_", tile=tile)
        centre = psql("SELECT ST_AsEWKT(ST_Centroid(ST_Envelope(ST_Collect(ST_Envelope(rast))))) FROM %s;" % table)[0]
        # the observer: the highest cell's centre
        top = psql("SELECT ST_AsEWKT(c.geom) FROM (SELECT rast FROM %s ORDER BY (ST_SummaryStats(rast)).max DESC "
                   "NULLS LAST, rid LIMIT 1) t, ST_PixelAsCentroids(t.rast) c "
                   "ORDER BY c.val DESC, c.y, c.x LIMIT 1;" % table)[0]
        fmt = {"t": table, "s": dem.scale, "o": "'%s'::geometry" % centre, "v": "'%s'::geometry" % top}
        log("== %s (%d x %d, tiles of %d)" % (dem.name, dem.width, dem.height, tile))
        res = found.setdefault(dem.name, {})
        if "memory" in modes:
            log(" memory")
            res["memory"] = run_products(pick(memory_products(large)), fmt, log)
            if not only or only.search("bmmq"):
                res["memory"].update(bmmq_digests(table, log))
        if "strips" in modes:
            log(" strips")
            saved = before.get(dem.name, {}).get("strips", {})
            budgets = {k: int(v.split(" MB: ")[0]) for k, v in saved.items() if " MB: " in v}
            res["strips"] = run_products(pick(strips_products()), fmt, log, strips=True, budgets=budgets)
        if "parts" in modes:
            log(" parts (3 workers)")
            res["parts"] = parts_digests(dem, tile, log) if not only else {}
        psql("DROP TABLE %s;" % table)

    if a.save:
        with open(a.save, "w") as f:
            json.dump(found, f, indent=1, sort_keys=True)
        log("saved %s" % a.save)
        return 0
    differ = same = 0
    for dem, modes_found in found.items():
        for mode, products in modes_found.items():
            for name, d in products.items():
                b = before.get(dem, {}).get(mode, {}).get(name)
                if b is None:
                    log("  new   %s %s %s" % (dem, mode, name))
                elif b != d:
                    differ += 1
                    log("  DIFF  %s %s %s: %s  was %s" % (dem, mode, name, d, b))
                else:
                    same += 1
    log("%d products identical, %d differ" % (same, differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
