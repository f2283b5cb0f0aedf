#!/usr/bin/python3
"""The QGIS plugin, headless (PyQGIS with Processing, offscreen), against the
server of tools/localpg.sh:

  - the zip that `make qgis-plugin` builds, unpacked as Plugins › Install from
    ZIP unpacks it and started as qgis_process starts a plugin's provider;
  - every function of the extension has an algorithm or a documented reason
    not to (algorithms.WITHOUT_ALGORITHM); every algorithm's parameters are
    its function's arguments, with the same defaults and vocabularies;
  - each algorithm run through processing.run on the demo's Alps DEM (loaded
    into the schema qgis_check) writes the table the same SQL call gives
    (digests of the tiles' WKB, or of the rows);
  - results come into the project styled; progress comes from the server's
    NOTICEs; a cancelled run leaves no table; a bad parameter gives the
    server's SQLSTATE and message; a missing or old extension says what to run;
  - stored connections with an authentication configuration (whose password
    never shows in the log), service files, odd table names.

    make qgis-plugin && /usr/bin/python3 regress/checks/check_qgis.py [ZIP [DEM.tif]]
(ZIP: build/terra_gpu-qgis-VERSION.zip by default.)  Exit status 1 on any failure.
"""
import contextlib
import os
import re
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools"))
from tg_tools import Dem, check, checks_exit_status, load_dem  # noqa: E402

import psycopg2  # noqa: E402
from psycopg2 import sql  # noqa: E402
from qgis.core import (QgsApplication, QgsAuthMethodConfig, QgsDataSourceUri, QgsFeature,  # noqa: E402
                       QgsGeometry, QgsPointXY, QgsProcessingException, QgsProcessingFeedback, QgsProject,
                       QgsProviderRegistry, QgsRasterLayer, QgsVectorLayer)

SCHEMA = "qgis_check"
SECRET = "s3cret-never-logged"
ENV = {key: os.environ.get(key, default) for key, default in
       (("PGHOST", "/tmp"), ("PGPORT", "5499"), ("PGUSER", "postgres"), ("PGDATABASE", "terra_gpu"))}


class Recorder(QgsProcessingFeedback):
    """Everything an algorithm tells the user; cancels itself at the first progress NOTICE when asked."""

    def __init__(self, cancel_on_progress=False):
        super().__init__()
        self.lines = []
        self.progress_texts = []
        self.cancel_on_progress = cancel_on_progress
        self.progressChanged.connect(self._progress)

    def _progress(self, value):
        if self.cancel_on_progress and 0 < value < 100:
            self.cancel()

    def setProgressText(self, text):
        self.progress_texts.append(text)
        super().setProgressText(text)

    def pushInfo(self, text):
        self.lines.append(text)

    def pushCommandInfo(self, text):
        self.lines.append(text)

    def pushWarning(self, text):
        self.lines.append(text)

    def reportError(self, text, fatalError=False):
        self.lines.append(text)

    def text(self):
        return "\n".join(self.lines)


class Server:
    """The reference side: plain psycopg2 on the same database."""

    def __init__(self, dbname=None):
        self.conn = psycopg2.connect(host=ENV["PGHOST"], port=ENV["PGPORT"], user=ENV["PGUSER"],
                                     dbname=dbname or ENV["PGDATABASE"])
        self.conn.autocommit = True

    def rows(self, statement, args=None):
        with self.conn.cursor() as cur:
            cur.execute(statement, args)
            return cur.fetchall() if cur.description else []

    def value(self, statement, args=None):
        rows = self.rows(statement, args)
        return rows[0][0] if rows else None

    def error(self, statement, args=None):
        """(SQLSTATE, message) of a statement that fails."""
        try:
            self.rows(statement, args)
        except psycopg2.Error as e:
            return e.pgcode, e.diag.message_primary
        return None, None


