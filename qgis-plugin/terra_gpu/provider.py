import os

from qgis.core import QgsProcessingProvider
from qgis.PyQt.QtGui import QIcon

from .algorithm import TerraGpuAlgorithm
from .algorithms import ALGORITHMS
from .database import required_version


class TerraGpuProvider(QgsProcessingProvider):
    def id(self):
        return "terra_gpu"

    def name(self):
        return "terra_gpu"

    def longName(self):
        return "terra_gpu %s: GPU terrain analysis in PostGIS" % required_version()

    def icon(self):
        return QIcon(os.path.join(os.path.dirname(__file__), "icon.svg"))

    def loadAlgorithms(self):
        for description in ALGORITHMS:
            self.addAlgorithm(TerraGpuAlgorithm(description))
