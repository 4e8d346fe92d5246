"""A SELECT's values in the binlog's forms, so snapshot rows and streamed rows share one mapping.

``ingest.schema.types`` converts the values ``ingest.schema.values`` documents (the binlog's). A
SELECT through PyMySQL gives some types differently; per column, ``select_column`` says what to
select and how to bring its value to the binlog's form:

- FLOAT is selected as DOUBLE: the text protocol rounds FLOAT to 6 significant digits.
- ENUM and SET are selected as ``col + 0``: the member index and the bit set, as in the binlog.
- BIT comes as big-endian bytes; the binlog gives the number.
- TIMESTAMP comes in the session's zone, which the snapshot connection sets to UTC.
- A zero or impossible DATE/DATETIME/TIMESTAMP comes as the server's text (PyMySQL cannot parse
  it), which becomes ``InvalidTemporal`` like the binlog's.
- MariaDB UUID, INET4 and INET6 come as their text; the binlog gives their bytes.
- Text comes decoded from the connection's utf8mb4, which the server converts every charset to.

Everything else (integers, DECIMAL, FLOAT, DOUBLE, YEAR, DATE, DATETIME, TIME, binary strings,
JSON, GEOMETRY) already has the binlog's form.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ingest.errors import UnconvertibleValueError
from ingest.schema.types import columns_converter
from ingest.schema.values import InvalidTemporal
from tidemark.contracts.source_tables import SourceColumn, SourceTable

Normalise = Callable[[Any], Any]


@dataclass(frozen=True)
class SelectColumn:
    #: the select-list expression, aliased to the column's name
    expression: str
    #: non-NULL selected value -> the binlog's value; None when they are the same
    normalise: Normalise | None = None


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def select_column(column: SourceColumn) -> SelectColumn:
    name = quote_identifier(column.name)
    kind = column.data_type
    if kind in ("enum", "set"):
        return SelectColumn(f"{name} + 0 AS {name}", int)
    if kind == "float":
        # the text protocol prints FLOAT with 6 digits; as DOUBLE it keeps every bit
        return SelectColumn(f"CAST({name} AS DOUBLE) AS {name}")
    if kind == "bit":
        return SelectColumn(name, _bits)
    if kind == "timestamp":
        return SelectColumn(name, _utc_timestamp)
    if kind in ("date", "datetime"):
        return SelectColumn(name, _calendar)
    if kind == "uuid":
        return SelectColumn(name, _uuid_bytes)
    if kind in ("inet4", "inet6"):
        return SelectColumn(name, _address_bytes)
    return SelectColumn(name)


PageConverter = Callable[[Sequence[tuple[Any, ...]]], list[pa.Array]]


def page_converter(
    table: SourceTable,
    server_time_zone: str | None = None,
    *,
    tinyint1_as_boolean: bool = True,
    nulled: Callable[[int, UnconvertibleValueError], None] | None = None,
) -> PageConverter:
    """Rows as ``select_column`` selected them (a snapshot's page) to one Arrow array per
    column, with the mapping the binlog's rows get (``ingest.schema.types``); each value
    stored as NULL is told to ``nulled`` with the index of its row in the page."""
    convert = columns_converter(
        table,
        server_time_zone,
        tinyint1_as_boolean=tinyint1_as_boolean,
        normalisers=[select_column(column).normalise for column in table.columns],
        nulled=nulled,
    )
    width = len(table.columns)

    def convert_page(rows: Sequence[tuple[Any, ...]]) -> list[pa.Array]:
        columns = [list(values) for values in zip(*rows, strict=True)] if rows else []
        return convert(columns or [[] for _ in range(width)])

    return convert_page


def _bits(value: bytes) -> int:
    return int.from_bytes(value, "big")


def _calendar(value: Any) -> Any:
    return InvalidTemporal(value) if isinstance(value, str) else value


def _utc_timestamp(value: Any) -> Any:
    if isinstance(value, str):
        return InvalidTemporal(value)
    return value.replace(tzinfo=dt.UTC)


def _uuid_bytes(value: str | bytes) -> bytes:
    text = value.decode() if isinstance(value, bytes) else value
    return bytes.fromhex(text.replace("-", ""))


def _address_bytes(value: str | bytes) -> bytes:
    text = value.decode() if isinstance(value, bytes) else value
    return ipaddress.ip_address(text).packed
