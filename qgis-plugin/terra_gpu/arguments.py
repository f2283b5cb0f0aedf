"""Kinds of SQL function arguments as Processing parameters.

An Argument stands for one named argument of a terra_gpu function (sometimes
with its companions, such as a weight table's raster column): it makes the
Processing parameters a dialog shows, under the argument's own name, and turns
what the user chose into the SQL value of that argument.  Its default is the
SQL default (None for DEFAULT NULL, REQUIRED where the function has none):
the tests compare them with the installed functions.
"""
from psycopg2 import sql
from qgis.core import (QgsCoordinateTransform, QgsProcessing, QgsProcessingException,
                       QgsProcessingParameterBoolean, QgsProcessingParameterDefinition,
                       QgsProcessingParameterEnum, QgsProcessingParameterExtent,
                       QgsProcessingParameterFeatureSource, QgsProcessingParameterMatrix,
                       QgsProcessingParameterNumber, QgsProcessingParameterRasterLayer,
                       QgsProcessingParameterString)


class Required:
    """The default of an argument the SQL function has no default for."""

    def __repr__(self):
        return "REQUIRED"


REQUIRED = Required()


def given(parameters, name):
    """Whether the user gave a value (an optional parameter left empty is not one)."""
    value = parameters.get(name)
    return value is not None and value != ""


class Argument:
    def __init__(self, label, default=None, advanced=False):
        self.label = label
        self.default = default
        self.advanced = advanced

    @property
    def optional(self):
        return self.default is None

    @property
    def initial(self):
        """The value a dialog starts with."""
        return None if self.default is REQUIRED else self.default

    # the SQL arguments this one fills besides its own name
    companions = ()

    def parameters(self, name):
        """The Processing parameters of the argument, the first named as it."""
        raise NotImplementedError

    def sql(self, name, run):
        """[(SQL argument name, SQL value)]: the value chosen, else the default; none, which leaves
        the argument to the server, when that is empty."""
        value = self.read(name, run) if given(run.parameters, name) else self.initial
        return [] if value is None else [(name, self.literal(value))]

    def read(self, name, run):
        """The value the user gave the parameter."""
        raise NotImplementedError

    def literal(self, value):
        return sql.Literal(value)

    def _finish(self, parameter):
        if self.advanced:
            parameter.setFlags(parameter.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
        return parameter


def double(value):
    return sql.SQL("{}::double precision").format(sql.Literal(float(value)))


class Number(Argument):
    number_type = QgsProcessingParameterNumber.Double

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterNumber(
            name, self.label, self.number_type, self.initial, self.optional))]

    def read(self, name, run):
        return run.algorithm.parameterAsDouble(run.parameters, name, run.context)

    def literal(self, value):
        return double(value)


class Integer(Number):
    number_type = QgsProcessingParameterNumber.Integer

    def read(self, name, run):
        return run.algorithm.parameterAsInt(run.parameters, name, run.context)

    def literal(self, value):
        return sql.Literal(value)


class Bound(Number):
    """One end of a value range: a number, or left empty for no bound (-Infinity or Infinity)."""

    def __init__(self, label, unbounded):
        super().__init__(label, REQUIRED)
        self.unbounded = unbounded

    @property
    def optional(self):
        return True

    def sql(self, name, run):
        return super().sql(name, run) or [(name, double(self.unbounded))]


class Boolean(Argument):
    def parameters(self, name):
        return [self._finish(QgsProcessingParameterBoolean(name, self.label, self.initial, self.optional))]

    def read(self, name, run):
        return run.algorithm.parameterAsBool(run.parameters, name, run.context)


class Choice(Argument):
    """One word of a fixed vocabulary; the value is the word itself."""

    def __init__(self, label, options, default=None, advanced=False):
        super().__init__(label, default, advanced)
        self.options = list(options)

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterEnum(
            name, self.label, self.options, False, self.initial, self.optional, True))]

    def read(self, name, run):
        return run.algorithm.parameterAsEnumString(run.parameters, name, run.context)


class Choices(Choice):
    """Several words of a fixed vocabulary, as a text[]; the default is a list of them."""

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterEnum(
            name, self.label, self.options, True, self.initial, self.optional, True))]

    def read(self, name, run):
        return run.algorithm.parameterAsEnumStrings(run.parameters, name, run.context) or None

    def literal(self, value):
        return sql.SQL("{}::text[]").format(sql.Literal(list(value)))


class Text(Argument):
    def parameters(self, name):
        return [self._finish(QgsProcessingParameterString(name, self.label, self.initial, False, self.optional))]

    def read(self, name, run):
        return run.algorithm.parameterAsString(run.parameters, name, run.context)


class Numbers(Argument):
    """A list of numbers, typed as "1000, 1500, 2000"."""

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterString(name, self.label, None, False, True))]

    def read(self, name, run):
        text = run.algorithm.parameterAsString(run.parameters, name, run.context)
        try:
            return [float(word) for word in text.replace(";", ",").split(",") if word.strip()] or None
        except ValueError:
            raise QgsProcessingException("%s: \"%s\" is not a list of numbers separated by commas" % (self.label, text))

    def literal(self, value):
        return sql.SQL("{}::double precision[]").format(sql.Literal(value))


