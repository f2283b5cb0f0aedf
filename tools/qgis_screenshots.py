"""The README's pictures of the QGIS plugin, taken from a real QGIS window
(QGIS 3.22, Debian 12) under Xvfb: the plugin installed from its zip through
Plugins › Install from ZIP's own code, the Processing Toolbox with the
terra_gpu provider and an algorithm's dialog (docs/qgis_toolbox.png), and
three algorithms run on the demo's DEM (accumulation, stream network and the
watershed of the Schächen at Bürglen), their results added to the map with
the plugin's styles (docs/qgis_result.png).

After tools/demo.sh (the tables) and `make qgis-plugin` (the zip), with
`apt-get install qgis xvfb`:

    eval "$(tools/localpg.sh env)"
    xvfb-run -a -s "-screen 0 1500x950x24" qgis --profiles-path "$(mktemp -d)" --noversioncheck \\
        --nologo --code tools/qgis_screenshots.py

QGIS runs this file once its window is up, and quits when the pictures are
taken.  TG_QGIS_ZIP names another zip, TG_SHOTS another folder than docs/.
The results are written as tables qgis_shot_* of the demo's database and
dropped at the end.
"""
import glob
import os
import traceback

import processing
from PIL import Image
import psycopg2
from psycopg2 import sql
import pyplugin_installer
from qgis.core import (QgsApplication, QgsBilinearRasterResampler, QgsCoordinateReferenceSystem,
                       QgsCoordinateTransform, QgsDataSourceUri, QgsFeature, QgsGeometry, QgsHillshadeRenderer,
                       QgsPointXY, QgsProject, QgsProviderRegistry, QgsRasterLayer, QgsVectorLayer)
from qgis.PyQt.QtCore import Qt, QTimer
from qgis.PyQt.QtWidgets import QApplication, QDockWidget, QLineEdit, QTreeView
from qgis.utils import iface

REPO = os.getcwd()
ZIP = os.environ.get("TG_QGIS_ZIP") or sorted(glob.glob(os.path.join(REPO, "build", "terra_gpu-qgis-*.zip")))[-1]
SHOTS = os.environ.get("TG_SHOTS") or os.path.join(REPO, "docs")
PG = {key: os.environ.get(key, default) for key, default in
      (("PGHOST", "/tmp"), ("PGPORT", "5499"), ("PGUSER", "postgres"), ("PGDATABASE", "terra_gpu"))}
LIBPQ = {"host": PG["PGHOST"], "port": PG["PGPORT"], "user": PG["PGUSER"], "dbname": PG["PGDATABASE"]}
WIDTH, HEIGHT = 1500, 950
RESULTS = ("qgis_shot_accumulation", "qgis_shot_streams", "qgis_shot_watershed")
state = {}


def uri(table, column="rast", key="rid"):
    u = QgsDataSourceUri()
    u.setConnection(PG["PGHOST"], PG["PGPORT"], PG["PGDATABASE"], PG["PGUSER"], "")
    u.setDataSource("public", table, column, "", key)
    return u.uri(False)


def shoot(name, x=0, y=0, width=WIDTH, height=HEIGHT):
    path = os.path.join(SHOTS, name)
    QApplication.primaryScreen().grabWindow(0, x, y, width, height).save(path, "PNG")
    # 256 colours chosen for the picture, not dithered: a fraction of the bytes, and sharp text
    Image.open(path).convert("RGB").quantize(256, Image.MEDIANCUT, dither=Image.NONE).save(path, optimize=True)
    print("wrote %s" % path, flush=True)


def later(seconds, step):
    def guarded():
        try:
            step()
        except Exception:
            traceback.print_exc()
            QgsApplication.exit(1)
    QTimer.singleShot(int(seconds * 1000), guarded)


