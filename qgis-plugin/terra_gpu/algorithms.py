"""The Processing algorithms: one entry per terra_gpu function.

An entry names the algorithm, its group and the SQL function, says what the
call gives (tiles, rows, one geometry, a point per input point, or a value),
and lists the function's named arguments in its order with their SQL
defaults.  An argument given as a plain value takes its kind from
ARGUMENTS (the options every function shares: band, routing, fill, backend,
...); one given as an Argument carries its own.  The coverage and its column
names come from the input layer.  A new coverage function needs one entry,
e.g.

    Algorithm("aspect", "Aspect", TERRAIN, "tg_aspect",
              "Horn aspect, clockwise from north; -1 where flat.",
              band=1, units=Choice("Units", ["DEGREES", "RADIANS"], "DEGREES"), pixeltype="32BF", nodata=None,
              backend=None)

regress/checks/check_qgis.py checks every entry against
the installed function (names, defaults, vocabularies) and every function of
the extension against this list and WITHOUT_ALGORITHM.
"""
from .arguments import (REQUIRED, Argument, Boolean, Bound, Choice, Choices, Extent, Factor, IndexRanges,
                        Integer, Number, Numbers, Point, Points, Raster, Text)

TERRAIN = "Terrain"
HYDROLOGY = "Hydrology"
DRAINAGE = "Streams and basins"
EROSION = "Soil loss and travel time"
VISIBILITY = "Visibility"
BMMQ = "BMMQ-tree indexes"

# what a call gives, and so what the algorithm writes
TILES = "tiles"              # SELECT * FROM f(coverage => ...): a raster table, one row per input tile
ROWS = "rows"                # SELECT * FROM f(...): a table of features
GEOMETRY = "geometry"        # SELECT f(coverage => ...) AS geom: one feature
EACH_POINT = "each point"    # one call per point of the layer given as argument "point": a table of points
VALUE = "value"              # SELECT f(...): no table, the value is the output

# what a call reads
COVERAGE = "coverage"        # a raster table: a layer, or a table of a stored connection
INDEX = "index"              # BMMQ indexes of a stored connection's database

ROUTINGS = ["d8", "fd8", "mfd-md", "fdd8", "dinf", "anisotropic"]
ACCUMULATION_METHODS = ["auto", "flow-transfer", "dependency-transfer", "indegree", "topological"]
STREAM_UNITS = ["cells", "area"]
HILLSHADE_METHODS = ["standard", "multidirectional", "combined"]
TRI_ALGORITHMS = ["wilson", "riley"]
CURVATURE_TYPES = ["profile", "plan", "tangential", "mean", "gaussian", "minimal", "maximal", "total"]
TERRAIN_PRODUCTS = ("slope", "aspect", "hillshade", "tpi", "tri", "roughness", "curvature", "geomorphons")


class Style:
    """A .qml style (styles/) for a result column, or one per value of an argument."""

    def __init__(self, file=None, argument=None, files=None):
        self.file, self.argument, self.files = file, argument, files or {}

    def choose(self, values):
        return self.files.get(values.get(self.argument)) if self.argument else self.file


ACCUMULATION_STYLE = Style(argument="units", files={"area": "alps_accumulation.qml", "cells": "accumulation_cells.qml"})
STREAMS_STYLE = Style("alps_streams.qml")
WATERSHED_STYLE = Style("alps_watershed.qml")

