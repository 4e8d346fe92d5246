"""The structure of the onboarded source tables, read once from ``information_schema`` into
``tidemark.contracts.source_tables``' models."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import pymysql

from ingest.errors import SourceSchemaError
from tidemark.contracts.source_tables import SourceColumn, SourceTable, TableName, UniqueKey
from tidemark.source import is_mariadb


def read_source_tables(
    connection: pymysql.connections.Connection[Any], names: Iterable[TableName]
) -> dict[TableName, SourceTable]:
    """Every table of ``names`` (database, table) with its columns and keys.

    Raises ``SourceSchemaError`` naming the tables that do not exist.
    """
    wanted = sorted(set(names))
    if not wanted:
        return {}
    databases = sorted({database for database, _ in wanted})
    with connection.cursor() as cursor:
        columns = _rows(cursor, _COLUMNS, databases)
        keys = _rows(cursor, _KEYS, databases)
    column = _column if is_mariadb(connection) else _mysql_column
    by_table: dict[TableName, list[SourceColumn]] = defaultdict(list)
    for row in columns:
        by_table[(row[0], row[1])].append(column(row[2:]))
    missing = [
        f"{database}.{table}" for database, table in wanted if (database, table) not in by_table
    ]
    if missing:
        raise SourceSchemaError(
            f"the source has no table {', '.join(missing)}: it was dropped or renamed after the "
            "pipeline was planned; run 'tidemark plan' to see what the pipeline reads now"
        )
    indexes = _indexes(keys)
    return {name: _table(name, by_table[name], indexes.get(name, {})) for name in wanted}


_COLUMNS = """
    SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_TYPE,
           IS_NULLABLE, NUMERIC_PRECISION, NUMERIC_SCALE, DATETIME_PRECISION,
           CHARACTER_MAXIMUM_LENGTH, CHARACTER_OCTET_LENGTH, CHARACTER_SET_NAME, COLLATION_NAME,
           COLUMN_DEFAULT, EXTRA
    FROM information_schema.COLUMNS
    WHERE TABLE_SCHEMA IN %s
    ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION
"""

_KEYS = """
    SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME
    FROM information_schema.STATISTICS
    WHERE TABLE_SCHEMA IN %s AND NON_UNIQUE = 0
    ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX
"""


def _rows(cursor: Any, query: str, databases: Sequence[str]) -> list[tuple[Any, ...]]:
    cursor.execute(query, (tuple(databases),))
    return list(cursor.fetchall())


def _column(row: Sequence[Any]) -> SourceColumn:
    (name, ordinal, data_type, column_type, nullable, precision, scale, datetime_precision,
     max_length, octet_length, charset, collation, default, _) = row  # fmt: skip
    data_type, column_type = str(data_type).lower(), str(column_type)
    members = enum_members(column_type) if data_type in ("enum", "set") else ()
    unsigned = not members and re.search(r"\bunsigned\b", column_type, re.I) is not None
    return SourceColumn(
        name=name,
        ordinal=int(ordinal),
        data_type=data_type,
        column_type=column_type,
        nullable=nullable == "YES",
        unsigned=unsigned,
        precision=_int(precision),
        scale=_int(scale),
        datetime_precision=_int(datetime_precision),
        max_length=_int(max_length),
        octet_length=_int(octet_length),
        charset=charset,
        collation=collation,
        members=members,
        default=None if default is None else str(default),
    )


#: types whose literal defaults MariaDB shows unquoted
_UNQUOTED = frozenset(
    (
        "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "float",
        "double", "year", "bit",
    )
)  # fmt: skip


def _mysql_column(row: Sequence[Any]) -> SourceColumn:
    """A column as MySQL describes it, its default in MariaDB's form (the form
    ``SourceColumn.default`` documents): MySQL shows a literal default unquoted, NULL as
    nothing, and marks expressions in EXTRA instead."""
    column = _column(row)
    default, extra = row[12], str(row[13] or "")
    if default is None:
        shown = "NULL" if column.nullable else None
    elif "DEFAULT_GENERATED" in extra.upper() or column.data_type in _UNQUOTED:
        shown = str(default)
    else:
        shown = "'" + str(default).replace("\\", "\\\\").replace("'", "''") + "'"
    return replace(column, default=shown)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


_MEMBER = re.compile(r"'((?:[^'\\]|''|\\.)*)'")


def enum_members(column_type: str) -> tuple[str, ...]:
    """The members of ``enum('a','it''s')`` or ``set(...)`` as the server lists them in
    COLUMN_TYPE (quotes doubled, backslashes escaped)."""
    body = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    return tuple(_unescape(match.group(1)) for match in _MEMBER.finditer(body))


def _unescape(member: str) -> str:
    return re.sub(r"''|\\(.)", lambda m: "'" if m.group(0) == "''" else m.group(1), member)


def _indexes(rows: list[tuple[Any, ...]]) -> dict[TableName, dict[str, list[str]]]:
    indexes: dict[TableName, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for database, table, index, column in rows:
        indexes[(database, table)][index].append(column)
    return indexes


def _table(name: TableName, columns: list[SourceColumn], keys: dict[str, list[str]]) -> SourceTable:
    unique = tuple(
        UniqueKey(index, tuple(key)) for index, key in sorted(keys.items()) if index != "PRIMARY"
    )
    return SourceTable(
        database=name[0],
        name=name[1],
        columns=tuple(columns),
        primary_key=tuple(keys.get("PRIMARY", ())),
        unique_keys=unique,
    )
