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

TLS as PyMySQL does it without settings (MySQL clients' PREFERRED): used when the server offers
it, verifying nothing. libmariadb only asks for TLS when a TLS option is set; the cipher list
``DEFAULT`` is OpenSSL's own, so setting it turns TLS on without narrowing it.
"""

from __future__ import annotations

from typing import Any

import MySQLdb
import MySQLdb.connections
import MySQLdb.converters
import MySQLdb.cursors
import pymysql
from MySQLdb.constants import FIELD_TYPE
from pymysql import converters as pymysql_converters

from tidemark.source import SourceConnection

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
            ssl={"cipher": "DEFAULT"},
        )
        # host and port it has already
        self.server_version = self.get_server_info()


def open_bulk_connection(source: SourceConnection, *, autocommit: bool) -> BulkConnection:
    """A connection to ``source`` for reading rows in bulk, its session in UTC (TIMESTAMPs) and
    REPEATABLE READ whatever the server's default (a read under READ UNCOMMITTED could hold
    rows later rolled back, which no binlog event undoes)."""
    conn = BulkConnection(source, autocommit=autocommit)
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00'")
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    except BaseException:
        conn.close()
        raise
    return conn


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
