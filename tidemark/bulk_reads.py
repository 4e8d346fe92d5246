"""Connections that read many rows of a source: mysqlclient, libmariadb's C row parser.

A bootstrap reads every row of a table through a ``SELECT``. PyMySQL parses each row in Python:
measured here on the sysbench table, 290k rows/s for a plain ``SELECT``, about 60% of a
bootstrap's time, with the interpreter lock held throughout, so parallel readers did not add up.
mysqlclient parses them in C, 1.1M rows/s buffered, and lets go of the lock while it waits for
the server (bench/README.md, "Row reads in C"). Everything else (the stream, control queries,
start checks) stays on PyMySQL (``tidemark.source``): one statement at a time, where the parser
costs nothing.

The rows come in PyMySQL's forms, which ``ingest.schema.select_values`` documents and brings to
the binlog's: mysqlclient's own converters differ for temporal values only (a zero or impossible
date becomes None, which would store a NULL), so those are PyMySQL's converters, called with
the same text.

A bootstrap's connections may run in a MySQL resource group (``resource_group``): the server
then schedules the threads serving them at the group's priority. Measured here with sysbench
saturating the server's core, a bootstrap at priority 19 cost it 2% of its TPS (median of 7
trials; 0% to 4%) against 17% at the default priority, and still read at full speed when the
server was idle (bench/README.md).

TLS follows the source's ``ssl_mode`` as PyMySQL's connections do (``_tls``). For PREFERRED
(TLS when the server offers it, verifying nothing), libmariadb only asks for TLS when a TLS
option is set; the cipher list ``DEFAULT`` is OpenSSL's own, so setting it turns TLS on without
narrowing it.
"""

from __future__ import annotations

import ssl
from typing import Any

import MySQLdb
import MySQLdb.connections
import MySQLdb.converters
import MySQLdb.cursors
import pymysql
from MySQLdb.constants import FIELD_TYPE
from pymysql import converters as pymysql_converters

from tidemark.errors import TerminalError
from tidemark.source import SourceConnection, SslMode

#: the system's CA certificates, where OpenSSL looks for them: a bundle file, or a folder
_SYSTEM_CA_FILE = ssl.get_default_verify_paths().cafile
_SYSTEM_CA_PATH = ssl.get_default_verify_paths().capath or "/etc/ssl/certs"

#: CR_SSL_CONNECTION_ERROR, as libmariadb reports a TLS failure
_SSL_CONNECTION_ERROR = 2026

#: what a server answers SET RESOURCE GROUP with when the setting, not the moment, is wrong:
#: access denied, no such group, group disabled, resource groups unsupported (MySQL's thread
#: pool), binding failed; and a syntax error, from a server without them (MariaDB)
_RESOURCE_GROUP_REFUSALS = frozenset({1227, 3651, 3657, 3658, 3661, 1064})

#: what ``except`` catches from these connections
ReadError = MySQLdb.MySQLError

_CONVERSIONS: dict[Any, Any] = {
    **MySQLdb.converters.conversions,
    FIELD_TYPE.DATE: pymysql_converters.convert_date,
    FIELD_TYPE.DATETIME: pymysql_converters.convert_datetime,
    FIELD_TYPE.TIMESTAMP: pymysql_converters.convert_datetime,
    FIELD_TYPE.TIME: pymysql_converters.convert_timedelta,
}


class BulkConnection(MySQLdb.connections.Connection):
    """mysqlclient's connection, with the handshake's version where ``tidemark.source`` reads
    it from a PyMySQL one (``binlog_end``, ``is_mariadb``)."""

    # set by the C connection; its stubs do not declare them
    host: str
    port: int

    def __init__(self, source: SourceConnection, *, autocommit: bool) -> None:
        super().__init__(
            host=source.host,
            port=source.port,
            user=source.user,
            password=source.password.get_secret_value(),
            charset="utf8mb4",
            connect_timeout=max(1, round(source.connect_timeout_seconds)),
            autocommit=autocommit,
            conv=_CONVERSIONS,
            **_tls(source.ssl_mode, source.ssl_ca),
        )
        # host and port it has already
        self.server_version = self.get_server_info()


