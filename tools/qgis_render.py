#!/usr/bin/env python3
"""Open the demo's accumulation table in QGIS, headless, as a user would in the
desktop application, and render it: proof that the postgresraster provider
reads a coverage-form result table and that docs/alps_accumulation.qml styles it.

Optional (QGIS is too heavy for CI).  On Debian 12:

    apt-get install qgis python3-qgis
    tools/demo.sh                                 # the tables
    QT_QPA_PLATFORM=offscreen /usr/bin/python3 tools/qgis_render.py [OUT.png] [--write-style]

Connection: the PG* variables of tools/localpg.sh (host may be a socket
directory).  Layers: alps_accumulation (raster, postgresraster provider,
styled with docs/alps_accumulation.qml: singleband pseudocolor, log-like
classes of upslope area) over alps_dem (hillshade renderer), with the
watershed outline (alps_watershed, postgres provider, docs/alps_watershed.qml).

The script builds the styles of docs/ with the PyQGIS API, writes them beside
the image (--write-style: into docs/) and renders with docs/'s, as a user
loading them would: the accumulation in area and in cells
(accumulation_cells.qml: under 1000 cells, the functions' default stream
threshold, transparent), the stream network by Strahler order
(alps_streams.qml) and the watershed outline.  The QGIS plugin styles its
results with them.
"""
import os
import sys

from qgis.core import (QgsApplication, QgsColorRampShader, QgsCoordinateReferenceSystem, QgsCoordinateTransform,
                       QgsDataSourceUri, QgsFillSymbol, QgsGraduatedSymbolRenderer, QgsLineSymbol, QgsMapLayer, QgsProject,
                       QgsHillshadeRenderer, QgsMapRendererParallelJob, QgsMapSettings, QgsRasterLayer,
                       QgsRasterShader, QgsRendererRange, QgsSingleBandPseudoColorRenderer,
                       QgsSingleSymbolRenderer, QgsVectorLayer)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor, QImage

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, "docs")


def uri(table, column, key):
    u = QgsDataSourceUri()
    u.setConnection(os.environ.get("PGHOST", "/tmp"), os.environ.get("PGPORT", "5499"),
                    os.environ.get("PGDATABASE", "terra_gpu"), os.environ.get("PGUSER", "postgres"), "")
    u.setDataSource("public", table, column, "", key)
    return u.uri(False)


# Discrete log-like classes of upslope area (m²): streams stand out, hillslopes (under 0.5 km²)
# stay transparent
AREA_CLASSES = [(5e5, "#9ecae1", 0, "< 0.5 km²"), (2e6, "#9ecae1", 255, "0.5 - 2 km²"),
                (1e7, "#4292c6", 255, "2 - 10 km²"), (5e7, "#2171b5", 255, "10 - 50 km²"),
                (2.5e8, "#08519c", 255, "50 - 250 km²"), (float("inf"), "#08306b", 255, "> 250 km²")]
# The same in cells: under 1000 (the functions' default stream threshold) transparent
CELL_CLASSES = [(1e3, "#9ecae1", 0, "< 1,000 cells"), (1e4, "#9ecae1", 255, "1,000 - 10,000"),
                (1e5, "#4292c6", 255, "10,000 - 100,000"), (1e6, "#2171b5", 255, "100,000 - 1 M"),
                (1e7, "#08519c", 255, "1 M - 10 M"), (float("inf"), "#08306b", 255, "> 10 M cells")]
# Strahler order: wider and darker downstream
STRAHLER = [(1, "#9ecae1", 0.25), (2, "#6baed6", 0.45), (3, "#4292c6", 0.7), (4, "#2171b5", 1.0),
            (5, "#08519c", 1.4), (6, "#08306b", 1.9)]


def accumulation_renderer(layer, classes):
    """Singleband pseudocolor with discrete classes."""
    items = []
    for value, colour, alpha, label in classes:
        c = QColor(colour)
        c.setAlpha(alpha)
        items.append(QgsColorRampShader.ColorRampItem(value, c, label))
    ramp = QgsColorRampShader(0, 1e12, None, QgsColorRampShader.Discrete)
    ramp.setColorRampItemList(items)
    shader = QgsRasterShader()
    shader.setRasterShaderFunction(ramp)
    return QgsSingleBandPseudoColorRenderer(layer.dataProvider(), 1, shader)