@contextlib.contextmanager
def quiet():
    """Standard error silenced, QGIS's C++ side's included (the authentication manager prints its hashes)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def start_qgis(profile):
    app = QgsApplication([], False, profile)
    app.initQgis()
    sys.path += ["/usr/share/qgis/python/plugins", "/usr/share/qgis/python"]
    from processing.core.Processing import Processing
    Processing.initialize()
    return app


def install_plugin(zip_path, plugins):
    """Unpack the zip as Plugins › Install from ZIP does and start its provider as qgis_process does."""
    import qgis.utils
    from pyplugin_installer.unzip import unzip
    unzip(zip_path, plugins)
    sys.path.insert(0, plugins)
    qgis.utils.plugin_paths = [plugins]
    qgis.utils.updateAvailablePlugins()
    ok = qgis.utils.loadPlugin("terra_gpu") and qgis.utils.startProcessingPlugin("terra_gpu")
    check(ok and QgsApplication.processingRegistry().providerById("terra_gpu") is not None,
          "the zip installs and registers the Processing provider terra_gpu")
    import terra_gpu.algorithms
    return terra_gpu.algorithms


def postgres_uri(table, column, key, schema=SCHEMA, service=None):
    uri = QgsDataSourceUri()
    if service:
        uri.setConnection(service, ENV["PGDATABASE"], "", "")
    else:
        uri.setConnection(ENV["PGHOST"], ENV["PGPORT"], ENV["PGDATABASE"], ENV["PGUSER"], "")
    uri.setDataSource(schema, table, column, "", key)
    return uri.uri(False)


def raster_layer(table, **kw):
    layer = QgsRasterLayer(postgres_uri(table, "rast", "rid", **kw), table, "postgresraster")
    assert layer.isValid(), table
    return layer


def point_layer(points, crs="EPSG:4326"):
    layer = QgsVectorLayer("Point?crs=%s" % crs, "points", "memory")
    features = []
    for x, y in points:
        f = QgsFeature()
        f.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(x, y)))
        features.append(f)
    layer.dataProvider().addFeatures(features)
    return layer


def run(algorithm, parameters, feedback=None):
    import processing
    feedback = feedback or Recorder()
    return processing.run("terra_gpu:" + algorithm, parameters, feedback=feedback), feedback


def fails(algorithm, parameters, feedback=None):
    """The message of a run that fails (None if it succeeds)."""
    try:
        run(algorithm, parameters, feedback)
    except QgsProcessingException as e:
        return str(e)
    return None


# ---------------------------------------------------------------------------
# The algorithm list against the extension
# ---------------------------------------------------------------------------
def split_arguments(text):
    """pg_get_function_arguments' text as [(name, type, default or None)]."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    result = []
    for part in parts:
        if not part or part.startswith("OUT "):
            continue
        m = re.match(r'^("[^"]+"|\w+) (.+?)(?: DEFAULT (.+))?$', part)
        result.append((m.group(1).strip('"'), m.group(2), m.group(3)))
    return result


def signatures(server):
    """{function: [[(argument, type, default expression)], ...]} of the extension's own schema."""
    rows = server.rows(
        "SELECT p.proname, pg_get_function_arguments(p.oid) FROM pg_proc p "
        "JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e' "
        "JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'terra_gpu' "
        "WHERE p.pronamespace = e.extnamespace ORDER BY 1, 2")
    result = {}
    for name, arguments in rows:
        result.setdefault(name, []).append(split_arguments(arguments))
    return result


def valid_words(server, function, argument, first, several=False):
    """The words the server accepts for a vocabulary argument (a text[] of them where several),
    from its error on a bad one."""
    statement = sql.SQL("SELECT * FROM {}({}, {} => {})").format(
        sql.Identifier(function), first, sql.Identifier(argument),
        sql.SQL("ARRAY['no-such-word']" if several else "'no-such-word'"))
    try:
        server.rows(statement)
    except psycopg2.Error as e:
        text = " ".join(filter(None, (e.diag.message_detail, e.diag.message_hint)))
        m = re.search(r"(?:are|Use) ([^.(]+)", text)
        if e.pgcode == "22023" and m:
            return {w for w in re.split(r",\s*|\s+and\s+|\s+or\s+", m.group(1).strip()) if w}
    return None


def check_algorithm_list(server, algorithms):
    print("== the algorithms against the extension's functions")
    functions = signatures(server)
    covered = {a.function for a in algorithms.ALGORITHMS}
    missing = sorted(set(functions) - covered - set(algorithms.WITHOUT_ALGORITHM))
    check(not missing, "every function of the extension has an algorithm or a documented reason not to%s"
          % (" (missing: %s)" % ", ".join(missing) if missing else ""))
    stale = sorted(set(algorithms.WITHOUT_ALGORITHM) - set(functions))
    check(not stale, "WITHOUT_ALGORITHM names only functions that exist%s" % (": %s" % stale if stale else ""))
    both = sorted(covered & set(algorithms.WITHOUT_ALGORITHM))
    check(not both, "no function both has an algorithm and is listed without one%s" % (": %s" % both if both else ""))
    print("   %d functions: %d with %d algorithms, %d without (documented)"
          % (len(functions), len(covered), len(algorithms.ALGORITHMS), len(algorithms.WITHOUT_ALGORITHM)))

    for a in algorithms.ALGORITHMS:
        offered = set(a.arguments) | {c for x in a.arguments.values() for c in x.companions}
        if a.source == algorithms.COVERAGE:
            offered |= {"coverage", "rast_column", "id_column"}
        # the coverage form, or the one form without a coverage whose arguments these are
        forms = [f for f in functions.get(a.function, [])
                 if (("coverage", "regclass") in [(n, t) for n, t, _ in f]) == (a.source == algorithms.COVERAGE)]
        if len(forms) > 1:
            forms = [f for f in forms if {n for n, _, _ in f} == offered]
        if not check(len(forms) == 1, "%s: one form of %s to run" % (a.name, a.function)):
            continue
        sql_args = {name: (typ, default) for name, typ, default in forms[0]}
        difference = "" if set(sql_args) == offered else " (only in SQL: %s; only in the plugin: %s)" % (
            sorted(set(sql_args) - offered), sorted(offered - set(sql_args)))
        check(not difference, "%s: the parameters are the arguments of %s%s" % (a.name, a.function, difference))
        wrong = []
        for name, argument in a.arguments.items():
            if name in sql_args and not same_default(server, argument.default, *sql_args[name], algorithms.REQUIRED):
                wrong.append("%s: %r, SQL %s" % (name, argument.default, sql_args[name][1]))
        check(not wrong, "%s: the defaults are %s's%s" % (
            a.name, a.function, " (%s)" % "; ".join(wrong) if wrong else ""))
    result_args = {name: (typ, default) for name, typ, default in functions["tg_create_result"][0]}
    check(all(same_default(server, arg.default, *result_args[n], algorithms.REQUIRED)
              for n, arg in algorithms.RESULT_ARGUMENTS.items()),
          "the result table's options have tg_create_result's defaults")