def _tls(mode: SslMode, ca: str | None) -> dict[str, Any]:
    """mysqlclient's TLS arguments for ``mode``, as PyMySQL's (``tidemark.source``).
    libmariadb has no ssl mode of its own; mysqlclient maps REQUIRED to "TLS or fail" and
    VERIFY_IDENTITY to "verify the certificate and its host name", and libmariadb verifies the
    certificate's chain whenever it is given a CA: that, with REQUIRED, is VERIFY_CA."""
    if mode is SslMode.DISABLED:
        return {"ssl_mode": "DISABLED"}
    if mode is SslMode.PREFERRED:
        return {"ssl": {"cipher": "DEFAULT"}}
    if mode is SslMode.REQUIRED:
        return {"ssl_mode": "REQUIRED"}
    if ca:
        authority = {"ca": ca}
    elif _SYSTEM_CA_FILE:
        authority = {"ca": _SYSTEM_CA_FILE}
    else:
        authority = {"capath": _SYSTEM_CA_PATH}
    ssl_mode = "VERIFY_IDENTITY" if mode is SslMode.VERIFY_IDENTITY else "REQUIRED"
    return {"ssl_mode": ssl_mode, "ssl": authority}


def open_bulk_connection(
    source: SourceConnection, *, autocommit: bool, resource_group: str | None = None
) -> BulkConnection:
    """A connection to ``source`` for reading rows in bulk, its session in UTC (TIMESTAMPs) and
    REPEATABLE READ whatever the server's default (a read under READ UNCOMMITTED could hold
    rows later rolled back, which no binlog event undoes); its server thread in the MySQL
    ``resource_group`` when one is given."""
    conn = BulkConnection(source, autocommit=autocommit)
    try:
        with conn.cursor() as cursor:
            if source.ssl_mode in (SslMode.REQUIRED, SslMode.VERIFY_CA):
                _check_tls(cursor)
            cursor.execute("SET SESSION time_zone = '+00:00'")
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if resource_group is not None:
                _join_resource_group(cursor, source, resource_group)
    except BaseException:
        conn.close()
        raise
    return conn


def _join_resource_group(cursor: Any, source: SourceConnection, group: str) -> None:
    """The start checks refuse what fails here (``ingest.startup.checks``); this is for a group
    dropped or disabled while the pipeline runs."""
    try:
        cursor.execute(f"SET RESOURCE GROUP `{group}`")
    except MySQLdb.MySQLError as error:
        if error_code(error) not in _RESOURCE_GROUP_REFUSALS:
            raise  # a server going away, say: retried as any connection that failed is
        raise TerminalError(
            f"{source.host}:{source.port} refused to run the bootstrap's reads in resource "
            f"group {group} (tidemark.ingest.snapshot-resource-group): {error.args[-1]}; "
            f"create or enable it (CREATE RESOURCE GROUP {group} TYPE = USER "
            f"THREAD_PRIORITY = 19), grant RESOURCE_GROUP_USER to {source.user}, or remove "
            "the option"
        ) from error


def _check_tls(cursor: Any) -> None:
    """Refuses a session without TLS. libmariadb enforces TLS only when it verifies the
    server's host name, so REQUIRED and VERIFY_CA are checked here, after the handshake and
    before anything is read. The handshake itself went without TLS then: against a server
    that offers none (or an attacker who strips it), the password's hash crossed in clear;
    PyMySQL's connections, which refuse before it, are always opened first."""
    cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    row = cursor.fetchone()
    if not row or not row[1]:
        raise MySQLdb.OperationalError(
            _SSL_CONNECTION_ERROR, "TLS/SSL error: SSL is required, but the server does not use it"
        )


def streaming_cursor(conn: BulkConnection) -> MySQLdb.cursors.SSCursor:
    """A cursor that fetches a result as it is read, not whole: for a table read in one
    statement."""
    return MySQLdb.cursors.SSCursor(conn)


def error_code(error: BaseException) -> int | None:
    """The server's error number of ``error`` from either driver, else None."""
    if isinstance(error, MySQLdb.MySQLError | pymysql.MySQLError) and error.args:
        code = error.args[0]
        return code if isinstance(code, int) else None
    return None
