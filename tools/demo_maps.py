#!/usr/bin/env python3
"""Maps of the demo's products (tools/demo.sh): each with a title, a legend
(colour bar or key), a scale bar and a hillshade underneath.

    demo_maps.py OUTDIR

reads the GeoTIFFs and GeoJSON files demo.sh exported into OUTDIR and writes
one PNG per product there (256-colour palettes: small files, crisp classes).
The rasters are EPSG:4326, so the axes are stretched by 1/cos(latitude) to
show the ground undistorted, and the scale bar is measured at the map's
centre latitude.
"""
import json
import math
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib import colors  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from mpl_toolkits.axes_grid1 import make_axes_locatable  # noqa: E402
from osgeo import gdal  # noqa: E402
from PIL import Image  # noqa: E402

gdal.UseExceptions()
OUT = sys.argv[1] if len(sys.argv) > 1 else "demo-output"
SOURCE = "SRTM 3\" N46E008 (public domain); computed in PostGIS with terra_gpu"


def read(name):
    ds = gdal.Open(os.path.join(OUT, name))
    b = ds.GetRasterBand(1)
    a = b.ReadAsArray().astype("float64")
    nd = b.GetNoDataValue()
    mask = np.zeros(a.shape, bool) if nd is None else (a == nd)
    x0, dx, _, y0, _, dy = ds.GetGeoTransform()
    extent = (x0, x0 + dx * ds.RasterXSize, y0 + dy * ds.RasterYSize, y0)
    return np.ma.array(a, mask=mask | np.isnan(a)), extent


def geojson(name):
    path = os.path.join(OUT, name)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    return json.load(open(path))


def rings(geom):
    """Exterior and interior rings of a (Multi)Polygon as coordinate arrays."""
    polys = geom["coordinates"] if geom["type"] == "MultiPolygon" else [geom["coordinates"]]
    return [np.array(r) for p in polys for r in p]


def scale_bar(ax, extent):
    x0, x1, y0, y1 = ax.get_xlim() + ax.get_ylim()
    lat = (y0 + y1) / 2
    km_per_deg = 111.32 * math.cos(math.radians(lat))
    width_km = (x1 - x0) * km_per_deg
    step = next(s for s in (1, 2, 5, 10, 20, 25, 50) if s >= width_km / 5)
    bx, by = x0 + 0.05 * (x1 - x0), y0 + 0.05 * (y1 - y0)
    length = step / km_per_deg
    h = 0.012 * (y1 - y0)
    for i in range(2):
        ax.add_patch(plt.Rectangle((bx + i * length / 2, by), length / 2, h,
                                   facecolor="black" if i == 0 else "white", edgecolor="black", lw=0.8, zorder=10))
    for x, t in ((bx, "0"), (bx + length, "%d km" % step)):
        ax.text(x, by + 1.8 * h, t, ha="center", va="bottom", fontsize=8, zorder=10,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.7, pad=1))
    ax.annotate("N", xy=(x1 - 0.05 * (x1 - x0), y1 - 0.04 * (y1 - y0)),
                xytext=(x1 - 0.05 * (x1 - x0), y1 - 0.12 * (y1 - y0)), ha="center", fontsize=10,
                fontweight="bold", arrowprops=dict(arrowstyle="-|>", color="black"), zorder=10)