def same_default(server, ours, typ, default, required):
    """Whether a parameter's default is the SQL argument's (its expression evaluated as its type)."""
    if default is None:
        return ours is required
    expected = server.value("SELECT (%s)%s" % (default, "" if typ == '"any"' else "::" + typ))
    if ours is None or expected is None or ours is required:
        return ours is expected
    return expected == ours and isinstance(expected, bool) == isinstance(ours, bool)


def required_arguments(server, a, algorithms):
    """SQL for the arguments a call of the algorithm's function cannot do without (any valid value)."""
    point = "'SRID=4326;POINT(8.5 46.5)'::geometry"
    parts = ["coverage => 'qgis_check.dem'"] if a.source == algorithms.COVERAGE else []
    for name, argument in a.arguments.items():
        if argument.default is not algorithms.REQUIRED:
            continue
        if isinstance(argument, algorithms.Point) or (a.result == algorithms.EACH_POINT and name == "point"):
            value = point
        elif isinstance(argument, algorithms.Points):
            value = "ARRAY[%s]" % point
        elif isinstance(argument, algorithms.Text):
            value = "'qgis_check_vocabulary'"
        elif isinstance(argument, algorithms.IndexRanges):
            value = "ARRAY['qgis_check_vocabulary'], lo => ARRAY[0::float8], hi => ARRAY[1::float8]"
        else:
            value = "1"
        parts.append("%s => %s" % (sql.Identifier(name).as_string(server.conn), value))
    return sql.SQL(", ".join(parts))


def check_vocabularies(server, algorithms):
    print("== every word offered is one the server accepts, and every word it accepts is offered")
    for a in algorithms.ALGORITHMS:
        for name, argument in a.arguments.items():
            if isinstance(argument, algorithms.Choice):
                words = valid_words(server, a.function, name, required_arguments(server, a, algorithms),
                                    several=isinstance(argument, algorithms.Choices))
                check(words == set(argument.options), "%s %s: %s" % (
                    a.name, name, ", ".join(argument.options) if words == set(argument.options) else
                    "offered %s, the server takes %s" % (argument.options, words)))
    words = valid_words(server, "tg_create_result", "compression", sql.SQL("'qgis_check.vocabulary', 'SELECT 1'"))
    options = algorithms.RESULT_ARGUMENTS["compression"].options
    check(words == set(options), "the result table's compression: %s" % ", ".join(options))


# ---------------------------------------------------------------------------
# Each algorithm against its SQL call
# ---------------------------------------------------------------------------
def raster_digest(columns=("rast",)):
    return "md5(string_agg(%s, '' ORDER BY rid))" % " || ".join("ST_AsHexWKB(%s)" % c for c in columns)


def table_digest(server, table, digest):
    return server.value(sql.SQL("SELECT {} FROM {}").format(sql.SQL(digest), sql.Identifier(*table.split("."))))


def call_digest(server, call, digest):
    return server.value("SELECT %s FROM %s" % (digest, call))


