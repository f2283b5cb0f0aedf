"""terra_gpu for QGIS: a Processing provider whose algorithms run terra_gpu's
coverage functions on the server that holds the rasters."""


def classFactory(iface):
    from .plugin import TerraGpuPlugin
    return TerraGpuPlugin(iface)