def install():
    window = iface.mainWindow()
    window.setGeometry(0, 0, WIDTH, HEIGHT)
    # the code path of Plugins › Install from ZIP
    pyplugin_installer.instance().installFromZipFile(ZIP)
    check = QgsApplication.processingRegistry().providerById("terra_gpu")
    assert check is not None, "the plugin did not register its provider"
    metadata = QgsProviderRegistry.instance().providerMetadata("postgres")
    connection = QgsDataSourceUri()
    connection.setConnection(PG["PGHOST"], PG["PGPORT"], PG["PGDATABASE"], PG["PGUSER"], "")
    metadata.saveConnection(metadata.createConnection(connection.uri(False), {}), "terra_gpu demo")

    dem = QgsRasterLayer(uri("alps_dem"), "alps_dem", "postgresraster")
    shade = QgsHillshadeRenderer(dem.dataProvider(), 1, 315, 45)
    shade.setZFactor(1 / 111120)
    shade.setMultiDirectional(True)
    shade.setOpacity(0.6)
    dem.setRenderer(shade)
    dem.resampleFilter().setZoomedInResampler(QgsBilinearRasterResampler())
    QgsProject.instance().addMapLayer(dem)
    state["dem"] = dem
    # the pour point: the Schächen at Bürglen
    outlet = QgsVectorLayer("Point?crs=EPSG:4326", "Schächen at Bürglen", "memory")
    feature = QgsFeature()
    feature.setGeometry(QgsGeometry.fromPointXY(QgsPointXY(8.656, 46.8725)))
    outlet.dataProvider().addFeatures([feature])
    QgsProject.instance().addMapLayer(outlet)
    iface.messageBar().clearWidgets()
    state["outlet"] = outlet
    later(2, toolbox)


def toolbox():
    window = iface.mainWindow()
    window.findChild(QDockWidget, "Browser").hide()
    dock = window.findChild(QDockWidget, "ProcessingToolbox")
    dock.show()
    dock.raise_()
    window.resizeDocks([dock], [400], Qt.Horizontal)
    search = dock.findChild(QLineEdit)
    search.setText("terra_gpu")
    tree = dock.findChild(QTreeView)
    tree.expandAll()
    dialog = processing.createAlgorithmDialog("terra_gpu:stream_links", {
        "INPUT": state["dem"], "threshold": 5e6, "units": "area", "OUTPUT_TABLE": RESULTS[1]})
    dialog.setGeometry(10, 110, 1060, 700)
    dialog.show()
    state["dialog"] = dialog
    later(3, lambda: (shoot("qgis_toolbox.png"), later(0.5, run)))


def run():
    state["dialog"].close()
    dem, outlet = state["dem"], state["outlet"]
    processing.runAndLoadResults("terra_gpu:flow_accumulation", {
        "INPUT": dem, "units": "area", "OUTPUT_TABLE": RESULTS[0], "replace": True})
    processing.runAndLoadResults("terra_gpu:stream_links", {
        "INPUT": dem, "threshold": 5e6, "units": "area", "OUTPUT_TABLE": RESULTS[1], "replace": True})
    processing.runAndLoadResults("terra_gpu:watershed_polygon", {
        "INPUT": dem, "outlet": outlet, "snap": 500, "OUTPUT_TABLE": RESULTS[2], "replace": True})
    shed = QgsProject.instance().mapLayersByName(RESULTS[2])[0]
    # the outlet on top (the results came in above it)
    root = QgsProject.instance().layerTreeRoot()
    node = root.findLayer(outlet.id())
    root.insertChildNode(0, node.clone())
    root.removeChildNode(node)
    iface.layerTreeView().expandAll()
    iface.messageBar().clearWidgets()
    # in UTM 32N, as an analyst of the area would see it (the DEM is in degrees)
    QgsProject.instance().setCrs(QgsCoordinateReferenceSystem("EPSG:32632"))
    extent = shed.extent()
    extent.grow(0.03)
    canvas = iface.mapCanvas()
    canvas.setExtent(QgsCoordinateTransform(shed.crs(), QgsProject.instance().crs(),
                                            QgsProject.instance()).transformBoundingBox(extent))
    canvas.refreshAllLayers()
    later(8, finish)


def finish():
    shoot("qgis_result.png")
    with psycopg2.connect(**LIBPQ) as conn:
        with conn.cursor() as cur:
            for table in RESULTS:
                cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier("public", table)))
    QgsApplication.exit(0)


later(3, install)