def check_algorithms(server, dem, outlet, observer):
    print("== each algorithm writes the table its SQL call gives")
    C = "coverage => 'qgis_check.dem'"
    out = "%s.%%s" % SCHEMA
    pt = "'SRID=4326;POINT(%r %r)'::geometry"
    OUT, OBS = pt % outlet, pt % observer
    outlet_layer, observer_layer = point_layer([outlet]), point_layer([observer])
    gauges = [outlet, (outlet[0] - 0.05, outlet[1] + 0.02)]
    gauges_sql = "ARRAY[%s]" % ", ".join(pt % g for g in gauges)
    towers = [observer, (8.3, 46.4), (8.7, 46.8)]
    towers_sql = "ARRAY[%s]" % ", ".join(pt % t for t in towers)
    stream_row = ("md5(string_agg(concat_ws(',', link_id, downstream_id, strahler, shreve, length, upstream_cells, "
                  "upstream_area, encode(ST_AsEWKB(geom), 'hex')), ';' ORDER BY link_id))")
    iso_row = ("md5(string_agg(concat_ws(',', time_from, time_to, encode(ST_AsEWKB(geom), 'hex')), ';' "
               "ORDER BY time_from))")
    weight, kfactor = raster_layer("weight"), raster_layer("kfactor")
    cases = [
        ("slope", {"units": "PERCENT", "scale": 111120}, "tg_slope(%s, units => 'PERCENT', scale => 111120)" % C),
        ("fill", {}, "tg_fill(%s)" % C),
        ("fill", {"method": "breach", "epsilon": 0.01}, "tg_fill(%s, method => 'breach', epsilon => 0.01)" % C),
        ("flow_direction", {"routing": "mfd-md", "output": "mask"},
         "tg_flow_direction(%s, routing => 'mfd-md', output => 'mask')" % C),
        ("flow_accumulation", {"units": "area", "routing": "dinf"},
         "tg_flow_accumulation(%s, units => 'area', routing => 'dinf')" % C),
        ("flow_accumulation", {"weight": weight, "pixeltype": "32BF"},
         "tg_flow_accumulation(%s, weight => 'qgis_check.weight', pixeltype => '32BF')" % C),
        ("hydrology", {"routing": "fd8"}, "tg_hydrology(%s, routing => 'fd8')" % C),
        ("flow_length", {"direction": "upstream"}, "tg_flow_length(%s, direction => 'upstream')" % C),
        ("hand", {"threshold": 500}, "tg_hand(%s, threshold => 500)" % C),
        ("wetness_index", {"routing": "d8"}, "tg_wetness_index(%s, routing => 'd8')" % C),
        ("stream_order", {"ordering": "shreve"}, "tg_stream_order(%s, ordering => 'shreve')" % C),
        ("stream_links", {"threshold": 5e6, "units": "area"},
         "tg_stream_links(%s, threshold => 5e6, units => 'area')" % C, stream_row),
        ("basins", {}, "tg_basins(%s)" % C),
        ("basins", {"pour_points": point_layer(gauges), "snap": 300},
         "tg_basins(%s, pour_points => %s, snap => 300)" % (C, gauges_sql)),
        ("subbasins", {"threshold": 2000}, "tg_subbasins(%s, threshold => 2000)" % C),
        ("watershed", {"outlet": outlet_layer}, "tg_watershed(%s, outlet => %s)" % (C, OUT)),
        ("watershed_polygon", {"outlet": outlet_layer, "snap": 200},
         "(SELECT tg_watershed_polygon(%s, outlet => %s, snap => 200) AS geom) w" % (C, OUT),
         "md5(encode(ST_AsEWKB(geom), 'hex'))"),
        ("snap_pour_point", {"point": point_layer(gauges), "distance": 500},
         "(SELECT o.fid, tg_snap_pour_point(%s, point => o.p, distance => 500) AS geom FROM unnest(%s) "
         "WITH ORDINALITY AS o(p, fid)) s" % (C, gauges_sql),
         "md5(string_agg(fid || ':' || encode(ST_AsEWKB(geom), 'hex'), ';' ORDER BY fid))"),
        ("ls_factor", {"routing": "d8", "fill": True}, "tg_ls_factor(%s, routing => 'd8', fill => true)" % C),
        ("rusle", {"r": 300, "k_raster": kfactor, "c": 0.2},
         "tg_rusle(%s, r => 300, k => 'qgis_check.kfactor'::regclass, c => 0.2)" % C),
        ("travel_time", {"n": 0.05, "k": 2}, "tg_travel_time(%s, n => 0.05, k => 2)" % C),
        ("travel_time", {"outlet": outlet_layer, "n": 0.05, "k": 2},
         "tg_travel_time(%s, outlet => %s, n => 0.05, k => 2)" % (C, OUT)),
        ("isochrone_bands", {"outlet": outlet_layer, "interval": 1800},
         "tg_isochrone_bands(%s, outlet => %s, \"interval\" => 1800)" % (C, OUT)),
        ("isochrones", {"outlet": outlet_layer, "interval": 1800, "n": 0.05, "k": 2},
         "tg_isochrones(%s, outlet => %s, \"interval\" => 1800, n => 0.05, k => 2)" % (C, OUT), iso_row),
        ("viewshed", {"observer": observer_layer, "observer_height": 2, "output": "angle"},
         "tg_viewshed(%s, observer => %s, observer_height => 2, output => 'angle')" % (C, OBS)),
        ("viewshed_count", {"observers": point_layer(towers), "max_distance": 20000},
         "tg_viewshed_count(%s, observers => %s, max_distance => 20000)" % (C, towers_sql)),
    ]
    terrain = ("slope", "aspect", "hillshade")
    cases += [
        ("aspect", {"units": "RADIANS"}, "tg_aspect(%s, units => 'RADIANS')" % C),
        ("hillshade", {"method": "multidirectional", "scale": 111120, "pixeltype": "8BUI"},
         "tg_hillshade(%s, method => 'multidirectional', scale => 111120, pixeltype => '8BUI')" % C),
        ("tpi", {}, "tg_tpi(%s)" % C),
        ("tri", {"algorithm": "riley"}, "tg_tri(%s, algorithm => 'riley')" % C),
        ("roughness", {}, "tg_roughness(%s)" % C),
        ("curvature", {"type": "plan", "scale": 111120}, "tg_curvature(%s, type => 'plan', scale => 111120)" % C),
        ("geomorphons", {"search_radius": 5, "flat_threshold": 2, "scale": 111120},
         "tg_geomorphons(%s, search_radius => 5, flat_threshold => 2, scale => 111120)" % C),
        ("terrain", {"scale": 111120}, "tg_terrain(%s, scale => 111120)" % C, raster_digest(terrain)),
        ("terrain", {"products": ["tpi", "geomorphons"]}, "tg_terrain(%s, products => ARRAY['tpi', 'geomorphons'])" % C,
         raster_digest(("tpi", "geomorphons"))),
    ]
    for case in cases:
        algorithm, parameters, call = case[:3]
        digest = case[3] if len(case) > 3 else raster_digest(("filled", "direction", "accumulation")
                                                             if algorithm == "hydrology" else ("rast",))
        name = out % ("t_" + algorithm)
        try:
            results, _ = run(algorithm, dict(parameters, INPUT=dem, OUTPUT_TABLE=name, replace=True))
        except QgsProcessingException as e:
            check(False, "%s %s: %s" % (algorithm, parameters, e))
            continue
        ours = table_digest(server, results["OUTPUT_TABLE"], digest)
        theirs = call_digest(server, call, digest)
        check(ours is not None and ours == theirs, "%s: %s" % (algorithm, call))