class Points(Argument):
    """The points of a point layer (its selection where asked), in the raster's SRID."""

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterFeatureSource(
            name, self.label, [QgsProcessing.TypeVectorPoint], None, self.optional))]

    def points(self, name, run):
        """[(feature id, EWKT)] of every point of the layer (None without a layer; none is an error)."""
        source = run.algorithm.parameterAsSource(run.parameters, name, run.context)
        if source is None:
            return None
        transform = QgsCoordinateTransform(source.sourceCrs(), run.crs, run.context.transformContext())
        points = []
        for feature in source.getFeatures():
            geometry = feature.geometry()
            if geometry.isEmpty():
                continue
            geometry.transform(transform)
            for part in geometry.constParts():
                points.append((feature.id(), "SRID=%d;POINT(%r %r)" % (run.srid, part.x(), part.y())))
        if not points:
            raise QgsProcessingException("%s: the layer has no points" % self.label)
        return points

    def array(self, points, run):
        return sql.SQL("ARRAY[{}]::{}[]").format(
            sql.SQL(", ").join(sql.Literal(ewkt) for _, ewkt in points), run.db.geometry_type())

    def sql(self, name, run):
        points = self.points(name, run)
        return [] if points is None else [(name, self.array(points, run))]


class Point(Points):
    """One point: a point layer holding exactly one (or with one selected)."""

    def sql(self, name, run):
        points = self.points(name, run)
        if points is None:
            return []
        if len(points) != 1:
            raise QgsProcessingException(
                "%s: the layer has %d points; this takes one (select it and tick \"Selected features only\")"
                % (self.label, len(points)))
        return [(name, sql.SQL("{}::{}").format(sql.Literal(points[0][1]), run.db.geometry_type()))]


class Raster(Argument):
    """Another PostGIS raster table on the same grid, in the same database (the layer's
    raster column goes into the companion argument)."""

    def __init__(self, label, column_argument, advanced=False):
        super().__init__(label, None, advanced)
        self.column_argument = column_argument
        self.companions = (column_argument,)

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterRasterLayer(name, self.label, None, True))]

    def sql(self, name, run):
        table = run.raster_table(name)
        if table is None:
            return []
        return [(name, run.regclass(table)), (self.column_argument, sql.Literal(table.column))]


class Factor(Number):
    """A number, or a PostGIS raster table on the DEM's grid (band 1 of its raster column
    "rast"), which then takes the number's place."""

    def parameters(self, name):
        # the number may stay empty when the raster is given
        number = self._finish(QgsProcessingParameterNumber(
            name, self.label, self.number_type, self.initial, True))
        raster = self._finish(QgsProcessingParameterRasterLayer(
            name + "_raster", self.label + " as a raster table (instead of the number)", None, True))
        return [number, raster]

    def sql(self, name, run):
        table = run.raster_table(name + "_raster")
        if table is not None:
            if table.column != "rast":
                raise QgsProcessingException(
                    "%s: the factor's raster column must be named rast, not %s" % (self.label, table.column))
            return [(name, run.regclass(table))]
        arguments = super().sql(name, run)
        if not arguments and self.default is REQUIRED:
            raise QgsProcessingException("%s: give a number or a raster table" % self.label)
        return arguments


class Extent(Argument):
    """A map window, as a rectangle in the raster's SRID."""

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterExtent(name, self.label, None, self.optional))]

    def sql(self, name, run):
        if not given(run.parameters, name):
            return []
        box = run.algorithm.parameterAsExtent(run.parameters, name, run.context, run.crs)
        return [(name, sql.SQL("{}({}, {}, {}, {}, {})").format(
            sql.Identifier(run.db.postgis_schema, "st_makeenvelope"),
            *(double(v) for v in (box.xMinimum(), box.yMinimum(), box.xMaximum(), box.yMaximum())),
            sql.Literal(run.srid)))]


class IndexRanges(Argument):
    """Rows of (BMMQ index, from, to) as three arrays: the indexes' names and the value
    ranges' ends (an empty end: no bound)."""

    companions = ("lo", "hi")

    def parameters(self, name):
        return [self._finish(QgsProcessingParameterMatrix(
            name, self.label, 1, False, ["BMMQ index", "from", "to"], None, self.optional))]

    def sql(self, name, run):
        values = run.algorithm.parameterAsMatrix(run.parameters, name, run.context)
        if not values or len(values) % 3:
            raise QgsProcessingException("%s: give rows of three cells (index, from, to)" % self.label)
        rows = [values[i:i + 3] for i in range(0, len(values), 3)]

        def bound(value, unbounded):
            text = str(value if value is not None else "").strip()
            try:
                return float(text) if text else float(unbounded)
            except ValueError:
                raise QgsProcessingException("%s: \"%s\" is not a number" % (self.label, text))
        names = [str(row[0]).strip() for row in rows]
        return [(name, sql.SQL("{}::text[]").format(sql.Literal(names))),
                ("lo", sql.SQL("{}::double precision[]").format(sql.Literal([bound(r[1], "-Infinity") for r in rows]))),
                ("hi", sql.SQL("{}::double precision[]").format(sql.Literal([bound(r[2], "Infinity") for r in rows])))]
