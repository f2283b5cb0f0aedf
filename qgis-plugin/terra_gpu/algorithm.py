"""One Processing algorithm per entry of algorithms.ALGORITHMS.

A run connects to the input's database, composes the coverage-form call
from the parameters, has the server write it with tg_create_result (the
rasters never travel to QGIS) and adds the new table's layers to the project,
styled.
"""
import os

from psycopg2 import sql
from qgis.core import (QgsDataSourceUri, QgsProcessingAlgorithm, QgsProcessingContext,
                       QgsProcessingException, QgsProcessingOutputRasterLayer, QgsProcessingOutputString,
                       QgsProcessingOutputVectorLayer, QgsProcessingParameterDatabaseSchema,
                       QgsProcessingParameterDatabaseTable, QgsProcessingParameterDefinition,
                       QgsProcessingParameterProviderConnection, QgsProcessingParameterRasterLayer,
                       QgsProcessingParameterString, QgsRasterLayer, QgsVectorLayer)

from .algorithms import COVERAGE, EACH_POINT, GEOMETRY, INDEX, RESULT_ARGUMENTS, ROWS, TILES, VALUE
from .arguments import Choice, given
from .database import Database, same_database, stored_connection_uri

STYLES = os.path.join(os.path.dirname(__file__), "styles")

INPUT = "INPUT"
CONNECTION = "CONNECTION"
SCHEMA = "SCHEMA"
INPUT_TABLE = "INPUT_TABLE"
OUTPUT_TABLE = "OUTPUT_TABLE"
OUTPUT = "OUTPUT"


class Table:
    """A raster table in the database: schema, name, raster column and tile key (may be empty)."""

    def __init__(self, schema, name, column, key=""):
        self.schema, self.name, self.column, self.key = schema, name, column, key