def figure(title, subtitle, extent, window=None):
    fig, ax = plt.subplots(figsize=(7.6, 6.2), dpi=100)
    shade, ext = read("hillshade.tif")
    # a light hillshade: relief without drowning the data drawn over it
    ax.imshow(shade, extent=ext, cmap="gray", vmin=-120, vmax=255, interpolation="bilinear")
    x0, x1, y0, y1 = window or extent
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect(1 / math.cos(math.radians((y0 + y1) / 2)))
    ax.set_title(subtitle, fontsize=8, loc="left", color="#333")
    ax.annotate(title, xy=(0, 1), xycoords="axes fraction", xytext=(0, 16), textcoords="offset points",
                fontsize=13, fontweight="bold", va="bottom")
    ax.set_xlabel("longitude (°E)", fontsize=8)
    ax.set_ylabel("latitude (°N)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.text(0, -0.09, SOURCE, transform=ax.transAxes, fontsize=6.5, color="#555", va="top")
    return fig, ax


def colorbar(fig, ax, im, label, ticks=None):
    cax = make_axes_locatable(ax).append_axes("right", size="3.5%", pad=0.12)
    cb = fig.colorbar(im, cax=cax, ticks=ticks, spacing="uniform")
    if ticks is not None:
        cb.set_ticklabels(["%g" % t for t in ticks])
    cb.set_label(label, fontsize=9)
    cb.ax.tick_params(labelsize=8)
    return cb


def maxpool(a, k):
    """Largest value of each k x k block: streams one cell wide stay visible on a small map."""
    h, w = (a.shape[0] // k) * k, (a.shape[1] // k) * k
    return a[:h, :w].reshape(h // k, k, w // k, k).max(axis=(1, 3))


def save(fig, ax, name):
    scale_bar(ax, None)
    path = os.path.join(OUT, name)
    fig.savefig(path, bbox_inches="tight", pad_inches=0.12)
    plt.close(fig)
    # an adaptive 256-colour palette: a quarter of the RGB file, no visible loss on these maps
    Image.open(path).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print("  %s (%d KB)" % (path, os.path.getsize(path) // 1024))


def outlet_marker(ax, meta):
    x, y = meta["outlet"]
    ax.plot(x, y, marker="o", ms=7, mfc="red", mec="white", mew=1.5, zorder=9)
    ax.annotate("outlet", (x, y), xytext=(6, -10), textcoords="offset points", fontsize=8, color="red",
                fontweight="bold", zorder=9)


def main():
    meta = json.load(open(os.path.join(OUT, "demo.json")))

    dem, ext = read("alps_filled.tif")
    fig, ax = figure("Depression-filled DEM", "tg_fill(coverage => 'alps_dem'): %s cells raised; SRTM voids interpolated before loading"
                     % format(meta["raised_cells"], ","), ext)
    im = ax.imshow(dem, extent=ext, cmap="terrain", vmin=0, vmax=4200, alpha=0.55, interpolation="nearest")
    colorbar(fig, ax, im, "elevation (m)")
    save(fig, ax, "alps_filled.png")

    acc, ext = read("alps_accumulation.tif")
    km2 = acc / 1e6
    bounds = [0.5, 2, 10, 50, 250, 2000]
    fig, ax = figure("Flow accumulation", "tg_flow_accumulation(coverage => 'alps_dem', units => 'area'), D8: upslope area",
                     ext)
    cmap = colors.ListedColormap(["#9ecae1", "#4292c6", "#2171b5", "#08519c", "#08306b"])
    x0, x1, y0, y1 = ext
    k = 3
    pooled = maxpool(km2.filled(0), k)
    ext_k = (x0, x0 + (x1 - x0) * pooled.shape[1] * k / km2.shape[1], y1 - (y1 - y0) * pooled.shape[0] * k / km2.shape[0], y1)
    im = ax.imshow(np.ma.masked_less(pooled, bounds[0]), extent=ext_k, cmap=cmap,
                   norm=colors.BoundaryNorm(bounds, cmap.N), interpolation="nearest")
    colorbar(fig, ax, im, "upslope area (km², log classes)", ticks=bounds)
    outlet_marker(ax, meta)
    save(fig, ax, "alps_accumulation.png")

    tt, ext = read("alps_travel_time.tif")
    hours = tt / 3600
    step = meta["interval_s"] / 3600
    nb = max(1, int(math.ceil(float(hours.max()) / step)))
    bounds = [i * step for i in range(nb + 1)]
    shed = geojson("alps_watershed.geojson")
    xs = np.concatenate([r[:, 0] for r in rings(shed)])
    ys = np.concatenate([r[:, 1] for r in rings(shed)])
    pad = 0.08 * max(xs.max() - xs.min(), ys.max() - ys.min())
    window = (xs.min() - pad, xs.max() + pad, ys.min() - pad, ys.max() + pad)
    fig, ax = figure("Watershed (%s km²) and isochrones of the Reuss at Amsteg"
                     % format(round(meta["watershed_km2"]), ","),
                     "tg_watershed_polygon, tg_isochrones(coverage => 'alps_dem', outlet => ..., interval => %d min)"
                     % (meta["interval_s"] // 60), ext, window)
    cmap = plt.get_cmap("plasma_r", nb)
    im = ax.imshow(hours, extent=ext, cmap=cmap, norm=colors.BoundaryNorm(bounds, cmap.N), alpha=0.7,
                   interpolation="nearest")
    colorbar(fig, ax, im, "travel time to the outlet (h)", ticks=bounds)
    # the stream links, wider with each Strahler order
    streams = json.load(open(os.path.join(OUT, "alps_streams.json")))
    for order, line in streams:
        xy = np.array(line["coordinates"])
        ax.plot(xy[:, 0], xy[:, 1], color="#08519c", lw=0.4 + 0.5 * order, solid_capstyle="round")
    for r in rings(shed):
        ax.plot(r[:, 0], r[:, 1], color="black", lw=1.2)
    outlet_marker(ax, meta)
    ax.legend(handles=[Patch(facecolor="none", edgecolor="black", label="watershed"),
                       Line2D([], [], color="#08519c", lw=1.9, label="tg_stream_links (> 5 km², width: Strahler order)")],
              loc="upper left", fontsize=8)
    save(fig, ax, "alps_watershed.png")

    slope, ext = read("alps_slope.tif")
    fig, ax = figure("Slope", "tg_slope(coverage => 'alps_dem', scale => 111120), Horn (1981)", ext)
    cmap = plt.get_cmap("YlOrRd", 7)
    bounds = [0, 10, 20, 30, 40, 50, 60, 90]
    im = ax.imshow(slope, extent=ext, cmap=cmap, norm=colors.BoundaryNorm(bounds, cmap.N), alpha=0.75,
                   interpolation="nearest")
    colorbar(fig, ax, im, "slope (degrees)", ticks=bounds)
    save(fig, ax, "alps_slope.png")

    vis, ext = read("alps_viewshed.tif")
    fig, ax = figure("Viewshed from the Finsteraarhorn (%d m)" % meta["peak_m"],
                     "tg_viewshed(coverage => 'alps_dem', observer_height => 2): R2, Earth curvature and refraction",
                     ext)
    ax.imshow(np.ma.masked_not_equal(vis, 1), extent=ext, cmap=colors.ListedColormap(["#f4a300"]), alpha=0.75,
              interpolation="nearest")
    x, y = meta["peak"]
    ax.plot(x, y, marker="^", ms=10, mfc="black", mec="white", mew=1.5, zorder=9)
    ax.legend(handles=[Patch(facecolor="#f4a300", alpha=0.75, label="visible (%.0f %% of the tile)" % meta["visible_pct"]),
                       Patch(facecolor="white", edgecolor="#888", label="hidden (not coloured)"),
                       plt.Line2D([], [], marker="^", color="none", mfc="black", ms=9, label="observer")],
              loc="upper left", fontsize=8)
    save(fig, ax, "alps_viewshed.png")

    roi, ext = read("alps_roi.tif")
    fig, ax = figure("Region of interest: above %d m and flatter than %d°" % (meta["roi_min_m"], meta["roi_max_deg"]),
                     "tg_bmmq_roi(ARRAY['alps_elevation', 'alps_steepness'], ..., 'and'): "
                     "%s km² in %.1f s" % (format(round(meta["roi_km2"]), ","), meta["roi_ms"] / 1000), ext)
    ax.imshow(np.ma.masked_not_equal(roi, 1), extent=ext, cmap=colors.ListedColormap(["#00a884"]),
              interpolation="nearest")
    ax.legend(handles=[Patch(facecolor="#00a884", label="elevation ≥ %d m and slope < %d°"
                             % (meta["roi_min_m"], meta["roi_max_deg"]))], loc="upper left", fontsize=8)
    save(fig, ax, "alps_roi.png")


if __name__ == "__main__":
    main()