# The shared options, by SQL argument name: the kind each plain default in an entry gets.
ARGUMENTS = {
    "band": lambda d: Integer("Band of the DEM", d),
    "scale": lambda d: Number("Vertical units per horizontal unit (111120 for degrees and metres)", d),
    "pixeltype": lambda d: Choice("Pixel type of the result", ["32BF", "64BF"], d, advanced=True),
    "backend": lambda d: Choice("Backend (empty: the server's terra_gpu.backend)", ["auto", "cpu", "gpu"], d,
                                advanced=True),
    "nodata": lambda d: Number("Nodata value of the result", d, advanced=True),
    "routing": lambda d: Choice("Flow routing", ROUTINGS, d),
    "method": lambda d: Choice("Accumulation method (all give the same result)", ACCUMULATION_METHODS, d,
                               advanced=True),
    "fill": lambda d: Boolean("Fill depressions before routing", d),
    "exponent": lambda d: Number("Exponent of the multiple-flow shares (fd8, fdd8)", d, advanced=True),
    "threshold": lambda d: Number("Accumulation at which fdd8 turns to D8", d, advanced=True),
    "units": lambda d: Choice("Units of the accumulation", ["cells", "area", "sca"], d),
    "weight": lambda d: Raster("Weight of each cell (a raster table on the DEM's grid)", "weight_column",
                               advanced=True),
    "weight_band": lambda d: Integer("Band of the weight", d, advanced=True),
    "snap": lambda d: Number("Snap the point to the highest accumulation within (map units; metres "
                             "on geographic rasters)", d),
    "min_slope": lambda d: Number("Smallest slope counted (tan)", d, advanced=True),
    "m": lambda d: Number("LS exponent m", d, advanced=True),
    "n": lambda d: Number("LS exponent n", d, advanced=True),
    "a0": lambda d: Number("LS unit length a0 (m)", d, advanced=True),
    "b0": lambda d: Number("LS unit slope b0", d, advanced=True),
    "b": lambda d: Number("Slope exponent b", d),
    "observer_height": lambda d: Number("Observer height above the ground", d),
    "target_height": lambda d: Number("Target height above the ground", d),
    "max_distance": lambda d: Number("Maximum distance (map units; metres on geographic rasters)", d),
    "earth_radius": lambda d: Number("Earth radius (m; 0: flat)", d, advanced=True),
    "refraction": lambda d: Number("Refraction coefficient", d, advanced=True),
}


class Algorithm:
    def __init__(self, name, title, group, function, help, /, *, source=COVERAGE, result=TILES,
                 columns=("rast",), styles=None, input_label="DEM", **arguments):
        self.name, self.title, self.group, self.function, self.help = name, title, group, function, help
        self.source, self.result, self.columns = source, result, columns
        self.styles = styles or {}
        self.input_label = input_label
        self.arguments = {key: value if isinstance(value, Argument) else ARGUMENTS[key](value)
                          for key, value in arguments.items()}

    @property
    def writes_table(self):
        return self.result != VALUE


def streams(**arguments):
    """The stream cells' arguments: threshold in cells or area."""
    return dict(threshold=Number("Stream threshold: accumulation of a stream cell", 1000),
                units=Choice("Units of the threshold", STREAM_UNITS, "cells"), **arguments)


def travel(outlet, **arguments):
    """The travel-time arguments: the outlet, then these, then the velocity's."""
    return dict(outlet=outlet, **arguments,
                n=Factor("Manning-like roughness n", 1.0), k=Factor("Velocity constant K (m/s)", 1.0),
                b=0.5, min_slope=0.001, fill=True, band=1)


