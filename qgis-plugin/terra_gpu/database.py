"""The plugin's side of the wire: a libpq connection made from a QGIS
PostgreSQL URI, statements run asynchronously so that the server's NOTICEs
become progress and Cancel becomes a cancel request, and the server's errors
passed on as the server words them.

Everything sent is composed with psycopg2.sql: identifiers and literals are
quoted by the driver, never pasted into the text.
"""
import configparser
import os
import re
import select

import psycopg2
import psycopg2.extensions
from psycopg2 import sql
from qgis.core import (QgsCoordinateReferenceSystem, QgsDataSourceUri, QgsProcessingException,
                       QgsProviderRegistry)

EXTENSION = "terra_gpu"
# how often a waiting call looks at the Cancel button
POLL_SECONDS = 0.2
# the progress NOTICE of a long call: "tg_fill: <phase> 42% (12.3 s)"
PROGRESS = re.compile(r"^(?P<function>\w+): (?P<phase>.+) (?P<percent>\d+(?:\.\d+)?)% \((?P<seconds>[\d.]+) s\)$")
CANCELED = "57014"


def required_version():
    """The terra_gpu release this plugin was made with, its own version (metadata.txt)."""
    metadata = configparser.ConfigParser()
    metadata.read(os.path.join(os.path.dirname(__file__), "metadata.txt"), encoding="utf-8")
    return metadata["general"]["version"]


def version_tuple(text):
    return tuple(int(part) for part in re.findall(r"\d+", text or ""))


def stored_connection_uri(name):
    """The URI of a PostgreSQL connection stored in QGIS (Browser › PostgreSQL)."""
    connections = QgsProviderRegistry.instance().providerMetadata("postgres").connections()
    if name not in connections:
        raise QgsProcessingException(
            "QGIS has no PostgreSQL connection named \"%s\" (it has: %s)"
            % (name, ", ".join(sorted(connections)) or "none"))
    return QgsDataSourceUri(connections[name].uri())


def connection_keywords(uri):
    """libpq's keywords for a QGIS PostgreSQL URI: service, host, port, database and user as
    given; user and password of an authentication configuration (authcfg) from QGIS's
    authentication database."""
    if uri.authConfigId():
        # the connection part with the configuration's credentials filled in
        uri = QgsDataSourceUri(uri.connectionInfo(True))
    keywords = {"service": uri.service(), "host": uri.host(), "port": uri.port(),
                "dbname": uri.database(), "user": uri.username(), "password": uri.password()}
    if uri.sslMode() != QgsDataSourceUri.SslPrefer:
        keywords["sslmode"] = QgsDataSourceUri.encodeSslMode(uri.sslMode())
    keywords = {key: value for key, value in keywords.items() if value}
    keywords["application_name"] = "QGIS terra_gpu"
    return keywords


def same_database(a, b):
    """Whether two URIs name the same database (a call can only join tables of one)."""
    return all(x == y for x, y in ((a.service(), b.service()), (a.host(), b.host()),
                                   (a.port() or "5432", b.port() or "5432"), (a.database(), b.database())))


def server_error(error):
    """A server error as psql shows it: SQLSTATE, message, detail and hint."""
    diag = error.diag
    if not error.pgcode:
        return str(error).strip()
    lines = ["ERROR %s: %s" % (error.pgcode, diag.message_primary)]
    if diag.message_detail:
        lines.append("DETAIL: " + diag.message_detail)
    if diag.message_hint:
        lines.append("HINT: " + diag.message_hint)
    return "\n".join(lines)


class _NoticeSink:
    """psycopg2 appends each NOTICE to connection.notices as it arrives: hand it on."""

    def __init__(self, handler):
        self.append = handler


