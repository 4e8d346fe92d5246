"""What tables a MySQL or MariaDB server has, read from ``information_schema``: for ``plan``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pymysql

from tidemark.config.secrets import Redactor
from tidemark.errors import TerminalError, TransientError
from tidemark.source import SourceConnection

SYSTEM_DATABASES = ("mysql", "information_schema", "performance_schema", "sys")

#: MySQL error codes that mean the account or its rights are wrong, not the network.
_ACCESS_DENIED = (1044, 1045, 1142, 1227, 1698)


@dataclass(frozen=True)
class Column:
    name: str
    data_type: str  # information_schema DATA_TYPE, lower case: int, varchar, point ...
    column_type: str  # the full type: int(10) unsigned, varchar(32) ...


@dataclass(frozen=True)
class UniqueIndex:
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class PhysicalTable:
    database: str
    table: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    unique_indexes: tuple[UniqueIndex, ...] = field(default=())

    @property
    def table_id(self) -> str:
        return f"{self.database}.{self.table}"

    def column(self, name: str) -> Column | None:
        # MySQL column names are case-insensitive
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)


def read_tables(
    source: SourceConnection, selected: Callable[[str, str], bool]
) -> list[PhysicalTable]:
    """Every base table ``selected(database, table)`` accepts, with columns and keys."""
    try:
        with source.connect() as conn, conn.cursor() as cursor:
            names = [
                (db, table)
                for db, table in _rows(cursor, _TABLES, (SYSTEM_DATABASES,))
                if selected(db, table)
            ]
            databases = sorted({db for db, _ in names})
            if not databases:
                return []
            columns = _rows(cursor, _COLUMNS, (databases,))
            keys = _rows(cursor, _KEYS, (databases,))
    except pymysql.err.OperationalError as error:
        raise _connection_error(source, error) from None
    except pymysql.err.MySQLError as error:
        raise TerminalError(
            f"reading information_schema on {source.host}:{source.port} failed: "
            f"{_masked(source, str(error))}"
        ) from None
    return _assemble(names, columns, keys)


_TABLES = """
    SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
    WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN %s
    ORDER BY TABLE_SCHEMA, TABLE_NAME"""

_COLUMNS = """
    SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE
    FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN %s
    ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"""

_KEYS = """
    SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME
    FROM information_schema.STATISTICS WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA IN %s
    ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX"""


def _rows(cursor: Any, query: str, parameters: Sequence[Any]) -> list[tuple[str, ...]]:
    cursor.execute(query, parameters)
    return [tuple(_text(value) for value in row) for row in cursor.fetchall()]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _assemble(
    names: Iterable[tuple[str, str]],
    columns: Iterable[tuple[str, ...]],
    keys: Iterable[tuple[str, ...]],
) -> list[PhysicalTable]:
    by_table: dict[tuple[str, str], list[Column]] = defaultdict(list)
    for db, table, name, data_type, column_type in columns:
        by_table[(db, table)].append(Column(name, data_type.lower(), column_type.lower()))
    indexes: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(dict)
    for db, table, index, column in keys:
        indexes[(db, table)].setdefault(index, []).append(column)
    tables = []
    for db, table in names:
        unique = indexes.get((db, table), {})
        tables.append(
            PhysicalTable(
                database=db,
                table=table,
                columns=tuple(by_table.get((db, table), ())),
                primary_key=tuple(unique.get("PRIMARY", ())),
                unique_indexes=tuple(
                    UniqueIndex(name, tuple(cols))
                    for name, cols in unique.items()
                    if name != "PRIMARY"
                ),
            )
        )
    return tables


def _masked(source: SourceConnection, text: str) -> str:
    redactor = Redactor()
    redactor.add([source.password.get_secret_value()])
    return redactor.redact(text)


def _tls_refusal(source: SourceConnection, detail: str) -> str | None:
    """Why TLS refused the connection, and the fix, from PyMySQL's message; None when it
    was not TLS that refused it."""
    if "SSL is required" in detail:
        return (
            "the server offers no TLS: turn it on in the server (ssl_cert and ssl_key), or set "
            "jdbc.properties.sslMode to PREFERRED"
        )
    if "CERTIFICATE_VERIFY_FAILED" not in detail:
        return None
    if "mismatch" in detail or "not valid for" in detail:
        return (
            f"the server's certificate does not name {source.host}: connect by a name it "
            "holds (source.hostname), or set jdbc.properties.sslMode to VERIFY_CA"
        )
    authority = source.ssl_ca or "the system's CA certificates"
    return (
        f"the server's certificate is not signed by a CA of {authority}: point "
        "jdbc.properties.trustCertificateKeyStoreUrl at the PEM file of the CA that signed it"
    )


def _connection_error(
    source: SourceConnection, error: pymysql.err.OperationalError
) -> TerminalError | TransientError:
    code = error.args[0] if error.args else None
    where = f"{source.user}@{source.host}:{source.port}"
    detail = _masked(source, str(error.args[1]) if len(error.args) > 1 else str(error))
    if code in _ACCESS_DENIED:
        return TerminalError(
            f"MySQL at {where} refused the account: {detail}; check source.username and "
            "source.password, and that the user may SELECT the tables"
        )
    refusal = _tls_refusal(source, detail)
    if refusal is not None:
        return TerminalError(
            f"TLS to {where} failed: {refusal} (jdbc.properties.sslMode is "
            f"{source.ssl_mode.value}; {detail})"
        )
    return TransientError(
        f"cannot connect to MySQL at {where}: {detail}; check source.hostname and source.port, "
        "and that the server is running"
    )