ALGORITHMS = (
    Algorithm("slope", "Slope", TERRAIN, "tg_slope",
              "Horn slope of each cell (the conventions of ST_Slope).",
              band=1, units=Choice("Units", ["DEGREES", "RADIANS", "PERCENT"], "DEGREES"), scale=1.0, nodata=None,
              backend=None),
    Algorithm("aspect", "Aspect", TERRAIN, "tg_aspect",
              "Horn aspect, clockwise from north; -1 where flat (the conventions of ST_Aspect).",
              band=1, units=Choice("Units", ["DEGREES", "RADIANS"], "DEGREES"), pixeltype="32BF", nodata=None,
              backend=None),
    Algorithm("hillshade", "Hillshade", TERRAIN, "tg_hillshade",
              "Shaded relief under a light from azimuth and altitude: standard (as ST_HillShade), "
              "multidirectional or combined (as gdaldem's).",
              band=1, azimuth=Number("Azimuth of the light (degrees clockwise from north)", 315),
              altitude=Number("Altitude of the light (degrees)", 45), max_bright=Number("Brightest value", 255),
              scale=1.0, z_factor=Number("Vertical exaggeration", 1.0),
              method=Choice("Method", HILLSHADE_METHODS, "standard"),
              pixeltype=Choice("Pixel type of the result", ["32BF", "64BF", "8BUI"], "32BF", advanced=True),
              nodata=None, backend=None),
    Algorithm("tpi", "Topographic position index", TERRAIN, "tg_tpi",
              "Each cell's height above the mean of its 8 neighbours (as ST_TPI).",
              band=1, pixeltype="32BF", nodata=None, backend=None),
    Algorithm("tri", "Terrain ruggedness index", TERRAIN, "tg_tri",
              "Mean (wilson, as ST_TRI) or root of the summed squares (riley) of the differences to the 8 "
              "neighbours.",
              band=1, algorithm=Choice("Algorithm", TRI_ALGORITHMS, "wilson"), pixeltype="32BF", nodata=None,
              backend=None),
    Algorithm("roughness", "Roughness", TERRAIN, "tg_roughness",
              "Largest difference within each 3 x 3 window (as ST_Roughness).",
              band=1, pixeltype="32BF", nodata=None, backend=None),
    Algorithm("curvature", "Curvature", TERRAIN, "tg_curvature",
              "Curvature from the Evans-Young derivatives (Florinsky 2016's definitions, convex positive).",
              band=1, type=Choice("Curvature", CURVATURE_TYPES, "profile"), scale=1.0, pixeltype="32BF",
              nodata=None, backend=None),
    Algorithm("geomorphons", "Geomorphons", TERRAIN, "tg_geomorphons",
              "The ten landforms of Jasiewicz and Stepinski (2013) from lines of sight in 8 directions.",
              band=1, search_radius=Integer("Search radius (cells)", 3), skip=Integer("Cells skipped near each cell", 0),
              flat_threshold=Number("Flat threshold (degrees)", 1.0), scale=1.0, backend=None),
    Algorithm("terrain", "Several terrain derivatives", TERRAIN, "tg_terrain",
              "Several local derivatives from one pass over the DEM: one raster column per product.",
              columns=TERRAIN_PRODUCTS,
              products=Choices("Products", TERRAIN_PRODUCTS, ["slope", "aspect", "hillshade"]), band=1, scale=1.0,
              units=Choice("Units of the slope", ["DEGREES", "RADIANS", "PERCENT"], "DEGREES"),
              aspect_units=Choice("Units of the aspect", ["DEGREES", "RADIANS"], "DEGREES"),
              azimuth=Number("Azimuth of the light (degrees clockwise from north)", 315),
              altitude=Number("Altitude of the light (degrees)", 45), max_bright=Number("Brightest value", 255),
              z_factor=Number("Vertical exaggeration", 1.0),
              hillshade_method=Choice("Hillshade method", HILLSHADE_METHODS, "standard"),
              tri_algorithm=Choice("TRI algorithm", TRI_ALGORITHMS, "wilson"),
              curvature_type=Choice("Curvature", CURVATURE_TYPES, "profile"),
              search_radius=Integer("Geomorphons' search radius (cells)", 3),
              skip=Integer("Geomorphons' cells skipped", 0),
              flat_threshold=Number("Geomorphons' flat threshold (degrees)", 1.0), nodata=None, backend=None),
    Algorithm("fill", "Fill or breach depressions", HYDROLOGY, "tg_fill",
              "The depression-filled DEM (priority-flood or planchon-darboux: the same surface), or the DEM "
              "breached along least-cost paths (breach: no cell raised).",
              band=1, method=Choice("Method", ["priority-flood", "planchon-darboux", "breach"], "priority-flood"),
              epsilon=Number("Epsilon: smallest drop along a path (0: flat fill)", 0), nodata=None, backend=None),
    Algorithm("flow_direction", "Flow direction", HYDROLOGY, "tg_flow_direction",
              "Where each cell's water goes: D8 codes (ESRI), a receiver mask, or 8 bands of shares.",
              band=1, routing="d8", fill=True, exponent=1.1, threshold=1000,
              output=Choice("Output", ["auto", "codes", "mask", "shares", "angle"], "auto"), backend=None),
    Algorithm("flow_accumulation", "Flow accumulation", HYDROLOGY, "tg_flow_accumulation",
              "Upslope cells, area or specific catchment area of each cell, every cell counting itself.",
              styles={"rast": ACCUMULATION_STYLE},
              band=1, routing="d8", method="auto", weight=None, units="cells", fill=True, exponent=1.1,
              threshold=1000, weight_band=1, pixeltype="64BF", nodata=None, backend=None),
    Algorithm("hydrology", "Fill, direction and accumulation", HYDROLOGY, "tg_hydrology",
              "The filled DEM, the flow directions and the accumulation in one call (one table, three raster "
              "columns).",
              columns=("filled", "direction", "accumulation"), styles={"accumulation": ACCUMULATION_STYLE},
              band=1, routing="d8", method="auto", weight=None, units="cells", exponent=1.1, threshold=1000,
              weight_band=1, nodata=None, backend=None),
    Algorithm("flow_length", "Flow length", HYDROLOGY, "tg_flow_length",
              "D8 flow length: downstream to each path's end, or upstream from the divide.",
              direction=Choice("Direction", ["downstream", "upstream"], "downstream"), fill=True, band=1,
              nodata=-9999, backend=None),
    Algorithm("hand", "Height above the nearest drainage", HYDROLOGY, "tg_hand",
              "Each cell's height above the first stream cell on its D8 path (Renno et al. 2008).",
              **streams(fill=True, band=1, nodata=-9999, backend=None)),
    Algorithm("wetness_index", "Topographic wetness index", HYDROLOGY, "tg_wetness_index",
              "ln(a / tan b): a the specific catchment area, b the slope (Beven and Kirkby 1979).",
              routing="mfd-md", min_slope=0.001, fill=True, band=1, method="auto", exponent=1.1, threshold=1000,
              nodata=-9999, backend=None),

    Algorithm("stream_order", "Stream order", DRAINAGE, "tg_stream_order",
              "Strahler or Shreve order of the stream cells (D8 accumulation at least the threshold).",
              **streams(ordering=Choice("Ordering", ["strahler", "shreve"], "strahler"), fill=True, band=1,
                        backend=None)),
    Algorithm("stream_links", "Stream network", DRAINAGE, "tg_stream_links",
              "The stream network as lines, one per link, with Strahler and Shreve order, length and upstream "
              "area; styled by Strahler order.",
              result=ROWS, columns=("geom",), styles={"geom": STREAMS_STYLE},
              **streams(fill=True, band=1, backend=None)),
    Algorithm("basins", "Basins", DRAINAGE, "tg_basins",
              "D8 basins: of the pour points (each cell labelled by the nearest point downstream), or without "
              "points of every outlet.",
              pour_points=Points("Pour points", None), snap=0, fill=True, band=1, backend=None),
    Algorithm("subbasins", "Sub-basins", DRAINAGE, "tg_subbasins",
              "Sub-basins per stream link (labelled with the link_id of the stream network).",
              **streams(fill=True, band=1, backend=None)),
    Algorithm("watershed", "Watershed (raster)", DRAINAGE, "tg_watershed",
              "Cells whose D8 path passes through the outlet.",
              outlet=Point("Outlet (a point layer with one point)", REQUIRED), fill=True, band=1, backend=None,
              snap=0),
    Algorithm("watershed_polygon", "Watershed", DRAINAGE, "tg_watershed_polygon",
              "The catchment of the outlet as a polygon, outlined.",
              result=GEOMETRY, columns=("geom",), styles={"geom": WATERSHED_STYLE},
              outlet=Point("Outlet (a point layer with one point)", REQUIRED), fill=True, band=1, backend=None,
              snap=0),
    Algorithm("snap_pour_point", "Snap pour points", DRAINAGE, "tg_snap_pour_point",
              "Each point moved to the cell of highest D8 accumulation within the distance.",
              result=EACH_POINT, columns=("geom",),
              point=Points("Points to snap", REQUIRED),
              distance=Number("Distance (map units; metres on geographic rasters)", REQUIRED),
              band=1, fill=True, backend=None),

    Algorithm("ls_factor", "RUSLE LS factor", EROSION, "tg_ls_factor",
              "RUSLE slope length and steepness factor (Mitasova et al. 1996).",
              routing="mfd-md", m=0.4, n=1.3, a0=22.1, b0=0.0896, fill=False, band=1, method="auto", exponent=1.1,
              threshold=1000, nodata=-9999, backend=None),
    Algorithm("rusle", "RUSLE soil loss", EROSION, "tg_rusle",
              "Soil loss A = R K LS C P; each factor a number or a raster table on the DEM's grid.",
              r=Factor("Rainfall erosivity R", REQUIRED), k=Factor("Soil erodibility K", REQUIRED),
              c=Factor("Cover management C", 1.0), p=Factor("Support practice P", 1.0),
              routing="mfd-md", m=0.4, n=1.3, a0=22.1, b0=0.0896, fill=False, band=1, method="auto", exponent=1.1,
              threshold=1000, nodata=-9999, backend=None),
    Algorithm("travel_time", "Travel time", EROSION, "tg_travel_time",
              "Travel time along D8 paths to the outlet (or to each path's end without one), in seconds.",
              **travel(Point("Outlet (a point layer with one point; empty: each path's end)", None)),
              nodata=-9999, backend=None, snap=0),
    Algorithm("isochrone_bands", "Isochrone bands", EROSION, "tg_isochrone_bands",
              "The travel-time band of each cell of the outlet's watershed (band k: [(k-1) interval, k interval)).",
              **travel(Point("Outlet (a point layer with one point)", REQUIRED),
                       interval=Number("Interval (s)", REQUIRED)),
              backend=None, snap=0),
    Algorithm("isochrones", "Isochrones", EROSION, "tg_isochrones",
              "Isochrone polygons of the outlet's watershed, one per travel-time band.",
              result=ROWS, columns=("geom",),
              **travel(Point("Outlet (a point layer with one point)", REQUIRED),
                       interval=Number("Interval (s)", REQUIRED)),
              backend=None, snap=0),

    Algorithm("viewshed", "Viewshed", VISIBILITY, "tg_viewshed",
              "What an observer sees, with Earth curvature and refraction.",
              observer=Point("Observer (a point layer with one point)", REQUIRED), observer_height=1.75,
              target_height=0, max_distance=None, earth_radius=6370997, refraction=0.14286,
              output=Choice("Output", ["visible", "angle", "height"], "visible"), band=1, backend=None,
              algorithm=Choice("Algorithm (r3: exact, slow)", ["r2", "r3"], "r2", advanced=True)),
    Algorithm("viewshed_count", "Cumulative viewshed", VISIBILITY, "tg_viewshed_count",
              "For each cell, how many of the observers see it.",
              observers=Points("Observers", REQUIRED), observer_height=1.75, target_height=0,
              max_distance=None, earth_radius=6370997, refraction=0.14286, band=1, backend=None),

    Algorithm("bmmq_build", "Build a BMMQ-tree index", BMMQ, "tg_bmmq_build",
              "A binned min-max quadtree index over every tile of a raster table, for region-of-interest "
              "queries; the output is the index's id.",
              result=VALUE, input_label="Raster table to index",
              name=Text("Index name", REQUIRED), band=1,
              bins=Numbers("Bin boundaries, e.g. 1000, 1500, 2000 (empty: nbins computed bins)", None),
              nbins=Integer("Number of computed bins", 8),
              bin_method=Choice("Computed bins", ["equal", "quantile"], "equal"), backend=None),
    Algorithm("bmmq_refresh", "Refresh a BMMQ-tree index", BMMQ, "tg_bmmq_refresh",
              "Rebuild an index from its source table with the same bins (after the table changed).",
              source=INDEX, result=VALUE, name=Text("Index name", REQUIRED)),
    Algorithm("bmmq_drop", "Drop a BMMQ-tree index", BMMQ, "tg_bmmq_drop",
              "Drop an index (its catalog row, tiles and nodes).",
              source=INDEX, result=VALUE, name=Text("Index name", REQUIRED),
              if_exists=Boolean("No error if it does not exist", False)),
    Algorithm("bmmq_range", "BMMQ window query", BMMQ, "tg_bmmq_range",
              "The index's quadrants covering a map window, with their value bins.",
              source=INDEX, result=ROWS, columns=("geom",),
              name=Text("Index name", REQUIRED), window=Extent("Window", REQUIRED)),
    Algorithm("bmmq_roi", "BMMQ region of interest", BMMQ, "tg_bmmq_roi",
              "Where the indexed values lie in [from, to): the quadrants wholly inside, and boundary leaves "
              "(or with refine their exact cells).",
              source=INDEX, result=ROWS, columns=("geom",),
              name=Text("Index name", REQUIRED), lo=Bound("From (empty: no lower bound)", "-Infinity"),
              hi=Bound("To, excluded (empty: no upper bound)", "Infinity"),
              refine=Boolean("Refine boundary leaves to their cells", False)),
    Algorithm("bmmq_roi_compound", "BMMQ region of interest, several indexes", BMMQ, "tg_bmmq_roi",
              "Ranges of several co-registered indexes combined with and/or.",
              source=INDEX, result=ROWS, columns=("geom",),
              names=IndexRanges("Indexes and ranges (an empty end: no bound)", REQUIRED),
              combine=Choice("Combine", ["and", "or"], "and"), refine=Boolean("Refine boundary leaves", False)),
)

# The extension's functions that deliberately have no algorithm, and why.
WITHOUT_ALGORITHM = {
    "tg_version": "information: the library's version",
    "tg_gpu_info": "information: the GPU a session would use",
    "tg_last_run": "information: what the session's last call ran on",
    "tg_bmmq": "value form only (one raster value's tree); Build a BMMQ-tree index covers tables",
    "tg_create_result": "the writer every algorithm calls",
    "tg_create_partitioned_result": "coverages partitioned over several servers: set up and run by a DBA in SQL",
    "tg_refresh": "products kept fresh by the ETL's scheduled SQL (a pg_cron job), where the changes are made",
    "tg_refresh_all": "products kept fresh by the ETL's scheduled SQL (a pg_cron job), where the changes are made",
}

# tg_create_result's own arguments, offered by every algorithm that writes a table
RESULT_ARGUMENTS = {
    "replace": Boolean("Replace the table if it exists", False),
    "compression": Choice("Compression of the raster tiles", ["lz4", "pglz", "none"], "lz4", advanced=True),
}