def check_bmmq(server):
    print("== BMMQ-tree indexes built, queried, refreshed and dropped through Processing")
    corner = raster_layer("corner")
    for name in ("qgis_elevation", "qgis_elevation_sql", "qgis_quantiles"):
        server.value("SELECT tg_bmmq_drop(%s, if_exists => true)", (name,))
    nodes = ("SELECT md5(string_agg(concat_ws(',', n.tile_id, n.level, n.morton, n.min_bin, n.max_bin), ';' "
             "ORDER BY n.tile_id, n.level, n.morton)) || (SELECT bounds::text FROM terra_gpu.bmmq_index "
             "WHERE name = %s) FROM terra_gpu.bmmq_node n WHERE n.index_id = (SELECT id FROM terra_gpu.bmmq_index "
             "WHERE name = %s)")
    results, _ = run("bmmq_build", {"INPUT": corner, "name": "qgis_elevation", "bins": "1000, 1500, 2000, 2500, 3000"})
    built = server.value("SELECT id FROM terra_gpu.bmmq_index WHERE name = 'qgis_elevation'")
    check(results["OUTPUT"] == str(built), "bmmq_build returns the index's id (%s)" % results["OUTPUT"])
    server.value("SELECT tg_bmmq_build('qgis_elevation_sql', 'qgis_check.corner', "
                 "bins => ARRAY[1000, 1500, 2000, 2500, 3000])")
    check(server.value(nodes, ("qgis_elevation",) * 2) == server.value(nodes, ("qgis_elevation_sql",) * 2),
          "bmmq_build: the nodes and bins of tg_bmmq_build's")
    run("bmmq_build", {"INPUT": corner, "name": "qgis_quantiles", "nbins": 4, "bin_method": "quantile"})
    check(server.value("SELECT bin_method || cardinality(bounds) FROM terra_gpu.bmmq_index "
                       "WHERE name = 'qgis_quantiles'") == "quantile3", "bmmq_build: computed quantile bins")
    conn = {"CONNECTION": "qgis check"}
    quadrants = ("md5(string_agg(concat_ws(',', tile_id, level, morton, encode(ST_AsEWKB(geom), 'hex')), ';' "
                 "ORDER BY tile_id, level, morton))")
    window = "8.1,8.3,46.7,46.9 [EPSG:4326]"
    for algorithm, parameters, call in (
            ("bmmq_range", {"name": "qgis_elevation", "window": window},
             "tg_bmmq_range('qgis_elevation', ST_MakeEnvelope(8.1, 46.7, 8.3, 46.9, 4326))"),
            ("bmmq_roi", {"name": "qgis_elevation", "lo": 2000}, "tg_bmmq_roi('qgis_elevation', 2000, 'Infinity')"),
            ("bmmq_roi", {"name": "qgis_elevation", "lo": 1500, "hi": 2500, "refine": True},
             "tg_bmmq_roi('qgis_elevation', 1500, 2500, refine => true)"),
            ("bmmq_roi_compound", {"names": ["qgis_elevation", "2000", "", "qgis_elevation_sql", "", "3000"]},
             "tg_bmmq_roi(ARRAY['qgis_elevation', 'qgis_elevation_sql'], ARRAY[2000, '-Infinity']::float8[], "
             "ARRAY['Infinity', 3000]::float8[])")):
        results, _ = run(algorithm, dict(conn, **parameters, OUTPUT_TABLE="%s.t_%s" % (SCHEMA, algorithm),
                                         replace=True))
        check(table_digest(server, results["OUTPUT_TABLE"], quadrants) == call_digest(server, call, quadrants),
              "%s: %s" % (algorithm, call))
    before = server.value(nodes, ("qgis_elevation",) * 2)
    results, _ = run("bmmq_refresh", dict(conn, name="qgis_elevation"))
    check(results["OUTPUT"] == str(built) and server.value(nodes, ("qgis_elevation",) * 2) == before,
          "bmmq_refresh rebuilds the same nodes")
    results, _ = run("bmmq_drop", dict(conn, name="qgis_elevation"))
    check(results["OUTPUT"] == "True" and not server.value(
        "SELECT count(*) FROM terra_gpu.bmmq_index WHERE name = 'qgis_elevation'"), "bmmq_drop drops the index")
    message = fails("bmmq_drop", dict(conn, name="qgis_elevation"))
    check(message and message.startswith("ERROR 42704: BMMQ index \"qgis_elevation\" does not exist"),
          "dropping it again: the server's 42704 (%s)" % message)
    message = fails("bmmq_build", {"INPUT": corner, "name": "qgis_bad", "bins": "3, 2, 1"})
    expected = server.error("SELECT tg_bmmq_build('qgis_bad', 'qgis_check.corner', bins => ARRAY[3, 2, 1])")
    check(message and message.startswith("ERROR %s: %s" % expected), "bins not increasing: %s" % message)


