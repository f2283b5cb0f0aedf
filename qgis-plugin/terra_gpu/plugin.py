from qgis.core import QgsApplication

from .provider import TerraGpuProvider


class TerraGpuPlugin:
    """Registers the Processing provider (also under qgis_process: hasProcessingProvider=yes)."""

    def __init__(self, iface):
        self.provider = None

    def initProcessing(self):
        self.provider = TerraGpuProvider()
        QgsApplication.processingRegistry().addProvider(self.provider)

    def initGui(self):
        self.initProcessing()

    def unload(self):
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None