class Database:
    """One connection for one algorithm run, closed by close()."""

    def __init__(self, uri, feedback):
        self.feedback = feedback
        self.cancel_sent = False
        keywords = connection_keywords(uri)
        where = ("service " + keywords["service"] if "service" in keywords else
                 "%s:%s" % (keywords.get("host", "localhost"), keywords.get("port", "5432")))
        feedback.pushInfo("Connecting to database %s (%s) as %s" % (
            keywords.get("dbname", "(default)"), where, keywords.get("user", "(default user)")))
        try:
            self.connection = psycopg2.connect(psycopg2.extensions.make_dsn(**keywords), async_=True)
        except psycopg2.Error as e:
            raise QgsProcessingException("Could not connect: " + str(e).strip())
        try:
            try:
                self._wait()
            except psycopg2.Error as e:
                message = str(e).strip()
                if "password" in message and not uri.authConfigId() and not uri.password():
                    message += ("\nQGIS does not hand passwords typed at its prompt to plugins: save the "
                                "password in the connection's settings, use an authentication configuration, "
                                "or a ~/.pgpass file.")
                raise QgsProcessingException("Could not connect: " + message)
            self.connection.notices = _NoticeSink(self._notice)
            self.execute("SET client_min_messages = notice")
            self.schema, self.postgis_schema = self._extension()
        except Exception:
            self.close()
            raise

    def close(self):
        self.connection.close()

    def _wait(self):
        """Wait for the server, listening for Cancel in between."""
        while True:
            state = self.connection.poll()
            if state == psycopg2.extensions.POLL_OK:
                return
            if self.feedback.isCanceled() and not self.cancel_sent:
                self.cancel_sent = True
                if self.connection.status == psycopg2.extensions.STATUS_BEGIN:
                    # still connecting: nothing runs yet
                    raise QgsProcessingException("Canceled before the call started.")
                self.feedback.pushInfo("Canceling: asking the server to stop the call")
                self.connection.cancel()
            fd = self.connection.fileno()
            if state == psycopg2.extensions.POLL_READ:
                select.select([fd], [], [], POLL_SECONDS)
            else:
                select.select([], [fd], [], POLL_SECONDS)

    def _notice(self, text):
        text = re.sub(r"^\w+:\s+", "", text.strip())
        progress = PROGRESS.match(text)
        if progress:
            self.feedback.setProgressText("%s: %s" % (progress["function"], progress["phase"]))
            self.feedback.setProgress(float(progress["percent"]))
        self.feedback.pushInfo(text)

    def execute(self, statement, arguments=None):
        """Run one statement (a psycopg2.sql composition or text with %s placeholders for
        `arguments`) and return its rows."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(statement, arguments)
            self._wait()
            return cursor.fetchall() if cursor.description else []
        except psycopg2.Error as e:
            if e.pgcode == CANCELED and self.cancel_sent:
                raise QgsProcessingException(
                    "Canceled: the server stopped the call and rolled it back (nothing was written).")
            raise QgsProcessingException(server_error(e))
        finally:
            cursor.close()

    def value(self, statement, arguments=None):
        rows = self.execute(statement, arguments)
        return rows[0][0] if rows else None

    def text(self, composable):
        """The SQL text of a composition, quoted for this connection."""
        return composable.as_string(self.connection)

    def _extension(self):
        """The schemas of terra_gpu and PostGIS; a missing or old extension said plainly."""
        required = required_version()
        database = self.value("SELECT current_database()")
        installed = self.execute(
            "SELECT e.extversion, n.nspname FROM pg_catalog.pg_extension e "
            "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = %s", (EXTENSION,))
        available = self.value(
            "SELECT default_version FROM pg_catalog.pg_available_extensions WHERE name = %s", (EXTENSION,))
        if not installed:
            if available:
                raise QgsProcessingException(
                    "Database \"%s\" has no terra_gpu extension. Run, as a user allowed to create "
                    "extensions:\n    CREATE EXTENSION terra_gpu CASCADE;" % database)
            raise QgsProcessingException(
                "The server of database \"%s\" has no terra_gpu extension installed: build and install it "
                "there (make install), then run CREATE EXTENSION terra_gpu CASCADE; in the database." % database)
        version, schema = installed[0]
        if version_tuple(version) < version_tuple(required):
            if available and version_tuple(available) >= version_tuple(required):
                action = "Run, as the extension's owner:\n    ALTER EXTENSION terra_gpu UPDATE;"
            else:
                action = ("Install terra_gpu %s or later on the server (make install), then run "
                          "ALTER EXTENSION terra_gpu UPDATE; in the database." % required)
            raise QgsProcessingException(
                "Database \"%s\" has terra_gpu %s; this plugin needs %s or later. %s"
                % (database, version, required, action))
        postgis = self.value(
            "SELECT n.nspname FROM pg_catalog.pg_extension e "
            "JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'postgis'")
        return schema, postgis

    def require_function(self, name):
        """Stop plainly when this database's terra_gpu lacks a function (an older build)."""
        if not self.value("SELECT EXISTS (SELECT FROM pg_catalog.pg_proc WHERE proname = %s "
                          "AND pronamespace = %s::regnamespace)", (name, self.schema)):
            raise QgsProcessingException(
                "This database's terra_gpu has no function %s: its server runs an older build. Install the "
                "current terra_gpu there (make install) and run ALTER EXTENSION terra_gpu UPDATE;" % name)

    def call(self, function, arguments):
        """A call of one of the extension's functions with named arguments [(name, SQL value)]."""
        return sql.SQL("{}({})").format(sql.Identifier(self.schema, function), sql.SQL(", ").join(
            sql.SQL("{} => {}").format(sql.Identifier(name), value) for name, value in arguments))

    def geometry_type(self):
        return sql.Identifier(self.postgis_schema, "geometry")

    def crs(self, srid):
        """The QGIS CRS of a PostGIS SRID (its authority code, else its WKT)."""
        rows = self.execute(sql.SQL("SELECT auth_name, auth_srid, srtext FROM {} WHERE srid = %s").format(
            sql.Identifier(self.postgis_schema, "spatial_ref_sys")), (srid,))
        if not rows:
            raise QgsProcessingException("SRID %d is not in spatial_ref_sys" % srid)
        auth, code, wkt = rows[0]
        crs = QgsCoordinateReferenceSystem("%s:%s" % (auth, code)) if auth and code else QgsCoordinateReferenceSystem()
        if not crs.isValid() and wkt:
            crs = QgsCoordinateReferenceSystem.fromWkt(wkt)
        if not crs.isValid():
            raise QgsProcessingException("QGIS does not know the CRS of SRID %d" % srid)
        return crs