# ---------------------------------------------------------------------------
# Styles, progress, cancel, errors, connections
# ---------------------------------------------------------------------------
def check_styles(dem, outlet):
    print("== results come into the project styled")
    import processing
    project = QgsProject.instance()
    processing.runAndLoadResults("terra_gpu:flow_accumulation", {
        "INPUT": dem, "units": "area", "OUTPUT_TABLE": "qgis_check.styled_area", "replace": True})
    processing.runAndLoadResults("terra_gpu:hydrology", {
        "INPUT": dem, "OUTPUT_TABLE": "qgis_check.styled_chain", "replace": True})
    processing.runAndLoadResults("terra_gpu:stream_links", {
        "INPUT": dem, "OUTPUT_TABLE": "qgis_check.styled_streams", "replace": True})
    processing.runAndLoadResults("terra_gpu:watershed_polygon", {
        "INPUT": dem, "outlet": point_layer([outlet]), "OUTPUT_TABLE": "qgis_check.styled_watershed",
        "replace": True})
    layers = {layer.name(): layer for layer in project.mapLayers().values()}

    def classes(name):
        layer = layers.get(name)
        if layer is None or layer.renderer().type() != "singlebandpseudocolor":
            return None
        return [item.value for item in layer.renderer().shader().rasterShaderFunction().colorRampItemList()][:2]
    check(classes("styled_area") == [5e5, 2e6], "accumulation in area: docs/alps_accumulation.qml's classes")
    check(classes("styled_chain accumulation") == [1e3, 1e4],
          "tg_hydrology's accumulation in cells: docs/accumulation_cells.qml's classes")
    check({"styled_chain filled", "styled_chain direction"} <= set(layers), "tg_hydrology: its three layers")
    streams = layers.get("styled_streams")
    check(streams is not None and streams.renderer().type() == "graduatedSymbol"
          and streams.renderer().classAttribute() == "strahler", "stream network: graduated by Strahler order")
    shed = layers.get("styled_watershed")
    check(shed is not None and shed.renderer().type() == "singleSymbol"
          and shed.renderer().symbol().color().alpha() == 0, "watershed: an outline, no fill")
    project.clear()


def check_progress_and_cancel(server, dem):
    print("== progress from the server's NOTICEs; Cancel stops the server and leaves no table")
    # more viewsheds than one thread computes before the server's first progress NOTICE (5 s):
    # hundreds of valid cells, 60 cells apart
    towers = point_layer(server.rows("SELECT ST_X(c.geom), ST_Y(c.geom) FROM qgis_check.dem, "
                                     "ST_PixelAsCentroids(rast, 1, true) c WHERE c.x % 60 = 30 AND c.y % 60 = 30"))
    feedback = Recorder(cancel_on_progress=True)
    server.value("DROP TABLE IF EXISTS qgis_check.canceled")
    os.environ["PGOPTIONS"] = "-c terra_gpu.threads=1"
    try:
        message = fails("viewshed_count", {"INPUT": dem, "observers": towers, "OUTPUT_TABLE": "qgis_check.canceled",
                                           "backend": "cpu"}, feedback)
    finally:
        del os.environ["PGOPTIONS"]
    print("   progress texts: %s" % feedback.progress_texts[:3])
    check(any(t.startswith("tg_viewshed_count: ") for t in feedback.progress_texts),
          "a progress NOTICE became the progress text and percentage")
    check(message is not None and message.startswith("Canceled"), "the run stops as canceled (%s)" % message)
    check(server.value("SELECT to_regclass('qgis_check.canceled') IS NULL"), "no table is left")
    for _ in range(20):
        left = server.value("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'QGIS terra_gpu'")
        if left == 0:
            break
        time.sleep(0.1)
    check(left == 0, "no session of the plugin is left on the server")