def streams_renderer():
    """Lines graduated by Strahler order (the last class takes every higher order)."""
    ranges = []
    for i, (order, colour, width) in enumerate(STRAHLER):
        top = 1e9 if i == len(STRAHLER) - 1 else order + 0.5
        symbol = QgsLineSymbol.createSimple({"line_color": colour, "line_width": str(width), "capstyle": "round"})
        label = "order %d%s" % (order, " and higher" if i == len(STRAHLER) - 1 else "")
        ranges.append(QgsRendererRange(order - 0.5, top, symbol, label))
    return QgsGraduatedSymbolRenderer("strahler", ranges)


def watershed_renderer():
    return QgsSingleSymbolRenderer(QgsFillSymbol.createSimple(
        {"color": "0,0,0,0", "outline_color": "#d00000", "outline_width": "0.6"}))


def write_and_load(layer, renderer, name, beside):
    """The renderer saved as a style (docs/NAME with --write-style, else beside the image), then docs/NAME
    loaded, as a user would; an error message or None."""
    layer.setRenderer(renderer)
    written = os.path.join(DOCS if "--write-style" in sys.argv else beside, name)
    # a vector style without the table's fields, so that it fits any table with the styled column
    categories = QgsMapLayer.Symbology if isinstance(layer, QgsVectorLayer) else QgsMapLayer.AllStyleCategories
    msg, ok = layer.saveNamedStyle(written, categories=categories)
    if not ok:
        return "style %s: %s" % (written, msg)
    msg, ok = layer.loadNamedStyle(os.path.join(DOCS, name))
    return None if ok else "style %s: %s" % (name, msg)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = args[0] if args else os.path.join(REPO, "demo-output", "qgis_accumulation.png")
    app = QgsApplication([], False)
    app.initQgis()
    try:
        dem = QgsRasterLayer(uri("alps_dem", "rast", "rid"), "alps_dem", "postgresraster")
        acc = QgsRasterLayer(uri("alps_accumulation", "rast", "rid"), "alps_accumulation", "postgresraster")
        shed = QgsVectorLayer(uri("alps_watershed", "geom", "id"), "alps_watershed", "postgres")
        streams = QgsVectorLayer(uri("alps_streams", "geom", "id"), "alps_streams", "postgres")
        for layer in (dem, acc, shed, streams):
            if not layer.isValid():
                print("QGIS could not open %s: %s" % (layer.name(), layer.error().summary()))
                return 1
        print("opened: alps_dem %d x %d, alps_accumulation %d x %d (CRS %s), alps_watershed %d feature(s)"
              % (dem.width(), dem.height(), acc.width(), acc.height(), acc.crs().authid(), shed.featureCount()))

        # the styles as .qml files for the desktop (Layer Properties > Symbology > Style > Load Style)
        # and the QGIS plugin; the accumulation's in cells first, as the one in area is drawn
        beside = os.path.dirname(os.path.abspath(out))
        for layer, renderer, name in ((acc, accumulation_renderer(acc, CELL_CLASSES), "accumulation_cells.qml"),
                                      (acc, accumulation_renderer(acc, AREA_CLASSES), "alps_accumulation.qml"),
                                      (streams, streams_renderer(), "alps_streams.qml"),
                                      (shed, watershed_renderer(), "alps_watershed.qml")):
            error = write_and_load(layer, renderer, name, beside)
            if error:
                print(error)
                return 1
        shade = QgsHillshadeRenderer(dem.dataProvider(), 1, 315, 45)
        shade.setZFactor(1 / 111120)
        shade.setMultiDirectional(True)
        shade.setOpacity(0.6)
        dem.setRenderer(shade)

        settings = QgsMapSettings()
        settings.setLayers([shed, acc, dem])  # top first
        # in UTM 32N (reprojected on the fly, as QGIS does with a project in another CRS), around
        # the watershed: close enough that streams are several pixels wide
        utm = QgsCoordinateReferenceSystem("EPSG:32632")
        settings.setDestinationCrs(utm)
        settings.setTransformContext(QgsProject.instance().transformContext())
        extent = shed.extent()
        extent.grow(0.04)
        extent = QgsCoordinateTransform(acc.crs(), utm, QgsProject.instance()).transformBoundingBox(extent)
        settings.setExtent(extent)
        settings.setOutputSize(QSize(900, int(900 * extent.height() / extent.width())))
        settings.setBackgroundColor(QColor("white"))
        job = QgsMapRendererParallelJob(settings)
        job.start()
        job.waitForFinished()
        errors = job.errors()
        if errors:
            for e in errors:
                print("render error in %s: %s" % (e.layerID, e.message))
            return 1
        job.renderedImage().convertToFormat(QImage.Format_Indexed8).save(out, "PNG")
        print("rendered %s (%d KB)" % (out, os.path.getsize(out) // 1024))
        return 0
    finally:
        app.exitQgis()


if __name__ == "__main__":
    sys.exit(main())
