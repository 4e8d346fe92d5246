"""A table's structure as the binlog's TABLE_MAP event describes it (``binlog_row_metadata=FULL``).

Used when a row image has columns that ``information_schema`` no longer shows (the table changed
again before ingest read its rows): the row's own table map says what it was written with.
``ingest.binlog`` calls ``structure`` with the library's column objects; only attributes are
read here, so this module does not import the library.

What the table map cannot tell, and how Tidemark then maps the column (``docs/types.md``):
display widths (a TINYINT(1) stays a number, not a boolean), NOT NULL (every column is taken as
nullable), and MariaDB's UUID/INET4/INET6 (they arrive as BINARY, so they land as bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tidemark.contracts.source_tables import SourceColumn, SourceTable

# MySQL protocol field types (include/field_types.h)
_INTEGERS = {1: "tinyint", 2: "smallint", 9: "mediumint", 3: "int", 8: "bigint"}
_FIXED = {4: "float", 5: "double", 13: "year", 10: "date", 14: "date", 245: "json"}
_TEMPORAL = {
    18: "datetime",
    12: "datetime",
    17: "timestamp",
    7: "timestamp",
    19: "time",
    11: "time",
}
_DECIMAL, _BIT, _ENUM, _SET, _GEOMETRY = 246, 16, 247, 248, 255
_VARCHAR, _VAR_STRING, _STRING, _BLOB = 15, 253, 254, 252
_BLOBS = {1: "tinyblob", 2: "blob", 3: "mediumblob", 4: "longblob"}
_TEXTS = {1: "tinytext", 2: "text", 3: "mediumtext", 4: "longtext"}


def structure(database: str, table: str, columns: Sequence[Any]) -> SourceTable:
    described = tuple(_column(column, ordinal) for ordinal, column in enumerate(columns, 1))
    key = tuple(column.name for column in columns if getattr(column, "is_primary", False))
    return SourceTable(database, table, described, primary_key=key)


def _column(column: Any, ordinal: int) -> SourceColumn:
    kind = column.type
    name = str(column.name)
    collation = getattr(column, "collation_name", None)
    charset = collation.split("_", 1)[0] if collation and collation != "binary" else None
    common: dict[str, Any] = {"name": name, "ordinal": ordinal, "nullable": True}
    if kind in _INTEGERS:
        data_type = _INTEGERS[kind]
        unsigned = bool(getattr(column, "unsigned", False))
        column_type = data_type + (" unsigned" if unsigned else "")
        return SourceColumn(
            data_type=data_type, column_type=column_type, unsigned=unsigned, **common
        )
    if kind in _FIXED:
        return SourceColumn(data_type=_FIXED[kind], column_type=_FIXED[kind], **common)
    if kind in _TEMPORAL:
        fsp = int(getattr(column, "fsp", 0) or 0)
        data_type = _TEMPORAL[kind]
        return SourceColumn(
            data_type=data_type,
            column_type=f"{data_type}({fsp})" if fsp else data_type,
            datetime_precision=fsp,
            **common,
        )
    if kind == _DECIMAL:
        precision, scale = int(column.precision), int(column.decimals)
        return SourceColumn(
            data_type="decimal",
            column_type=f"decimal({precision},{scale})",
            precision=precision,
            scale=scale,
            unsigned=bool(getattr(column, "unsigned", False)),
            **common,
        )
    if kind == _BIT:
        return SourceColumn(
            data_type="bit", column_type=f"bit({column.bits})", precision=column.bits, **common
        )
    if kind in (_ENUM, _SET):
        values = list(
            getattr(column, "enum_values", None) or getattr(column, "set_values", None) or []
        )
        members = tuple(str(v) for v in (values[1:] if kind == _ENUM else values))
        data_type = "enum" if kind == _ENUM else "set"
        return SourceColumn(
            data_type=data_type,
            column_type=data_type,
            members=members,
            charset=charset,
            collation=collation,
            **common,
        )
    if kind == _GEOMETRY:
        return SourceColumn(data_type="geometry", column_type="geometry", **common)
    if kind in (_VARCHAR, _VAR_STRING, _STRING):
        length = int(getattr(column, "max_length", 0) or 0)
        variable = kind != _STRING
        if charset is None:
            data_type = "varbinary" if variable else "binary"
            return SourceColumn(
                data_type=data_type,
                column_type=f"{data_type}({length})",
                max_length=length,
                octet_length=length,
                **common,
            )
        data_type = "varchar" if variable else "char"
        return SourceColumn(
            data_type=data_type,
            column_type=data_type,
            octet_length=length,
            charset=charset,
            collation=collation,
            **common,
        )
    if kind == _BLOB:
        size = int(getattr(column, "length_size", 4) or 4)
        if charset is None:
            return SourceColumn(data_type=_BLOBS[size], column_type=_BLOBS[size], **common)
        return SourceColumn(
            data_type=_TEXTS[size],
            column_type=_TEXTS[size],
            charset=charset,
            collation=collation,
            **common,
        )
    raise ValueError(f"column {name} has the binlog type {kind}, which Tidemark cannot map")
