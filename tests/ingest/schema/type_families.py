"""The type families the type mapping is tested with: for each, columns, edge values (minimum,
maximum, NULL, and the values the binlog library gets wrong) and what they convert to.

Shared by the tests of the binlog's conversion (``test_types``), of a snapshot's SELECT
(``test_select_values``) and of the fast binlog path (``tests.ingest.binlog``). A family of
MariaDB's own types says so (``mariadb_only``): its tests run on MariaDB alone.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from tests.ingest.source_rows import Row
from tidemark.stack.endpoints import SourceFlavor

UTC = dt.UTC


@dataclass(frozen=True)
class Family:
    """One type family: a table ``t (id INT PRIMARY KEY, <columns>)`` and its rows."""

    name: str
    columns: str
    #: the value list of each row after its id (rows get ids 1, 2, ...)
    rows: tuple[str, ...]
    #: each row converted, without its id
    expected: tuple[Row, ...]
    #: the Arrow type of each column
    types: dict[str, pa.DataType]
    #: run before the inserts (sql_mode, time_zone)
    session: tuple[str, ...] = ()
    #: a SELECT list whose rows (by id) are the ground truth for ``truth_of(converted row)``
    truth: str | None = None
    truth_of: Callable[[Row], tuple[Any, ...]] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: why MySQL cannot run the family, if its types are MariaDB's alone
    mariadb_only: str | None = None
    #: why only MySQL has this family's types (its 0900 collations), if only it does
    mysql_only: str | None = None

    def column_definitions(self) -> list[tuple[str, str]]:
        """(name, ``TYPE ...``) of each column: the list split at its commas outside
        parentheses."""
        pieces = []
        depth, start = 0, 0
        for i, char in enumerate(self.columns + ","):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if char == "," and depth == 0:
                name, definition = self.columns[start:i].strip().split(" ", 1)
                pieces.append((name, definition))
                start = i + 1
        return pieces


def _wkb_point(x: float, y: float) -> bytes:
    """Little-endian WKB of POINT(x y)."""
    return struct.pack("<BIdd", 1, 1, x, y)


def _epoch_us(value: dt.datetime | None) -> int | None:
    if value is None:
        return None
    return (value - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)


NON_STRICT = "SET SESSION sql_mode = 'ALLOW_INVALID_DATES'"  # lets zero and invalid dates in

FAMILIES = [
    Family(
        name="integers",
        columns="ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED, "
        "mi MEDIUMINT, mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, "
        "bu BIGINT UNSIGNED",
        rows=(
            "-128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0",
            "127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, "
            "9223372036854775807, 18446744073709551615",
            "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
        ),
        expected=(
            {
                "ti": -128,
                "tu": 0,
                "si": -32768,
                "su": 0,
                "mi": -8388608,
                "mu": 0,
                "i": -2147483648,
                "iu": 0,
                "bi": -9223372036854775808,
                "bu": Decimal(0),
            },
            {
                "ti": 127,
                "tu": 255,
                "si": 32767,
                "su": 65535,
                "mi": 8388607,
                "mu": 16777215,
                "i": 2147483647,
                "iu": 4294967295,
                "bi": 9223372036854775807,
                "bu": Decimal(18446744073709551615),
            },
            dict.fromkeys(("ti", "tu", "si", "su", "mi", "mu", "i", "iu", "bi", "bu")),
        ),  # fmt: skip
        types={
            "ti": pa.int32(),
            "tu": pa.int32(),
            "si": pa.int32(),
            "su": pa.int32(),
            "mi": pa.int32(),
            "mu": pa.int32(),
            "i": pa.int32(),
            "iu": pa.int64(),
            "bi": pa.int64(),
            "bu": pa.decimal128(20, 0),
        },  # fmt: skip
        truth="ti, tu, si, su, mi, mu, i, iu, bi, bu",
    ),
    Family(
        name="booleans",
        columns="b BOOL, bn BOOLEAN NOT NULL, tu TINYINT(1) UNSIGNED, t2 TINYINT(2)",
        rows=("0, 0, 0, 0", "1, 1, 255, 99", "NULL, 1, NULL, NULL"),
        expected=(
            {"b": False, "bn": False, "tu": 0, "t2": 0},
            {"b": True, "bn": True, "tu": 255, "t2": 99},
            {"b": None, "bn": True, "tu": None, "t2": None},
        ),
        types={"b": pa.bool_(), "bn": pa.bool_(), "tu": pa.int32(), "t2": pa.int32()},
        truth="b, bn, tu, t2",
    ),
    Family(
        name="decimals",
        columns="d10 DECIMAL(10,0), d55 DECIMAL(5,5), d38 DECIMAL(38,10), d65 DECIMAL(65,30), "
        "du DECIMAL(4,2) UNSIGNED",
        rows=(
            "9999999999, 0.99999, 9999999999999999999999999999.9999999999, "
            "99999999999999999999999999999999999.999999999999999999999999999999, 99.99",
            "-9999999999, -0.99999, -9999999999999999999999999999.9999999999, "
            "-99999999999999999999999999999999999.999999999999999999999999999999, 0",
            "0, 0.00001, -0.0000000001, 0.000000000000000000000000000001, 0.01",
            "NULL, NULL, NULL, 0, NULL",
        ),
        expected=(
            {
                "d10": Decimal("9999999999"),
                "d55": Decimal("0.99999"),
                "d38": Decimal("9999999999999999999999999999.9999999999"),
                "d65": "99999999999999999999999999999999999.999999999999999999999999999999",
                "du": Decimal("99.99"),
            },
            {
                "d10": Decimal("-9999999999"),
                "d55": Decimal("-0.99999"),
                "d38": Decimal("-9999999999999999999999999999.9999999999"),
                "d65": "-99999999999999999999999999999999999.999999999999999999999999999999",
                "du": Decimal("0.00"),
            },
            {
                "d10": Decimal("0"),
                "d55": Decimal("0.00001"),
                "d38": Decimal("-1E-10"),
                "d65": "0.000000000000000000000000000001",
                "du": Decimal("0.01"),
            },
            {
                "d10": None,
                "d55": None,
                "d38": None,
                "d65": "0.000000000000000000000000000000",
                "du": None,
            },
        ),  # fmt: skip
        types={
            "d10": pa.decimal128(10, 0),
            "d55": pa.decimal128(5, 5),
            "d38": pa.decimal128(38, 10),
            "d65": pa.string(),
            "du": pa.decimal128(4, 2),
        },  # fmt: skip
        truth="d10, d55, d38, CAST(d65 AS CHAR), du",
    ),
    Family(
        name="floats",
        columns="f FLOAT, d DOUBLE",
        rows=(
            "-3.4028234e38, -1.7976931348623157e308",
            "3.4028234e38, 1.7976931348623157e308",
            "1.1, 0.1",
            "1.17549435e-38, 2.2250738585072014e-308",
            "NULL, NULL",
        ),
        expected=(
            {"f": -3.4028234663852886e38, "d": -1.7976931348623157e308},
            {"f": 3.4028234663852886e38, "d": 1.7976931348623157e308},
            {"f": 1.100000023841858, "d": 0.1},  # FLOAT holds 1.1 as the nearest float32
            {"f": 1.1754943508222875e-38, "d": 2.2250738585072014e-308},
            {"f": None, "d": None},
        ),
        types={"f": pa.float32(), "d": pa.float64()},
        truth="CAST(f AS DOUBLE), d",
    ),
    Family(
        name="bits",
        columns="b1 BIT(1), b10 BIT(10), b64 BIT(64)",
        rows=(
            "b'0', b'0000000000', 0",
            "b'1', b'1000000001', 18446744073709551615",
            "b'1', b'0101010101', b'1' << 63 | 1",
            "NULL, NULL, NULL",
        ),
        expected=(
            {"b1": False, "b10": 0, "b64": Decimal(0)},
            {"b1": True, "b10": 0b1000000001, "b64": Decimal(2**64 - 1)},
            {"b1": True, "b10": 0b0101010101, "b64": Decimal(2**63 + 1)},
            {"b1": None, "b10": None, "b64": None},
        ),
        types={"b1": pa.bool_(), "b10": pa.int64(), "b64": pa.decimal128(20, 0)},
        truth="b1 + 0, b10 + 0, b64 + 0",
    ),
    Family(
        name="years",
        columns="y YEAR",
        rows=("0", "1901", "2155", "'69'", "NULL"),  # numeric 0 is YEAR 0000; '69' is 2069
        expected=({"y": 0}, {"y": 1901}, {"y": 2155}, {"y": 2069}, {"y": None}),
        types={"y": pa.int32()},
        truth="y",
    ),
    Family(
        name="dates",
        columns="d DATE",
        rows=(
            "'1000-01-01'",
            "'9999-12-31'",
            "'0001-01-01'",
            "'2024-02-29'",
            "'0000-00-00'",
            "'2020-00-15'",
            "'2020-02-30'",
            "NULL",
        ),  # fmt: skip
        expected=(
            {"d": dt.date(1000, 1, 1)},
            {"d": dt.date(9999, 12, 31)},
            {"d": dt.date(1, 1, 1)},
            {"d": dt.date(2024, 2, 29)},
            {"d": None},
            {"d": None},
            {"d": None},  # zero and impossible dates: NULL
            {"d": None},
        ),  # fmt: skip
        types={"d": pa.date32()},
        session=(NON_STRICT,),
        truth="d + INTERVAL 0 DAY",  # NULL for zero and impossible dates
    ),
    Family(
        name="datetimes",
        columns="d0 DATETIME, d3 DATETIME(3), d6 DATETIME(6)",
        rows=(
            "'1000-01-01 00:00:00', '1000-01-01 00:00:00.001', '0001-01-01 00:00:00.000001'",
            "'9999-12-31 23:59:59', '9999-12-31 23:59:59.999', '9999-12-31 23:59:59.999999'",
            "'0000-00-00 00:00:00', '0000-00-00 00:00:00', '2020-01-00 10:00:00.5'",
            "NULL, NULL, NULL",
        ),
        expected=(
            {
                "d0": dt.datetime(1000, 1, 1),
                "d3": dt.datetime(1000, 1, 1, 0, 0, 0, 1000),
                "d6": dt.datetime(1, 1, 1, 0, 0, 0, 1),
            },
            {
                "d0": dt.datetime(9999, 12, 31, 23, 59, 59),
                "d3": dt.datetime(9999, 12, 31, 23, 59, 59, 999000),
                "d6": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
            },
            {"d0": None, "d3": None, "d6": None},
            {"d0": None, "d3": None, "d6": None},
        ),  # fmt: skip
        types={"d0": pa.timestamp("us"), "d3": pa.timestamp("us"), "d6": pa.timestamp("us")},
        # DATETIME has no zone: the session's does not move it
        session=(NON_STRICT, "SET SESSION time_zone = '+05:30'"),
        truth="d0 + INTERVAL 0 DAY, d3 + INTERVAL 0 DAY, d6 + INTERVAL 0 DAY",
    ),
    Family(
        name="timestamps",
        columns="t0 TIMESTAMP NULL, t3 TIMESTAMP(3) NULL, t6 TIMESTAMP(6) NULL",
        # written under +05:30: TIMESTAMP stores the UTC instant
        rows=(
            "'1970-01-01 05:30:01', '1970-01-01 05:30:01.001', '1970-01-01 05:30:01.000001'",
            "'2038-01-19 08:44:07', '2038-01-19 08:44:07.999', '2038-01-19 08:44:07.999999'",
            "'2021-06-01 12:00:00', '2021-06-01 00:00:00.5', '2021-06-01 05:29:59.999999'",
            "'0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00'",
            "NULL, NULL, NULL",
        ),
        expected=(
            {
                "t0": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
                "t3": dt.datetime(1970, 1, 1, 0, 0, 1, 1000, tzinfo=UTC),
                "t6": dt.datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC),
            },
            {
                "t0": dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC),
                "t3": dt.datetime(2038, 1, 19, 3, 14, 7, 999000, tzinfo=UTC),
                "t6": dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC),
            },
            {
                "t0": dt.datetime(2021, 6, 1, 6, 30, tzinfo=UTC),
                "t3": dt.datetime(2021, 5, 31, 18, 30, 0, 500000, tzinfo=UTC),
                "t6": dt.datetime(2021, 5, 31, 23, 59, 59, 999999, tzinfo=UTC),
            },
            {"t0": None, "t3": None, "t6": None},  # the zero TIMESTAMP: NULL
            {"t0": None, "t3": None, "t6": None},
        ),  # fmt: skip
        types={
            "t0": pa.timestamp("us", tz="UTC"),
            "t3": pa.timestamp("us", tz="UTC"),
            "t6": pa.timestamp("us", tz="UTC"),
        },
        session=(NON_STRICT, "SET SESSION time_zone = '+05:30'"),
        truth="CAST(NULLIF(UNIX_TIMESTAMP(t0), 0) * 1000000 AS SIGNED), "
        "CAST(NULLIF(UNIX_TIMESTAMP(t3), 0) * 1000000 AS SIGNED), "
        "CAST(NULLIF(UNIX_TIMESTAMP(t6), 0) * 1000000 AS SIGNED)",
        truth_of=lambda row: (_epoch_us(row["t0"]), _epoch_us(row["t3"]), _epoch_us(row["t6"])),
        # the server-time-zone only applies to naive values; binlog values are UTC already
        options={"server_time_zone": "Asia/Kolkata"},
    ),
    Family(
        name="times",
        columns="t0 TIME, t1 TIME(1), t3 TIME(3), t6 TIME(6)",
        rows=(
            "'-838:59:59', '-838:59:58.9', '-838:59:58.999', '-838:59:58.999999'",
            "'838:59:59', '838:59:58.9', '838:59:58.999', '838:59:58.999999'",
            "'-00:00:01', '-00:00:00.1', '-00:00:01.25', '-00:00:00.000001'",
            "'-12:34:56', '-12:34:56.5', '-12:34:56.001', '-12:34:56.000001'",
            "'00:00:00', '00:00:00.0', '23:59:59.999', '24:00:00.000001'",
            "NULL, NULL, NULL, NULL",
        ),
        # signed microseconds
        expected=(
            {
                "t0": -3020399_000000,
                "t1": -3020398_900000,
                "t3": -3020398_999000,
                "t6": -3020398_999999,
            },
            {
                "t0": 3020399_000000,
                "t1": 3020398_900000,
                "t3": 3020398_999000,
                "t6": 3020398_999999,
            },
            {"t0": -1_000000, "t1": -100000, "t3": -1_250000, "t6": -1},
            {"t0": -45296_000000, "t1": -45296_500000, "t3": -45296_001000, "t6": -45296_000001},
            {"t0": 0, "t1": 0, "t3": 86399_999000, "t6": 86400_000001},
            {"t0": None, "t1": None, "t3": None, "t6": None},
        ),  # fmt: skip
        types={"t0": pa.int64(), "t1": pa.int64(), "t3": pa.int64(), "t6": pa.int64()},
        # signed microseconds from the parts: MySQL's TIME_TO_SEC drops the fraction
        truth=", ".join(
            f"IF({c} < 0, -1, 1) * ((HOUR({c}) * 3600 + MINUTE({c}) * 60 + SECOND({c})) "
            f"* 1000000 + MICROSECOND({c}))"
            for c in "t0 t1 t3 t6".split()
        ),
    ),
    Family(
        name="text",
        columns="u4 VARCHAR(20) CHARACTER SET utf8mb4, u3 CHAR(5) CHARACTER SET utf8mb3, "
        "l1 VARCHAR(20) CHARACTER SET latin1, a VARCHAR(5) CHARACTER SET ascii, "
        "ub VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, "
        "u16 VARCHAR(5) CHARACTER SET utf16, uc2 CHAR(3) CHARACTER SET ucs2, "
        "u32 VARCHAR(5) CHARACTER SET utf32, u16le TINYTEXT CHARACTER SET utf16le, "
        "gb VARCHAR(5) CHARACTER SET gbk, tx TEXT, lt LONGTEXT",
        rows=(
            # latin1 is Windows-1252 with 0x81 (and four more) mapped to the C1 control
            "'a😀b', 'été ', _latin1 x'636166e920812080209d', 'ab ', 'Ab😀', "
            "'h😀', 'ab ', '😀', 'é😀', '中文', 'text😀', REPEAT('x', 70000)",
            "'', '', '', '', '', '', '', '', '', '', '', ''",
            "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
        ),
        expected=(
            # CHAR drops trailing spaces (as a SELECT shows it); VARCHAR keeps them
            {
                "u4": "a😀b",
                "u3": "été",
                "l1": "café \x81 € \x9d",
                "a": "ab ",
                "ub": "Ab😀",
                "u16": "h😀",
                "uc2": "ab",
                "u32": "😀",
                "u16le": "é😀",
                "gb": "中文",
                "tx": "text😀",
                "lt": "x" * 70000,
            },
            dict.fromkeys(
                (
                    "u4",
                    "u3",
                    "l1",
                    "a",
                    "ub",
                    "u16",
                    "uc2",
                    "u32",
                    "u16le",
                    "gb",
                    "tx",
                    "lt",
                ),
                "",
            ),
            dict.fromkeys(
                (
                    "u4",
                    "u3",
                    "l1",
                    "a",
                    "ub",
                    "u16",
                    "uc2",
                    "u32",
                    "u16le",
                    "gb",
                    "tx",
                    "lt",
                ),
            ),
        ),  # fmt: skip
        types=dict.fromkeys(
            ("u4", "u3", "l1", "a", "ub", "u16", "uc2", "u32", "u16le", "gb", "tx", "lt"),
            pa.string(),
        ),
        truth="u4, u3, l1, a, ub, u16, uc2, u32, u16le, gb, tx, lt",
    ),
    Family(
        name="uca1400",
        columns="uca VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci",
        rows=("'Ü😀'", "''", "NULL"),
        expected=({"uca": "Ü😀"}, {"uca": ""}, {"uca": None}),
        types={"uca": pa.string()},
        truth="uca",
        mariadb_only="MySQL has no UCA 14.0.0 collations",
    ),
    Family(
        name="uca0900",
        columns=(
            "ai VARCHAR(5) COLLATE utf8mb4_0900_ai_ci, cs VARCHAR(5) COLLATE utf8mb4_0900_as_cs, "
            "ja VARCHAR(5) COLLATE utf8mb4_ja_0900_as_cs_ks, bn CHAR(5) COLLATE utf8mb4_0900_bin, "
            "de TEXT COLLATE utf8mb4_de_pb_0900_ai_ci, u3 VARCHAR(5) CHARACTER SET utf8mb3"
        ),
        rows=(
            "'Ü😀', 'Äb', 'ｶﾀｶﾅ', 'x ', 'Straße', 'é'",
            "'', '', '', '', '', ''",
            "NULL, NULL, NULL, NULL, NULL, NULL",
        ),
        # CHAR without its trailing spaces, as SELECT shows it
        expected=(
            {"ai": "Ü😀", "cs": "Äb", "ja": "ｶﾀｶﾅ", "bn": "x", "de": "Straße", "u3": "é"},
            dict.fromkeys(("ai", "cs", "ja", "bn", "de", "u3"), ""),
            dict.fromkeys(("ai", "cs", "ja", "bn", "de", "u3")),
        ),
        types=dict.fromkeys(("ai", "cs", "ja", "bn", "de", "u3"), pa.string()),
        truth="ai, cs, ja, bn, de, u3",
        mysql_only="MariaDB has no UCA 9.0.0 (0900) collations",
    ),
    Family(
        name="binary",
        columns="b BINARY(4), vb VARBINARY(4), bl BLOB, lb LONGBLOB, "
        "bc CHAR(3) CHARACTER SET binary",
        rows=(
            "x'01000000', x'0100', x'00ff00', x'', 'a'",
            "x'00000000', x'', x'', x'00', x'000000'",
            "x'', x'00', x'ff', x'ffff', ''",
            "NULL, NULL, NULL, NULL, NULL",
        ),
        # BINARY(n) is padded with 0x00 to n bytes; the binlog drops the padding
        expected=(
            {"b": b"\x01\0\0\0", "vb": b"\x01\0", "bl": b"\0\xff\0", "lb": b"", "bc": b"a\0\0"},
            {"b": b"\0\0\0\0", "vb": b"", "bl": b"", "lb": b"\0", "bc": b"\0\0\0"},
            {"b": b"\0\0\0\0", "vb": b"\0", "bl": b"\xff", "lb": b"\xff\xff", "bc": b"\0\0\0"},
            {"b": None, "vb": None, "bl": None, "lb": None, "bc": None},
        ),
        types={
            "b": pa.binary(),
            "vb": pa.binary(),
            "bl": pa.binary(),
            "lb": pa.binary(),
            "bc": pa.binary(),
        },  # fmt: skip
        truth="b, vb, bl, lb, bc",
    ),
    Family(
        name="enums",
        columns=r"e ENUM('a', 'é', 'it''s', 'back\\slash', 'x,y', 'UNSIGNED'), "
        "el ENUM('é', 'b') CHARACTER SET latin1",
        rows=(
            "'a', 'é'",
            "'é', 'b'",
            r"'it''s', NULL",
            r"'back\\slash', 'b'",
            "'x,y', 'é'",
            "'UNSIGNED', 'b'",
            "'no such member', 'zzz'",  # a non-strict session stores the error value ''
            "NULL, NULL",
        ),
        expected=(
            {"e": "a", "el": "é"},
            {"e": "é", "el": "b"},
            {"e": "it's", "el": None},
            {"e": "back\\slash", "el": "b"},
            {"e": "x,y", "el": "é"},
            {"e": "UNSIGNED", "el": "b"},
            {"e": "", "el": ""},
            {"e": None, "el": None},
        ),
        types={"e": pa.string(), "el": pa.string()},
        session=(NON_STRICT,),
        truth="e, el",
    ),
    Family(
        name="sets",
        columns="s SET('a', 'b', 'c'), sl SET('é', 'ü', 'x') CHARACTER SET latin1",
        rows=("'', ''", "'a,c', 'ü,é'", "'c,b,a', 'x'", "'b', ''", "NULL, NULL"),
        # members in definition order; the empty SET is '' and not NULL
        expected=(
            {"s": "", "sl": ""},
            {"s": "a,c", "sl": "é,ü"},
            {"s": "a,b,c", "sl": "x"},
            {"s": "b", "sl": ""},
            {"s": None, "sl": None},
        ),
        types={"s": pa.string(), "sl": pa.string()},
        truth="s, sl",
    ),
    Family(
        name="json",
        columns="j JSON",
        rows=(
            """'{"a": {"b": [1, 2.5, null, "x"], "c": {}}, "ü": "😀"}'""",
            "'[]'",
            """'"text"'""",
            "'null'",  # the JSON null literal, not SQL NULL
            "NULL",
        ),
        # MariaDB keeps JSON as the text written
        expected=(
            {"j": '{"a": {"b": [1, 2.5, null, "x"], "c": {}}, "ü": "😀"}'},
            {"j": "[]"},
            {"j": '"text"'},
            {"j": "null"},
            {"j": None},
        ),
        types={"j": pa.string()},
        truth="j",
    ),
    Family(
        name="geometry",
        columns="g GEOMETRY, p POINT",
        rows=(
            # a projected SRID: MySQL reads a geographic one's text as latitude first
            "ST_GeomFromText('POINT(1 2)', 3857), ST_GeomFromText('POINT(-1.5 1e10)')",
            "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'), ST_GeomFromText('POINT(0 0)')",
            "NULL, NULL",
        ),
        expected=(
            {"g": _wkb_point(1, 2), "p": _wkb_point(-1.5, 1e10)},
            {
                "g": struct.pack("<BII", 1, 3, 1) + struct.pack("<I8d", 4, 0, 0, 1, 0, 1, 1, 0, 0),
                "p": _wkb_point(0, 0),
            },
            {"g": None, "p": None},
        ),  # fmt: skip
        types={"g": pa.binary(), "p": pa.binary()},
        truth="ST_AsBinary(g), ST_AsBinary(p)",  # WKB without the server's SRID prefix
    ),
    Family(
        name="uuid",
        columns="u UUID",
        rows=(
            "'123e4567-e89b-12d3-a456-426614174000'",
            "'6ccd780c-baba-1026-9564-5b8c656024db'",
            "'ffffffff-ffff-ffff-ffff-ffffffffffff'",
            "'00000000-0000-0000-0000-000000000000'",
            "'01234567-89ab-4def-c123-456789ab0000'",  # trailing zero bytes
            "NULL",
        ),
        expected=(
            {"u": "123e4567-e89b-12d3-a456-426614174000"},
            {"u": "6ccd780c-baba-1026-9564-5b8c656024db"},
            {"u": "ffffffff-ffff-ffff-ffff-ffffffffffff"},
            {"u": "00000000-0000-0000-0000-000000000000"},
            {"u": "01234567-89ab-4def-c123-456789ab0000"},
            {"u": None},
        ),
        types={"u": pa.string()},
        truth="u",
        mariadb_only="MySQL has no UUID type",
    ),
    Family(
        name="inet",
        columns="i6 INET6, i4 INET4",
        rows=(
            "'::', '0.0.0.0'",
            "'::1', '255.255.255.255'",
            "'::ffff:1.2.3.4', '10.0.0.1'",
            "'::1.2.3.4', '192.168.0.0'",
            "'2001:db8::1', NULL",
            "'2001:db8:0:1:1:1:1:1', NULL",
            "'1:0:0:2:0:0:0:3', NULL",
            "'fe80::', NULL",
            "'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', NULL",
            "NULL, NULL",
        ),
        # as MariaDB prints them: the first longest run of zero words, even one, is '::'
        expected=(
            {"i6": "::", "i4": "0.0.0.0"},
            {"i6": "::1", "i4": "255.255.255.255"},
            {"i6": "::ffff:1.2.3.4", "i4": "10.0.0.1"},
            {"i6": "::1.2.3.4", "i4": "192.168.0.0"},
            {"i6": "2001:db8::1", "i4": None},
            {"i6": "2001:db8::1:1:1:1:1", "i4": None},
            {"i6": "1:0:0:2::3", "i4": None},
            {"i6": "fe80::", "i4": None},
            {"i6": "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "i4": None},
            {"i6": None, "i4": None},
        ),
        types={"i6": pa.string(), "i4": pa.string()},
        truth="i6, i4",
        mariadb_only="MySQL has no INET6 or INET4 type",
    ),
]


def family_params() -> list[Any]:
    """``FAMILIES`` to parametrize a test marked ``every_source`` with: a family of one
    server's own types is skipped on the other."""
    return [pytest.param(family, id=family.name, marks=_only_marks(family)) for family in FAMILIES]


def _only_marks(family: Family) -> list[Any]:
    if family.mariadb_only:
        return [pytest.mark.mariadb_only(family.mariadb_only)]
    if family.mysql_only:
        return [pytest.mark.mysql_only(family.mysql_only)]
    return []


def families_on(flavor: SourceFlavor) -> list[Family]:
    """The families whose types ``flavor``'s server has."""
    return [
        family
        for family in FAMILIES
        if (flavor == "mariadb" or family.mariadb_only is None)
        and (flavor == "mysql" or family.mysql_only is None)
    ]