def check_errors(server, dem):
    print("== errors as the server gives them")
    message = fails("fill", {"INPUT": dem, "epsilon": -1, "OUTPUT_TABLE": "qgis_check.bad"})
    expected = server.error("SELECT * FROM tg_fill(coverage => 'qgis_check.dem', epsilon => -1)")
    check(expected[0] == "22023" and message and message.startswith("ERROR %s: %s" % expected),
          "a negative epsilon: %s" % message)
    server.value("DROP TABLE IF EXISTS qgis_check.taken; CREATE TABLE qgis_check.taken (i int)")
    message = fails("slope", {"INPUT": dem, "OUTPUT_TABLE": "qgis_check.taken"})
    check(message and message.startswith("ERROR 42P07: relation qgis_check.taken already exists")
          and "HINT: Pass replace => true" in message, "an existing table: 42P07 with its hint")
    message = fails("watershed", {"INPUT": dem, "outlet": point_layer([(20.0, 10.0)])})
    expected = server.error("SELECT * FROM tg_watershed(coverage => 'qgis_check.dem', "
                            "outlet => 'SRID=4326;POINT(20 10)')")
    check(message and message.startswith("ERROR %s: %s" % expected), "an outlet off the raster: %s" % message)
    message = fails("viewshed", {"INPUT": dem, "observer": point_layer([(8.5, 46.5), (8.6, 46.6)])})
    check(message and "has 2 points; this takes one" in message, "two observers for one viewshed: said plainly")


def check_connections(server, dem, tmp):
    print("== stored connections, authentication configurations, services, odd names")
    auth = QgsApplication.authManager()
    with quiet():
        auth.setMasterPassword("qgis check master", True)
    config = QgsAuthMethodConfig()
    config.setName("qgis check")
    config.setMethod("Basic")
    config.setConfig("username", ENV["PGUSER"])
    config.setConfig("password", SECRET)
    check(auth.storeAuthenticationConfig(config)[0], "an authentication configuration is stored")
    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    uri = QgsDataSourceUri()
    uri.setConnection(ENV["PGHOST"], ENV["PGPORT"], ENV["PGDATABASE"], "", "", QgsDataSourceUri.SslPrefer,
                      config.id())
    metadata.saveConnection(metadata.createConnection(uri.uri(False), {}), "qgis check auth")
    results, feedback = run("slope", {"CONNECTION": "qgis check auth", "SCHEMA": SCHEMA, "INPUT_TABLE": "dem",
                                      "OUTPUT_TABLE": "qgis_check.t_auth", "replace": True})
    check(table_digest(server, results["OUTPUT_TABLE"], raster_digest())
          == call_digest(server, "tg_slope(coverage => 'qgis_check.dem')", raster_digest()),
          "a table of a stored connection with an authentication configuration")
    check("as %s" % ENV["PGUSER"] in feedback.text(), "the user comes from the configuration")
    check(SECRET not in feedback.text(), "its password is not in the log")
    check(results["OUTPUT"].source().find(config.id()) >= 0 and SECRET not in results["OUTPUT"].source(),
          "the result layer keeps the configuration, not the password")

    service_file = os.path.join(tmp, "pg_service.conf")
    with open(service_file, "w") as f:
        f.write("[qgis_check]\nhost=%s\nport=%s\nuser=%s\n" % (ENV["PGHOST"], ENV["PGPORT"], ENV["PGUSER"]))
    os.environ["PGSERVICEFILE"] = service_file
    by_service = raster_layer("dem", service="qgis_check")
    results, feedback = run("fill", {"INPUT": by_service, "OUTPUT_TABLE": "qgis_check.t_service", "replace": True})
    check(table_digest(server, results["OUTPUT_TABLE"], raster_digest())
          == call_digest(server, "tg_fill(coverage => 'qgis_check.dem')", raster_digest())
          and "service qgis_check" in feedback.text(), "a layer of a PostgreSQL service")

    odd = 'Dem "q"; drop table x; --'
    server.value(sql.SQL("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} AS SELECT * FROM qgis_check.dem").format(
        sql.Identifier(SCHEMA, odd)))
    results, _ = run("slope", {"INPUT": QgsRasterLayer(postgres_uri(odd, "rast", "rid"), "odd", "postgresraster")})
    check(results["OUTPUT_TABLE"] == "%s.%s_slope" % (SCHEMA, odd)
          and table_digest(server, results["OUTPUT_TABLE"], raster_digest())
          == call_digest(server, "tg_slope(coverage => 'qgis_check.dem')", raster_digest()),
          "a table with quotes and a semicolon in its name, and the default result name beside it")
    server.value(sql.SQL("DROP TABLE {}, {}").format(sql.Identifier(SCHEMA, odd),
                                                     sql.Identifier(SCHEMA, odd + "_slope")))
    message = fails("slope", {"INPUT": dem, "OUTPUT_TABLE": "a.b.c"})
    check(message and message.startswith('ERROR 42602: invalid table name "a.b.c"'),
          "a result name that is not one: %s" % message.splitlines()[0])


