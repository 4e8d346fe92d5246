"""The MySQL/MariaDB -> Iceberg type mapping: an Arrow field and a value converter per column.

Arrow types are the ones PyIceberg turns into Iceberg types (int32 -> int, int64 -> long,
decimal128 -> decimal, date32 -> date, timestamp('us') -> timestamp, timestamp('us', 'UTC') ->
timestamptz, string, binary, ...). ``docs/types.md`` is the user-facing table; the choices made
where Iceberg has no exact match:

- BIGINT UNSIGNED and BIT(64) -> decimal(20, 0); INT UNSIGNED -> long.
- DECIMAL(p, s) with p > 38 (Iceberg's maximum) -> string holding the exact number with all
  ``s`` fraction digits (``-12.500``).
- TIME -> long: signed microseconds. MySQL's TIME spans -838:59:59 .. 838:59:59 (a duration),
  Iceberg's ``time`` only a day.
- TINYINT(1) (BOOL) -> boolean unless ``treat-tinyint1-as-boolean.enabled`` is false; a value
  other than 0 or 1 is refused.
- A zero or impossible date (``0000-00-00``, ``2020-00-15``) -> NULL in a nullable column and
  refused in a NOT NULL one. A value stored as NULL is reported: the row converter raises
  ``NulledValuesError`` with the row as the lake holds it, and ingest records each such value
  in the error table and counts it (``tidemark.nulled-values``).
- ENUM and SET -> string (SET members comma-separated in definition order, '' when empty).
- GEOMETRY -> binary WKB (the server's SRID prefix dropped); UUID, INET4, INET6 -> their text.

``values_converter`` builds one converter per column up front and compiles a function for the
table; converting a row has no per-row type dispatch. A value that cannot be represented
raises ``UnconvertibleValueError`` naming the table, column, value and reason.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import re
import struct
import zoneinfo
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ingest.errors import (
    NulledValuesError,
    SchemaChangeStopError,
    SourceSchemaError,
    UnconvertibleValueError,
)
from ingest.schema.charsets import codec
from ingest.schema.values import InvalidTemporal, UndecodableText
from tidemark.contracts.source_tables import SourceColumn, SourceTable

#: a row's values, in the order of its columns' names (kept beside them)
Values = tuple[Any, ...]
Converter = Callable[[Any], Any]

ICEBERG_MAX_DECIMAL_PRECISION = 38


@dataclass(frozen=True)
class TypeOptions:
    """The source options that change the mapping."""

    tinyint1_as_boolean: bool = True
    #: the zone of naive TIMESTAMP values (a SELECT's); the binlog's are already UTC
    server_time_zone: dt.tzinfo = dt.UTC


@dataclass(frozen=True)
class ColumnType:
    """How one source column lands in the lake."""

    arrow: pa.DataType
    #: decoded value (never None) -> lake value; None when the decoded value is already right
    convert: Converter | None = None


class _Nulled:
    """What a converter returns for a value the lake cannot hold in a nullable column: NULL is
    stored, and the row converter says so (``NulledValuesError``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULLED"


NULLED = _Nulled()


class _Refused(Exception):
    """Raised by a converter; the row converter adds the table, column and value."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- the public surface -------------------------------------------------------------------


def arrow_schema(table: SourceTable, *, tinyint1_as_boolean: bool = True) -> pa.Schema:
    """The table's columns as Arrow fields, in source order, nullable as at the source."""
    options = TypeOptions(tinyint1_as_boolean=tinyint1_as_boolean)
    return pa.schema([arrow_field(table, column, options) for column in table.columns])


def arrow_field(table: SourceTable, column: SourceColumn, options: TypeOptions) -> pa.Field:
    return pa.field(column.name, column_type(table, column, options).arrow, column.nullable)


def values_converter(
    table: SourceTable,
    columns: Sequence[str],
    server_time_zone: dt.tzinfo | str | None = None,
    *,
    tinyint1_as_boolean: bool = True,
) -> Callable[[Values], Values]:
    """A function from a decoded binlog row image (``ingest.schema.values``), its values in the
    order of ``columns`` (the names its table map gives), to the values as the lake holds them, in
    the same order. ``columns`` must be the table's columns: an image of other columns comes
    from another structure and raises ``SchemaChangeStopError`` here.

    ``server_time_zone`` (the source's ``server-time-zone``; UTC when None) only matters for
    naive TIMESTAMP values, as a SELECT returns them: the binlog stores TIMESTAMP as UTC epoch
    seconds and its decoding gives UTC datetimes already.

    The function is compiled for the table, as the binlog's row decoders are
    (``ingest.binlog.row_decoders``): each converter called only on a value it changes, no
    per-column dispatch. It runs for every row of every change.
    """
    options = TypeOptions(tinyint1_as_boolean, time_zone(server_time_zone or "UTC"))
    by_name = {column.name: column for column in table.columns}
    if len(columns) != len(by_name) or set(columns) != by_name.keys():
        raise _shape_error(table, columns)
    plan = [(name, column_type(table, by_name[name], options).convert) for name in columns]
    namespace: dict[str, Any] = {
        "Refused": _Refused,
        "refusal": functools.partial(_refusal, table, plan),
        "NULLED": NULLED,
        "nulled": functools.partial(_nulled, table, plan),
    }
    nullable = [number for number, (_, convert) in enumerate(plan) if _may_null(convert)]
    steps = []
    for number, (_, convert) in enumerate(plan):
        if convert is None:
            continue
        value, function = f"v{number}", f"c{number}"
        namespace[function] = convert
        # text is the most common column, and nearly always right already: no call for it
        changes = f"{value}.__class__ is not str" if convert is _checked_text else "True"
        steps.append(f"if {value} is not None and {changes}: {value} = {function}({value})")
    if not steps:
        return _unchanged
    names = "".join(f"v{number}, " for number in range(len(plan)))
    lines = ["def convert_values(values):"]
    texts = [number for number, (_, convert) in enumerate(plan) if convert is _checked_text]
    if len(texts) == len(steps):
        # only text to check, and it is nearly always right: the same tuple back, not a copy
        checks = " and ".join(f"values[{number}].__class__ is str" for number in texts)
        lines += [f"    if {checks}:", "        return values"]
    lines += [
        f"    {names}= values",
        "    try:",
        *(f"        {step}" for step in steps),
        "    except Refused:",
        "        raise refusal(values) from None",
    ]
    if nullable:
        found = " or ".join(f"v{number} is NULLED" for number in nullable)
        lines += [f"    if {found}:", f"        raise nulled(values, ({names}))"]
    lines += [f"    return ({names})"]
    code = compile("\n".join(lines), f"<values converter of {table.table_id}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own code, with no names in it
    convert_values: Callable[[Values], Values] = namespace["convert_values"]
    return convert_values


def _unchanged(values: Values) -> Values:
    return values


def _refusal(
    table: SourceTable, plan: list[tuple[str, Converter | None]], values: Values
) -> UnconvertibleValueError:
    """Which of the ``values`` a compiled converter refused, and why (the rare path)."""
    for (name, convert), value in zip(plan, values, strict=True):
        if convert is None or value is None:
            continue
        try:
            convert(value)
        except _Refused as refused:
            return UnconvertibleValueError(table.table_id, name, repr(value), refused.reason)
    raise AssertionError(f"no value of {table.table_id}'s row was refused the second time")


def _nulled(
    table: SourceTable,
    plan: list[tuple[str, Converter | None]],
    values: Values,
    converted: Values,
) -> NulledValuesError:
    """The row as the lake holds it, NULL for each value a converter could not hold, and
    what each of those was (the rare path)."""
    records = tuple(
        UnconvertibleValueError(
            table.table_id,
            name,
            repr(value),
            f"stored as NULL: {_nulled_reason(value)}",
        )
        for (name, _), value, lake in zip(plan, values, converted, strict=True)
        if lake is NULLED
    )
    held = tuple(None if value is NULLED else value for value in converted)
    return NulledValuesError(held, records)


def _nulled_reason(value: Any) -> str:
    if type(value) is InvalidTemporal:
        return f"'{value.text}' is not a real date or time, and Iceberg holds only real ones"
    return f"{value!r} has no Iceberg representation"


def _may_null(convert: Converter | None) -> bool:
    """Whether ``convert`` may return ``NULLED``."""
    return bool(getattr(convert, "may_null", False))


ColumnValues = list[Any]


def columns_converter(
    table: SourceTable,
    server_time_zone: dt.tzinfo | str | None = None,
    *,
    tinyint1_as_boolean: bool = True,
    normalisers: Sequence[Callable[[Any], Any] | None] | None = None,
    nulled: Callable[[int, UnconvertibleValueError], None] | None = None,
) -> Callable[[Sequence[ColumnValues]], list[pa.Array]]:
    """Like ``values_converter``, column at a time (a snapshot's batches): one list of decoded
    values per column, in the table's column order, to one Arrow array per column. Each value
    stored as NULL is told to ``nulled``, with the index of its row in the batch.

    ``normalisers`` (one per column, or None) first bring each non-NULL value to the binlog's
    form (``ingest.schema.select_values``).
    """
    options = TypeOptions(tinyint1_as_boolean, time_zone(server_time_zone or "UTC"))
    types = [column_type(table, column, options) for column in table.columns]
    steps = normalisers or [None] * len(types)
    plan = [
        (column, kind.arrow, _chain(normalise, kind.convert), _may_null(kind.convert), normalise)
        for column, kind, normalise in zip(table.columns, types, steps, strict=True)
    ]

    def convert_columns(columns: Sequence[ColumnValues]) -> list[pa.Array]:
        if len(columns) != len(plan):
            raise SchemaChangeStopError(
                f"a snapshot batch of {table.table_id} has {len(columns)} columns, but "
                f"information_schema lists {len(plan)}: the table's structure changed during "
                "the bootstrap; start ingest again to re-read it"
            )
        arrays = []
        for (column, arrow, convert, may_null, normalise), read in zip(plan, columns, strict=True):
            values = read
            if convert is not None:
                try:
                    values = [None if value is None else convert(value) for value in read]
                except _Refused as refused:
                    raise UnconvertibleValueError(
                        table.table_id,
                        column.name,
                        _first_refused(read, convert, normalise),
                        refused.reason,
                    ) from None
                if may_null:
                    values = _nulled_column(table, column.name, read, values, normalise, nulled)
            arrays.append(pa.array(values, type=arrow))
        return arrays

    return convert_columns


def _nulled_column(
    table: SourceTable,
    name: str,
    read: ColumnValues,
    converted: ColumnValues,
    normalise: Callable[[Any], Any] | None,
    nulled: Callable[[int, UnconvertibleValueError], None] | None,
) -> ColumnValues:
    """``converted`` with NULL for each value stored as NULL, each told to ``nulled``."""
    if not any(value is NULLED for value in converted):
        return converted
    held = []
    for index, (value, lake) in enumerate(zip(read, converted, strict=True)):
        if lake is not NULLED:
            held.append(lake)
            continue
        held.append(None)
        if nulled is not None:
            decoded = normalise(value) if normalise is not None else value
            reason = f"stored as NULL: {_nulled_reason(decoded)}"
            nulled(index, UnconvertibleValueError(table.table_id, name, repr(decoded), reason))
    return held


def _first_refused(
    values: ColumnValues, convert: Converter, normalise: Callable[[Any], Any] | None
) -> str:
    """The first of ``values`` that ``convert`` refuses, in the binlog's form (as
    ``normalise`` brings a snapshot's value to it), as the error table records it."""
    for value in values:
        try:
            if value is not None:
                convert(value)
        except _Refused:
            return repr(normalise(value) if normalise is not None else value)
    return "?"


def _chain(first: Converter | None, second: Converter | None) -> Converter | None:
    if first is None or second is None:
        return first or second
    return lambda value: second(first(value))


def column_type(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    mapper = _MAPPERS.get(column.data_type)
    if mapper is None:
        raise SourceSchemaError(
            f"{table.table_id}.{column.name} has the type {column.column_type}, which Tidemark "
            f"cannot map to Iceberg yet (it maps: {', '.join(sorted(_MAPPERS))}); leave the "
            "table out of 'tables' or change the column's type"
        )
    return mapper(table, column, options)


def time_zone(name: dt.tzinfo | str) -> dt.tzinfo:
    """A ``server-time-zone`` value as ``ZoneId.of`` reads it: UTC, an offset or a region."""
    if isinstance(name, dt.tzinfo):
        return name
    text = name.strip()
    if text in ("Z", "UTC", "GMT", "UT"):
        return dt.UTC
    offset = _OFFSET.fullmatch(text)
    if offset is not None:
        sign = -1 if offset.group("sign") == "-" else 1
        hours, minutes, seconds = (int(offset.group(g) or 0) for g in ("h", "m", "s"))
        return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds))
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SourceSchemaError(
            f"server-time-zone: {name!r} is not a time zone; use an id such as 'UTC', "
            "'Asia/Shanghai' or '+08:00'"
        ) from None


_OFFSET = re.compile(
    r"(?:UTC|GMT|UT)?(?P<sign>[+-])(?P<h>[0-9]{1,2})(?::?(?P<m>[0-9]{2})(?::?(?P<s>[0-9]{2}))?)?"
)


def _shape_error(table: SourceTable, columns: Sequence[str]) -> SchemaChangeStopError:
    """A row image from before a schema change must not be decoded with today's schema."""
    return SchemaChangeStopError(
        f"a binlog row of {table.table_id} has the columns {sorted(columns)}, but "
        f"information_schema lists {[column.name for column in table.columns]}: the table's "
        "structure changed since ingest read it; restart ingest (and re-bootstrap the table if "
        "the change is not one Tidemark can follow)"
    )


# --- numbers ------------------------------------------------------------------------------

_INTEGER_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
_DECIMAL_20 = pa.decimal128(20, 0)


def _integer(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    if _is_bool(column) and options.tinyint1_as_boolean:
        return ColumnType(pa.bool_(), _boolean)
    bits = _INTEGER_BITS[column.data_type] + (1 if column.unsigned else 0)
    if bits <= 32:
        return ColumnType(pa.int32())
    if bits <= 64:
        return ColumnType(pa.int64())
    return ColumnType(_DECIMAL_20, decimal.Decimal)


def _is_bool(column: SourceColumn) -> bool:
    return column.column_type.lower() == "tinyint(1)"


def _boolean(value: int) -> bool:
    if value == 0 or value == 1:
        return value == 1
    raise _Refused(
        f"TINYINT(1) maps to boolean and {value} is neither 0 nor 1; set "
        "'treat-tinyint1-as-boolean.enabled: false' in the source to keep TINYINT(1) columns "
        "as integers"
    )


def _decimal(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    precision, scale = column.precision or 10, column.scale or 0
    if precision <= ICEBERG_MAX_DECIMAL_PRECISION:
        return ColumnType(pa.decimal128(precision, scale))
    return ColumnType(pa.string(), _decimal_text)


def _decimal_text(value: decimal.Decimal) -> str:
    return format(value, "f")


def _float(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.float32())


def _double(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.float64())


def _bit(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    width = column.precision or 1
    if width == 1:
        return ColumnType(pa.bool_(), bool)
    if width < 64:
        return ColumnType(pa.int64())
    return ColumnType(_DECIMAL_20, decimal.Decimal)


def _year(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.int32())


# --- dates and times ----------------------------------------------------------------------

_MICROSECOND = dt.timedelta(microseconds=1)


def _date(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.date32(), _calendar(column))


def _datetime(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.timestamp("us"), _calendar(column))


def _calendar(column: SourceColumn) -> Converter:
    """Dates pass; an invalid one becomes NULL where the column allows it."""
    invalid = _invalid_temporal(column)

    def convert(value: Any) -> Any:
        return invalid(value) if type(value) is InvalidTemporal else value

    convert.may_null = column.nullable  # type: ignore[attr-defined]  # read by _may_null
    return convert


def _timestamp(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    invalid = _invalid_temporal(column)
    zone = options.server_time_zone

    def convert(value: Any) -> Any:
        if type(value) is InvalidTemporal:
            return invalid(value)
        if value.tzinfo is None:  # a SELECT's value, in the session's zone
            return value.replace(tzinfo=zone).astimezone(dt.UTC)
        return value

    convert.may_null = column.nullable  # type: ignore[attr-defined]  # read by _may_null
    return ColumnType(pa.timestamp("us", tz="UTC"), convert)


def _invalid_temporal(column: SourceColumn) -> Callable[[InvalidTemporal], _Nulled]:
    def invalid(value: InvalidTemporal) -> _Nulled:
        if column.nullable:
            return NULLED
        raise _Refused(
            f"'{value.text}' is not a real {column.data_type.upper()} and the column is NOT "
            "NULL, so it cannot become NULL either; correct the row at the source (or make the "
            "column nullable, and Tidemark stores NULL)"
        )

    return invalid


def _time(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.int64(), _microseconds)


def _microseconds(value: dt.timedelta) -> int:
    return value // _MICROSECOND


# --- strings ------------------------------------------------------------------------------

_UNICODE_ONLY_UTF8 = ("utf8mb3", "utf8mb4", "utf8")


def _text(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    charset, collation = column.charset or "", column.collation or ""
    if codec(charset) is None:
        raise SourceSchemaError(
            f"{table.table_id}.{column.name} is {column.column_type} in the charset {charset!r}, "
            "which Tidemark cannot decode; convert the column to utf8mb4 (ALTER TABLE ... "
            "CONVERT TO CHARACTER SET utf8mb4) or leave the table out of 'tables'"
        )
    if "uca1400" in collation and charset not in _UNICODE_ONLY_UTF8:
        raise SourceSchemaError(
            f"{table.table_id}.{column.name} uses the collation {collation}, which "
            "mysql-replication 1.0.17 does not know, so its binlog text cannot be decoded "
            f"reliably; use another {charset} collation or convert the column to utf8mb4"
        )
    return ColumnType(pa.string(), _checked_text)


def _checked_text(value: Any) -> str:
    if type(value) is str:
        return value
    if type(value) is UndecodableText:
        raise _Refused(f"the bytes are not valid {value.charset} text")
    raise _Refused(f"expected text, got {type(value).__name__}")


def _binary(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    """BINARY(n): the binlog drops trailing 0x00 bytes that the column holds; put them back."""
    return ColumnType(pa.binary(), _padding(column.octet_length or column.max_length or 0))


def _padding(length: int) -> Converter:
    def pad(value: bytes) -> bytes:
        return value.ljust(length, b"\0")

    return pad


def _blob(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.binary())


def _enum(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    names = ("", *column.members)  # index 0 is the '' a bad value becomes

    def member(index: int) -> str:
        if 0 <= index < len(names):
            return names[index]
        raise _Refused(f"ENUM index {index} is beyond the {len(names) - 1} members")

    return ColumnType(pa.string(), member)


def _set(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    members = column.members

    def names(bits: int) -> str:
        if bits >> len(members):
            raise _Refused(f"SET bits {bits:#x} name more than the {len(members)} members")
        return ",".join(name for i, name in enumerate(members) if bits >> i & 1)

    return ColumnType(pa.string(), names)


def _json(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.string(), _checked_text)


# --- spatial and MariaDB's own types ------------------------------------------------------


def _geometry(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.binary(), _wkb)


def _wkb(value: bytes) -> bytes:
    """The server stores a 4-byte SRID before the WKB; ST_AsBinary() drops it, and so do we."""
    if len(value) < 5:
        raise _Refused("a geometry value is shorter than its SRID and WKB header")
    return value[4:]


def _uuid(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.string(), _uuid_text)


def _uuid_text(value: bytes) -> str:
    digits = value.ljust(16, b"\0").hex()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def _inet4(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.string(), _inet4_text)


def _inet4_text(value: bytes) -> str:
    return ".".join(str(byte) for byte in value.ljust(4, b"\0"))


def _inet6(table: SourceTable, column: SourceColumn, options: TypeOptions) -> ColumnType:
    return ColumnType(pa.string(), inet6_text)


def inet6_text(value: bytes) -> str:
    """INET6 as MariaDB prints it (``Inet6::to_string``): lower-case hex without leading zeros,
    the first longest run of zero words (even a single one) as ``::``, and IPv4-mapped
    (``::ffff:1.2.3.4``) and IPv4-compatible (``::1.2.3.4``) addresses with a dotted quad."""
    data = value.ljust(16, b"\0")
    words = struct.unpack(">8H", data)
    gap, gap_length = _longest_zero_run(words)
    text, i = "", 0
    while i < 8:
        if i == gap:
            text += "::" if i == 0 else ":"
            i += gap_length
        elif i == 6 and gap == 0 and (gap_length == 6 or (gap_length == 5 and words[5] == 0xFFFF)):
            return text + _inet4_text(data[12:])
        else:
            text += f"{words[i]:x}" + (":" if i < 7 else "")
            i += 1
    return text


def _longest_zero_run(words: tuple[int, ...]) -> tuple[int, int]:
    gap, gap_length, start = -1, 0, -1
    for i, word in enumerate(words):
        if word:
            start = -1
            continue
        if start < 0:
            start = i
        if i - start + 1 > gap_length:
            gap, gap_length = start, i - start + 1
    return gap, gap_length


Mapper = Callable[[SourceTable, SourceColumn, TypeOptions], ColumnType]

_MAPPERS: dict[str, Mapper] = {
    **dict.fromkeys(_INTEGER_BITS, _integer),
    "decimal": _decimal,
    "float": _float,
    "double": _double,
    "bit": _bit,
    "year": _year,
    "date": _date,
    "datetime": _datetime,
    "timestamp": _timestamp,
    "time": _time,
    **dict.fromkeys(("char", "varchar", "tinytext", "text", "mediumtext", "longtext"), _text),
    "binary": _binary,
    **dict.fromkeys(("varbinary", "tinyblob", "blob", "mediumblob", "longblob"), _blob),
    "enum": _enum,
    "set": _set,
    "json": _json,
    **dict.fromkeys(
        (
            "geometry",
            "point",
            "linestring",
            "polygon",
            "multipoint",
            "multilinestring",
            "multipolygon",
            "geometrycollection",
            "geomcollection",
        ),
        _geometry,
    ),
    "uuid": _uuid,
    "inet4": _inet4,
    "inet6": _inet6,
}