class TerraGpuAlgorithm(QgsProcessingAlgorithm):
    def __init__(self, description):
        super().__init__()
        self.description = description

    def createInstance(self):
        return TerraGpuAlgorithm(self.description)

    def name(self):
        return self.description.name

    def displayName(self):
        return self.description.title

    def group(self):
        return self.description.group

    def groupId(self):
        return self.description.group.lower().replace(" ", "_").replace("-", "_")

    def shortHelpString(self):
        d = self.description
        where = {COVERAGE: "the input table's database", INDEX: "the connection's database"}[d.source]
        how = ("The server writes the result table with tg_create_result (the rasters never travel to QGIS), "
               "which is then added to the project." if d.writes_table else "")
        return ("%s\n\nRuns %s on %s. %s Parameters are the function's arguments, with its defaults."
                % (d.help, d.function, where, how))

    def output_name(self, column):
        return OUTPUT if len(self.description.columns) == 1 else column.upper()

    def initAlgorithm(self, config=None):
        d = self.description
        if d.source == COVERAGE:
            # optional only because a connection's table may stand in for it (checkParameterValues)
            self.addParameter(QgsProcessingParameterRasterLayer(
                INPUT, d.input_label + ": a PostGIS raster layer (or a table, under Advanced)", None, True))
            for parameter in (
                    QgsProcessingParameterProviderConnection(
                        CONNECTION, "Database connection (instead of a layer)", "postgres", None, True),
                    QgsProcessingParameterDatabaseSchema(SCHEMA, "Schema (instead of a layer)", CONNECTION, None, True),
                    QgsProcessingParameterDatabaseTable(
                        INPUT_TABLE, "Raster table (instead of a layer)", CONNECTION, SCHEMA, None, True)):
                parameter.setFlags(parameter.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
                self.addParameter(parameter)
        else:
            self.addParameter(QgsProcessingParameterProviderConnection(CONNECTION, "Database connection", "postgres"))
        for name, argument in d.arguments.items():
            for parameter in argument.parameters(name):
                self.addParameter(parameter)
        if d.result == VALUE:
            self.addOutput(QgsProcessingOutputString(OUTPUT, "Result of " + d.function))
            return
        self.addParameter(QgsProcessingParameterString(
            OUTPUT_TABLE, "Result table, or schema.table (empty: the input's name + \"_%s\")" % d.name,
            None, False, True))
        for name, argument in RESULT_ARGUMENTS.items():
            for parameter in argument.parameters(name):
                self.addParameter(parameter)
        self.addOutput(QgsProcessingOutputString(OUTPUT_TABLE, "Result table"))
        for column in d.columns:
            title = "%s (%s)" % (d.title, column) if len(d.columns) > 1 else d.title
            output = QgsProcessingOutputRasterLayer if d.result == TILES else QgsProcessingOutputVectorLayer
            self.addOutput(output(self.output_name(column), title))

    def checkParameterValues(self, parameters, context):
        if self.description.source == COVERAGE and not given(parameters, INPUT) and not (
                given(parameters, CONNECTION) and given(parameters, INPUT_TABLE)):
            return False, "Choose a PostGIS raster layer, or a connection and one of its raster tables."
        return super().checkParameterValues(parameters, context)

    def processAlgorithm(self, parameters, context, feedback):
        run = Run(self, parameters, context, feedback)
        try:
            run.connect()
            return run.call()
        finally:
            run.close()


class Run:
    """One run of an algorithm: its connection and what it reads and writes."""

    def __init__(self, algorithm, parameters, context, feedback):
        self.algorithm, self.parameters, self.context, self.feedback = algorithm, parameters, context, feedback
        self.description = algorithm.description
        self.db = None
        self.input = None
        self._srid = None
        self._crs = None

    def connect(self):
        """The input's connection (its layer's, or the stored connection's) and the input table."""
        algorithm, parameters, context, feedback = self.algorithm, self.parameters, self.context, self.feedback
        if self.description.source == COVERAGE and given(parameters, INPUT):
            layer = algorithm.parameterAsRasterLayer(parameters, INPUT, context)
            self.uri = self.postgis_uri(layer, INPUT)
            self.input = Table(self.uri.schema() or "public", self.uri.table(), self.uri.geometryColumn() or "rast",
                               self.uri.keyColumn())
            if self.uri.sql():
                feedback.pushWarning("The layer's filter (%s) does not apply: %s reads the whole table."
                                     % (self.uri.sql(), self.description.function))
        else:
            self.uri = stored_connection_uri(algorithm.parameterAsConnectionName(parameters, CONNECTION, context))
        self.db = Database(self.uri, feedback)
        if self.description.source == COVERAGE and self.input is None:
            schema = algorithm.parameterAsSchema(parameters, SCHEMA, context) or "public"
            name = algorithm.parameterAsDatabaseTableName(parameters, INPUT_TABLE, context)
            self.input = Table(schema, name, self.raster_column(schema, name))

    def close(self):
        if self.db is not None:
            self.db.close()

    def postgis_uri(self, layer, parameter):
        if layer is None or layer.providerType() != "postgresraster":
            raise QgsProcessingException(
                "%s: %s is not a PostGIS raster layer; add the table from a PostgreSQL connection "
                "(Browser › PostgreSQL)" % (parameter, layer.name() if layer else "the value"))
        return QgsDataSourceUri(layer.source())

    def raster_column(self, schema, name):
        columns = [row[0] for row in self.db.execute(
            "SELECT a.attname FROM pg_catalog.pg_attribute a WHERE a.attrelid = %s::regclass AND a.attnum > 0 "
            "AND NOT a.attisdropped AND a.atttypid = %s::regtype ORDER BY a.attnum",
            (self.db.text(sql.Identifier(schema, name)),
             self.db.text(sql.Identifier(self.db.postgis_schema, "raster"))))]
        if not columns:
            raise QgsProcessingException("%s.%s has no raster column" % (schema, name))
        return "rast" if "rast" in columns else columns[0]

    def raster_table(self, parameter):
        """The table of a raster layer parameter (None if not given); it must be in the input's database."""
        if not given(self.parameters, parameter):
            return None
        uri = self.postgis_uri(self.algorithm.parameterAsRasterLayer(self.parameters, parameter, self.context),
                               parameter)
        if not same_database(uri, self.uri):
            raise QgsProcessingException("%s: the table %s is in another database than the input" % (
                parameter, uri.table()))
        return Table(uri.schema() or "public", uri.table(), uri.geometryColumn() or "rast")

    def regclass(self, table):
        return sql.SQL("{}::regclass").format(sql.Literal(self.db.text(sql.Identifier(table.schema, table.name))))

    @property
    def srid(self):
        """The SRID points and windows are sent in: the input's, or the BMMQ index's."""
        if self._srid is None:
            if self.description.source == COVERAGE:
                self._srid = self.db.value(sql.SQL("SELECT {}({}) FROM {} WHERE {} IS NOT NULL LIMIT 1").format(
                    sql.Identifier(self.db.postgis_schema, "st_srid"), sql.Identifier(self.input.column),
                    sql.Identifier(self.input.schema, self.input.name), sql.Identifier(self.input.column)))
                if self._srid is None:
                    raise QgsProcessingException("%s.%s has no tiles" % (self.input.schema, self.input.name))
            else:
                name = self.algorithm.parameterAsString(self.parameters, "name", self.context)
                self._srid = self.db.value("SELECT srid FROM terra_gpu.bmmq_index WHERE name = %s", (name,))
                if self._srid is None:
                    raise QgsProcessingException('BMMQ index "%s" does not exist' % name)
        return self._srid

    @property
    def crs(self):
        if self._crs is None:
            self._crs = self.db.crs(self.srid)
        return self._crs

    def call(self):
        d, db = self.description, self.db
        db.require_function(d.function)
        arguments = []
        if d.source == COVERAGE:
            arguments += [("coverage", self.regclass(self.input)), ("rast_column", sql.Literal(self.input.column))]
            if self.input.key:
                arguments.append(("id_column", sql.Literal(self.input.key)))
        points = None
        for name, argument in d.arguments.items():
            if d.result == EACH_POINT and name == "point":
                points = argument.points(name, self)
                arguments.append((name, sql.SQL("o.point")))
            else:
                arguments += argument.sql(name, self)
        call = db.call(d.function, arguments)
        if d.result == VALUE:
            statement = sql.SQL("SELECT {}").format(call)
            self.feedback.pushCommandInfo(db.text(statement))
            value = db.value(statement)
            self.feedback.pushInfo("%s returned %s" % (d.function, value))
            return {OUTPUT: str(value)}
        if d.result in (TILES, ROWS):
            query = sql.SQL("SELECT * FROM {}").format(call)
        elif d.result == GEOMETRY:
            query = sql.SQL("SELECT {} AS geom").format(call)
        elif d.result == EACH_POINT:
            query = sql.SQL("SELECT o.fid, {} AS geom FROM unnest({}::bigint[], {}) AS o(fid, point)").format(
                call, sql.Literal([fid for fid, _ in points]),
                d.arguments["point"].array(points, self))
        return self.write(query)

    def result_name(self):
        """The result table's name for tg_create_result: the one given (in the input's schema when
        unqualified), else the input's name and the algorithm's."""
        if given(self.parameters, OUTPUT_TABLE):
            name = self.algorithm.parameterAsString(self.parameters, OUTPUT_TABLE, self.context).strip()
        else:
            # the input's name, or the BMMQ index's
            base = self.input.name if self.input is not None else (
                self.algorithm.parameterAsString(self.parameters, "name", self.context) or "terra_gpu")
            name = self.db.text(sql.Identifier(base + "_" + self.description.name))
        parts = self.db.value("SELECT pg_catalog.parse_ident(%s)", (name,))
        if len(parts) == 1 and self.input is not None:
            return self.db.text(sql.Identifier(self.input.schema, parts[0]))
        return name

    def write(self, query):
        d, db = self.description, self.db
        arguments = [("name", sql.Literal(self.result_name())), ("query", sql.Literal(db.text(query)))]
        for name, argument in RESULT_ARGUMENTS.items():
            arguments += argument.sql(name, self)
        statement = sql.SQL("SELECT {}::oid").format(db.call("tg_create_result", arguments))
        self.feedback.pushCommandInfo(db.text(statement))
        oid = db.value(statement)
        self.feedback.setProgress(100)
        schema, table = db.execute("SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN "
                                   "pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s", (oid,))[0]
        columns = [row[0] for row in db.execute(
            "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
            (oid,))]
        rows = db.value(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table)))
        qualified = "%s.%s" % (schema, table)
        self.feedback.pushInfo("Wrote %s: %d rows" % (qualified, rows))
        results = {OUTPUT_TABLE: qualified}
        if rows == 0:
            self.feedback.pushWarning("The result is empty: no layer added.")
            return results
        # the words chosen, which pick a style
        values = {name: self.algorithm.parameterAsEnumString(self.parameters, name, self.context)
                  for name, argument in d.arguments.items() if isinstance(argument, Choice)}
        for column in d.columns:
            if column not in columns:
                continue        # a product not asked for (tg_terrain)
            uri = QgsDataSourceUri(self.uri.connectionInfo(False))
            uri.setDataSource(schema, table, column, "", "rid" if "rid" in columns else "id")
            title = table if len(d.columns) == 1 else "%s %s" % (table, column)
            if d.result == TILES:
                layer = QgsRasterLayer(uri.uri(False), title, "postgresraster")
            else:
                layer = QgsVectorLayer(uri.uri(False), title, "postgres")
            if not layer.isValid():
                self.feedback.pushWarning("QGIS could not open %s (%s)" % (title, layer.error().summary()))
                continue
            style = d.styles.get(column)
            style_file = style.choose(values) if style else None
            if style_file:
                message, ok = layer.loadNamedStyle(os.path.join(STYLES, style_file))
                if not ok:
                    self.feedback.pushWarning("Style %s: %s" % (style_file, message))
            self.context.temporaryLayerStore().addMapLayer(layer)
            name = self.algorithm.output_name(column)
            self.context.addLayerToLoadOnCompletion(
                layer.id(), QgsProcessingContext.LayerDetails(title, self.context.project(), name))
            results[name] = layer.id()
        return results
