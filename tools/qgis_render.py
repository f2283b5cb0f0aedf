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
classes of upslope area; the script builds that style with the PyQGIS API and
--write-style writes it there) over alps_dem (hillshade renderer), with the
watershed outline (alps_watershed, postgres provider).
"""
import os
import sys

from qgis.core import (QgsApplication, QgsColorRampShader, QgsCoordinateReferenceSystem, QgsCoordinateTransform,
                       QgsDataSourceUri, QgsFillSymbol, QgsProject,
                       QgsHillshadeRenderer, QgsMapRendererParallelJob, QgsMapSettings, QgsRasterLayer,
                       QgsRasterShader, QgsSingleBandPseudoColorRenderer, QgsSingleSymbolRenderer,
                       QgsVectorLayer)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor, QImage

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STYLE = os.path.join(REPO, "docs", "alps_accumulation.qml")


def uri(table, column, key):
    u = QgsDataSourceUri()
    u.setConnection(os.environ.get("PGHOST", "/tmp"), os.environ.get("PGPORT", "5499"),
                    os.environ.get("PGDATABASE", "terra_gpu"), os.environ.get("PGUSER", "postgres"), "")
    u.setDataSource("public", table, column, "", key)
    return u.uri(False)


def accumulation_renderer(layer):
    """Singleband pseudocolor, discrete log-like classes of upslope area (m²): streams stand out,
    hillslopes (under 0.5 km²) stay transparent."""
    classes = [(5e5, "#9ecae1", 0, "< 0.5 km²"), (2e6, "#9ecae1", 255, "0.5 - 2 km²"),
               (1e7, "#4292c6", 255, "2 - 10 km²"), (5e7, "#2171b5", 255, "10 - 50 km²"),
               (2.5e8, "#08519c", 255, "50 - 250 km²"), (float("inf"), "#08306b", 255, "> 250 km²")]
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


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = args[0] if args else os.path.join(REPO, "demo-output", "qgis_accumulation.png")
    app = QgsApplication([], False)
    app.initQgis()
    try:
        dem = QgsRasterLayer(uri("alps_dem", "rast", "rid"), "alps_dem", "postgresraster")
        acc = QgsRasterLayer(uri("alps_accumulation", "rast", "rid"), "alps_accumulation", "postgresraster")
        shed = QgsVectorLayer(uri("alps_watershed", "geom", "id"), "alps_watershed", "postgres")
        for layer in (dem, acc, shed):
            if not layer.isValid():
                print("QGIS could not open %s: %s" % (layer.name(), layer.error().summary()))
                return 1
        print("opened: alps_dem %d x %d, alps_accumulation %d x %d (CRS %s), alps_watershed %d feature(s)"
              % (dem.width(), dem.height(), acc.width(), acc.height(), acc.crs().authid(), shed.featureCount()))

        # the style as a .qml for the desktop (Layer Properties > Symbology > Style > Load Style):
        # written beside the image (--write-style: into docs/), then docs/'s read back, as a user would
        acc.setRenderer(accumulation_renderer(acc))
        written = STYLE if "--write-style" in sys.argv else os.path.splitext(out)[0] + ".qml"
        msg, ok = acc.saveNamedStyle(written)
        if not ok:
            print("style %s: %s" % (written, msg))
            return 1
        msg, ok = acc.loadNamedStyle(STYLE)
        if not ok:
            print("style %s: %s" % (STYLE, msg))
            return 1
        shade = QgsHillshadeRenderer(dem.dataProvider(), 1, 315, 45)
        shade.setZFactor(1 / 111120)
        shade.setMultiDirectional(True)
        shade.setOpacity(0.6)
        dem.setRenderer(shade)
        shed.setRenderer(QgsSingleSymbolRenderer(QgsFillSymbol.createSimple(
            {"color": "0,0,0,0", "outline_color": "#d00000", "outline_width": "0.6"})))

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