def check_extension_versions(server):
    print("== a database without terra_gpu, or with an old one, says what to run")
    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    for db, setup, expected in (
            ("qgis_check_none", "CREATE EXTENSION postgis_raster CASCADE", "CREATE EXTENSION terra_gpu CASCADE;"),
            ("qgis_check_old", "CREATE EXTENSION terra_gpu VERSION '0.1.0' CASCADE",
             "ALTER EXTENSION terra_gpu UPDATE;")):
        server.value(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(db)))
        server.value(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
        other = Server(db)
        other.value("SET client_min_messages = warning; " + setup)
        other.value("CREATE TABLE dem AS SELECT 1 AS rid, "
                    "ST_AddBand(ST_MakeEmptyRaster(2, 2, 0, 0, 1), '32BF'::text, 1::float8) AS rast")
        other.conn.close()
        uri = QgsDataSourceUri()
        uri.setConnection(ENV["PGHOST"], ENV["PGPORT"], db, ENV["PGUSER"], "")
        metadata.saveConnection(metadata.createConnection(uri.uri(False), {}), db)
        message = fails("slope", {"CONNECTION": db, "SCHEMA": "public", "INPUT_TABLE": "dem"})
        check(message is not None and expected in message, "%s: %s" % (db, message))
        server.value(sql.SQL("DROP DATABASE {}").format(sql.Identifier(db)))


def main():
    if len(sys.argv) > 1 and sys.argv[1].startswith("-"):
        print(__doc__)
        return 2
    with open(os.path.join(REPO, "terra_gpu.control")) as control:
        version = re.search(r"^default_version = '(.*)'", control.read(), re.M).group(1)
    zip_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build", "terra_gpu-qgis-%s.zip" % version)
    dem_file = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "tools", "data",
                                                                  "medium_alps_n46e008_srtm3.tif")
    server = Server()
    server.value("SET client_min_messages = warning; DROP SCHEMA IF EXISTS qgis_check CASCADE; "
                 "CREATE SCHEMA qgis_check")
    load_dem(Dem(dem_file), SCHEMA + ".dem", tile=256)
    # four of its tiles, for the BMMQ-tree indexes (their builds and queries take a while)
    server.value("CREATE TABLE qgis_check.corner AS SELECT * FROM qgis_check.dem WHERE rid IN (1, 2, 6, 7); "
                 "SELECT AddRasterConstraints('qgis_check'::name, 'corner'::name, 'rast'::name)")
    server.value("CREATE TABLE qgis_check.weight AS SELECT rid, ST_MapAlgebra(rast, 1, '32BF', '2') AS rast "
                 "FROM qgis_check.dem; CREATE TABLE qgis_check.kfactor AS SELECT rid, "
                 "ST_MapAlgebra(rast, 1, '32BF', '0.3') AS rast FROM qgis_check.dem")
    server.value("SELECT AddRasterConstraints('qgis_check'::name, t::name, 'rast'::name) "
                 "FROM unnest(ARRAY['weight', 'kfactor']) t")
    outlet = server.rows("SELECT ST_X(p), ST_Y(p) FROM tg_snap_pour_point(coverage => 'qgis_check.dem', "
                         "point => 'SRID=4326;POINT(8.67 46.77)', distance => 1000) p")[0]
    observer = server.rows("SELECT ST_X(c.geom), ST_Y(c.geom) FROM qgis_check.dem, ST_PixelAsCentroids(rast) c "
                           "ORDER BY c.val DESC LIMIT 1")[0]

    with tempfile.TemporaryDirectory() as tmp:
        app = start_qgis(os.path.join(tmp, "profile"))
        try:
            algorithms = install_plugin(zip_path, os.path.join(tmp, "plugins"))
            metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
            uri = QgsDataSourceUri()
            uri.setConnection(ENV["PGHOST"], ENV["PGPORT"], ENV["PGDATABASE"], ENV["PGUSER"], "")
            metadata.saveConnection(metadata.createConnection(uri.uri(False), {}), "qgis check")
            dem = raster_layer("dem")
            check_algorithm_list(server, algorithms)
            check_vocabularies(server, algorithms)
            check_algorithms(server, dem, outlet, observer)
            check_bmmq(server)
            check_styles(dem, outlet)
            check_progress_and_cancel(server, dem)
            check_errors(server, dem)
            check_connections(server, dem, tmp)
            check_extension_versions(server)
        finally:
            app.exitQgis()
    for name in ("qgis_elevation_sql", "qgis_quantiles"):
        server.value("SELECT tg_bmmq_drop(%s, if_exists => true)", (name,))
    server.value("SET client_min_messages = warning; DROP SCHEMA qgis_check CASCADE")
    return checks_exit_status("QGIS")


if __name__ == "__main__":
    sys.exit(main())
