"""Each decoding defect of mysql-replication 1.0.17, and its correction
(docs/architecture.md#source-facts).

These tests read rows through ``ingest.binlog`` and look at the decoded values themselves
(``ingest.schema.values``), before any type mapping: they show that no information the binlog holds
is lost. Each docstring says what the library alone returns (seen against this server).
"""

from __future__ import annotations

import datetime as dt
import struct
from typing import TYPE_CHECKING, Any

import pytest

from ingest.binlog.mysql_json import json_text
from ingest.schema.values import InvalidTemporal
from tests.ingest.source_rows import SourceBinlog, select
from tidemark.contracts.changelog import Operation

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source

NON_STRICT = "SET SESSION sql_mode = 'ALLOW_INVALID_DATES'"


def _decoded(
    binlog: SourceBinlog, columns: str, rows: list[str], session: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The rows of a table ``t (id INT PRIMARY KEY, <columns>)`` as the binlog decodes their
    inserts, without their ids."""
    with binlog.connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE t (id INT PRIMARY KEY, {columns})")
    inserts = [f"INSERT INTO t VALUES ({i}, {values})" for i, values in enumerate(rows, 1)]
    images = binlog.inserted([*session, *inserts])
    return [{k: v for k, v in image.items() if k != "id"} for image in images]


def test_year_0000_is_0(source_binlog: SourceBinlog, admin_connection: Connection) -> None:
    """The library adds 1900 to the stored byte, so YEAR 0000 (stored 0) becomes 1900."""
    rows = _decoded(source_binlog, "y YEAR", ["0", "1901", "2155"])

    assert rows == [{"y": 0}, {"y": 1901}, {"y": 2155}]
    assert [value for (value,) in select(admin_connection, "SELECT y FROM t")] == [0, 1901, 2155]


def test_negative_time_with_a_fraction_is_exact(
    source_binlog: SourceBinlog, admin_connection: Connection
) -> None:
    """The library reads -00:00:00.000001 as -00:00:00.999999 and -12:34:56.000001 as
    -12:34:56.999999: MySQL stores a negative TIME's fraction complemented, and the library
    takes it as the fraction itself (only x.5 comes out right)."""
    rows = _decoded(
        source_binlog,
        "t1 TIME(1), t3 TIME(3), t6 TIME(6)",
        [
            "'-00:00:00.1', '-00:00:01.001', '-00:00:00.000001'",
            "'-838:59:58.9', '-12:34:56.999', '-12:34:56.000001'",
            "'-00:00:01.5', '-00:00:01.5', '-00:00:01.5'",
        ],
    )

    td = dt.timedelta
    assert rows == [
        {"t1": -td(microseconds=100000), "t3": -td(seconds=1, microseconds=1000),
         "t6": -td(microseconds=1)},
        {"t1": -td(hours=838, minutes=59, seconds=58, microseconds=900000),
         "t3": -td(hours=12, minutes=34, seconds=56, microseconds=999000),
         "t6": -td(hours=12, minutes=34, seconds=56, microseconds=1)},
        {"t1": -td(seconds=1.5), "t3": -td(seconds=1.5), "t6": -td(seconds=1.5)},
    ]  # fmt: skip
    truth = select(admin_connection, "SELECT t1, t3, t6 FROM t ORDER BY id")
    assert [tuple(row.values()) for row in rows] == [tuple(values) for values in truth]


def test_zero_and_impossible_dates_keep_the_servers_text_instead_of_becoming_none(
    source_binlog: SourceBinlog, admin_connection: Connection
) -> None:
    """The library returns None (as for NULL) for 0000-00-00 and 2020-00-15, stops the stream
    with ValueError on 2020-02-30 (ALLOW_INVALID_DATES), and returns 1970-01-01 00:00:00 for
    the zero TIMESTAMP."""
    rows = _decoded(
        source_binlog,
        "d DATE, dt DATETIME(3), ts TIMESTAMP(2) NULL",
        [
            "'0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00'",
            "'2020-00-15', '2020-01-00 10:11:12.5', NULL",
            "'2020-02-30', '2020-02-31 23:59:59.999', NULL",
            "NULL, NULL, NULL",
        ],
        session=(NON_STRICT,),
    )

    assert rows == [
        {"d": InvalidTemporal("0000-00-00"), "dt": InvalidTemporal("0000-00-00 00:00:00.000"),
         "ts": InvalidTemporal("0000-00-00 00:00:00.00")},
        {"d": InvalidTemporal("2020-00-15"), "dt": InvalidTemporal("2020-01-00 10:11:12.500"),
         "ts": None},
        {"d": InvalidTemporal("2020-02-30"), "dt": InvalidTemporal("2020-02-31 23:59:59.999"),
         "ts": None},
        {"d": None, "dt": None, "ts": None},
    ]  # fmt: skip
    truth = select(
        admin_connection, "SELECT CAST(d AS CHAR), CAST(dt AS CHAR), CAST(ts AS CHAR) FROM t"
    )
    texts = [
        tuple(v.text if isinstance(v, InvalidTemporal) else v for v in row.values()) for row in rows
    ]
    assert texts == [tuple(values) for values in truth]


def test_timestamp_is_a_utc_datetime_whatever_the_writers_time_zone(
    source_binlog: SourceBinlog, admin_connection: Connection
) -> None:
    """The library returns a naive datetime that happens to be UTC."""
    rows = _decoded(
        source_binlog,
        "ts TIMESTAMP(6) NULL",
        ["'2021-06-01 12:00:00.123456'", "'1970-01-01 05:30:01'"],
        session=("SET SESSION time_zone = '+05:30'",),
    )

    assert rows == [
        {"ts": dt.datetime(2021, 6, 1, 6, 30, 0, 123456, tzinfo=dt.UTC)},
        {"ts": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)},
    ]
    epochs = select(admin_connection, "SELECT UNIX_TIMESTAMP(ts) FROM t ORDER BY id")
    assert [row["ts"].timestamp() for row in rows] == [float(value) for (value,) in epochs]


def test_bit_is_a_number(source_binlog: SourceBinlog) -> None:
    """The library returns BIT as a string of '0' and '1' ('0000000101')."""
    rows = _decoded(
        source_binlog,
        "b1 BIT(1), b10 BIT(10), b64 BIT(64)",
        ["b'1', b'1000000101', b'1' << 63", "b'0', 0, 18446744073709551615"],
    )

    assert rows == [
        {"b1": 1, "b10": 0b1000000101, "b64": 2**63},
        {"b1": 0, "b10": 0, "b64": 2**64 - 1},
    ]


def test_empty_set_is_told_apart_from_null_in_before_and_after_images(
    source_binlog: SourceBinlog, admin_connection: Connection
) -> None:
    """The library returns None for the empty SET, so an update from '' to NULL looks like no
    change at all. A SET is its member bitmask here (names come from information_schema)."""
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE t (id INT PRIMARY KEY, s SET('a', 'b', 'c'))")
    images = source_binlog.images(
        [
            "INSERT INTO t VALUES (1, '')",
            "UPDATE t SET s = NULL WHERE id = 1",
            "UPDATE t SET s = 'c,a' WHERE id = 1",
            "DELETE FROM t WHERE id = 1",
        ],
    )

    assert images == [
        (Operation.INSERT, None, {"id": 1, "s": 0}),
        (Operation.UPDATE, {"id": 1, "s": 0}, {"id": 1, "s": None}),
        (Operation.UPDATE, {"id": 1, "s": None}, {"id": 1, "s": 0b101}),
        (Operation.DELETE, {"id": 1, "s": 0b101}, None),
    ]


def test_enum_and_set_members_that_are_not_utf8_are_not_blanked(
    source_binlog: SourceBinlog,
) -> None:
    """The library names members from the table map decoded as UTF-8, and blanks the rest: a
    latin1 ENUM 'é' comes back as '' (like the invalid value) and SET('é','x') as {'', 'x'}.
    Here ENUM is its 1-based index and SET its bitmask."""
    rows = _decoded(
        source_binlog,
        "e ENUM('é', 'b') CHARACTER SET latin1, s SET('é', 'ü', 'x') CHARACTER SET latin1",
        ["'é', 'é,x'", "'b', 'ü'"],
    )

    assert rows == [{"e": 1, "s": 0b101}, {"e": 2, "s": 0b010}]


def test_text_is_decoded_in_its_own_charset(
    source_binlog: SourceBinlog, admin_connection: Connection
) -> None:
    """The library stops the stream with UnicodeDecodeError on latin1 byte 0x81 (it decodes
    latin1 as Python's cp1252, which leaves five bytes undefined), decodes utf16 and utf32 as
    little-endian (garbage or an error), and returns ucs2 and utf16le text as bytes."""
    rows = _decoded(
        source_binlog,
        "l1 VARCHAR(5) CHARACTER SET latin1, u16 VARCHAR(5) CHARACTER SET utf16, "
        "uc2 VARCHAR(5) CHARACTER SET ucs2, u32 VARCHAR(5) CHARACTER SET utf32, "
        "u16le VARCHAR(5) CHARACTER SET utf16le",
        ["_latin1 x'8081e9', 'h😀', 'ĀЖ', '😀', 'é😀'"],
    )

    assert rows == [{"l1": "€\x81é", "u16": "h😀", "uc2": "ĀЖ", "u32": "😀", "u16le": "é😀"}]
    truth = select(admin_connection, "SELECT l1, u16, uc2, u32, u16le FROM t")
    assert [tuple(row.values()) for row in rows] == [tuple(values) for values in truth]


@pytest.mark.parametrize(
    ("columns", "rows", "expected"),
    [
        pytest.param(
            "b BINARY(4), vb VARBINARY(4)",
            ["x'01000000', x'0100'", "x'00000000', x''"],
            [{"b": b"\x01", "vb": b"\x01\0"}, {"b": b"", "vb": b""}],
            id="binary",
        ),
        pytest.param(
            "u UUID, i6 INET6",
            ["'6ccd780c-baba-1026-9564-5b8c656024db', '::ffff:1.2.3.4'",
             "'00000000-0000-0000-0000-000000000000', '::'"],
            [{"u": bytes.fromhex("6ccd780cbaba102695645b8c656024db"),
              "i6": bytes.fromhex("00000000000000000000ffff01020304")},
             {"u": b"", "i6": b""}],
            id="uuid and inet6",
            marks=pytest.mark.mariadb_only("MySQL has no UUID or INET6 type"),
        ),
    ],
)  # fmt: skip
def test_binary_strings_are_bytes_without_the_padding_the_binlog_drops(
    source_binlog: SourceBinlog, columns: str, rows: list[str], expected: list[dict[str, Any]]
) -> None:
    """The binlog itself leaves out BINARY(n)'s trailing 0x00 bytes (``ingest.schema.types`` pads
    them back), and MariaDB's UUID and INET6 are such binary values. The library returns an empty
    one as the str '' (Python never looks up the 'binary' codec for empty input)."""
    assert _decoded(source_binlog, columns, rows) == expected


# --- MySQL JSON (binary documents built here, each shape on purpose) ----------------------


def _jsonb(value: Any) -> bytes:
    """A MySQL binary JSON document (``json_binary.cc``, small storage format)."""
    kind, body = _jsonb_value(value)
    return bytes([kind]) + body


def _jsonb_value(value: Any) -> tuple[int, bytes]:
    if value is None or isinstance(value, bool):
        return 0x04, bytes([{None: 0, True: 1, False: 2}[value]])
    if isinstance(value, int):
        return 0x05, struct.pack("<h", value)
    if isinstance(value, float):
        return 0x0B, struct.pack("<d", value)
    if isinstance(value, str):
        data = value.encode()
        assert len(data) < 128
        return 0x0C, bytes([len(data)]) + data
    if isinstance(value, dict):
        return 0x00, _jsonb_container(list(value.items()))
    return 0x02, _jsonb_container([(None, item) for item in value])


def _jsonb_container(items: list[tuple[str | None, Any]]) -> bytes:
    keys = [key.encode() for key, _ in items if key is not None]
    header = 4 + 4 * len(keys) + 3 * len(items)
    key_entries, key_data = b"", b""
    for key in keys:
        key_entries += struct.pack("<HH", header + len(key_data), len(key))
        key_data += key
    value_entries, value_data = b"", b""
    for _, item in items:
        kind, body = _jsonb_value(item)
        if kind in (0x04, 0x05):  # inlined in the entry
            value_entries += bytes([kind]) + body.ljust(2, b"\0")
        else:
            offset = header + len(key_data) + len(value_data)
            value_entries += bytes([kind]) + struct.pack("<H", offset)
            value_data += body
    size = header + len(key_data) + len(value_data)
    return (
        struct.pack("<HH", len(items), size) + key_entries + value_entries + key_data + value_data
    )


@pytest.mark.parametrize(
    ("document", "text"),
    [
        (
            {"a": {"b": [1, 2.5, None, "x"]}, "ü": "😀"},
            '{"a": {"b": [1, 2.5, null, "x"]}, "ü": "😀"}',
        ),
        (
            [True, False, -7, 'quote " and \\ and \n'],
            '[true, false, -7, "quote \\" and \\\\ and \\n"]',
        ),
        ({}, "{}"),
        ("text", '"text"'),
    ],
)
def test_mysql_json_is_json_text_with_string_keys(document: Any, text: str) -> None:
    """The library parses MySQL's binary JSON into Python objects whose keys and strings are
    bytes ({b'a': b'x'}); the changelog holds the document as text, laid out as MySQL prints it
    (``tests/ingest/schema/test_mysql_json.py`` compares it with the real server's)."""
    assert json_text(_jsonb(document)) == text


def test_an_empty_mysql_json_value_is_the_json_null_literal() -> None:
    assert json_text(b"") == "null"
