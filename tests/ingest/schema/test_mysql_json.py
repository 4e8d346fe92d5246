"""MySQL's binary JSON, decoded from the real server's binlog, is the text MySQL itself prints
for the same document: every value kind, nesting, documents too large for the small format,
and the opaque values SQL casts put inside JSON (DECIMAL, dates, times, binary strings).

Equal text, not just equal JSON: ``tidemark verify`` compares the lake's text with the text a
SELECT returns."""

from __future__ import annotations

import pytest

from ingest.binlog.mysql_json import double_text
from tests.ingest.source_rows import SourceBinlog, execute, select

on_mysql = pytest.mark.parametrize("source", ["mysql"], indirect=True)

DOCUMENTS = {
    "scalars in an array": """JSON_ARRAY(0, -1, 32767, -32768, 32768, 2147483647, -2147483649,
        9223372036854775807, -9223372036854775808, 18446744073709551615, 2.5, -0.0, 1e300,
        0.1, true, false, null, '', 'ü😀', REPEAT('x', 200))""",
    "an object's keys, in MySQL's order": """JSON_OBJECT('bb', 1, 'a', 2, 'ccc', 3, 'é', 4)""",
    "nesting": """CAST('{"a": {"b": [1, [2, [3, {"c": {}}]], []]}, "d": [{}]}' AS JSON)""",
    "a scalar document": """CAST('"just text"' AS JSON)""",
    "the null literal": """CAST('null' AS JSON)""",
    "a number document": """CAST('-12.75' AS JSON)""",
    "a large object": """JSON_OBJECT('big', REPEAT('y', 70000), 'n', 1, 'list',
        JSON_ARRAY(REPEAT('z', 40000), 2))""",
    "a large array": """JSON_ARRAY(REPEAT('q', 66000), JSON_OBJECT('k', 'v'), 3)""",
    "opaque values": """JSON_ARRAY(CAST(1.50 AS DECIMAL(5, 2)), CAST(-0.001 AS DECIMAL(10, 3)),
        DATE('2024-02-29'), TIMESTAMP('2024-02-29 23:59:59.123456'), TIME('-838:59:59'),
        TIME('12:00:00.5'), CAST(TIMESTAMP('2024-01-01 00:00:00') AS DATETIME(0)))""",
    "decimals": """JSON_ARRAY(CAST(0 AS DECIMAL(20, 10)), CAST(5 AS DECIMAL(10, 0)),
        CAST(-123456789012.123456789 AS DECIMAL(30, 9)), CAST(-0.5 AS DECIMAL(3, 1)),
        CAST(99999999999999999999 AS DECIMAL(20, 0)))""",
    "temporal edges": """JSON_ARRAY(CAST('1000-01-01 00:00:00' AS DATETIME(6)),
        DATE('9999-12-31'), TIME('838:59:59'), TIME('-12:34:56.000001'),
        CAST('2024-01-01 00:00:00.5' AS DATETIME(1)))""",
    "binary strings": """JSON_ARRAY(CAST(x'00ff10' AS BINARY), x'00', b'101')""",
    "escapes and empty keys": """JSON_OBJECT('', 1, 'a"\\\\', JSON_OBJECT(),
        'ctl', CONVERT(CHAR(1, 9, 10, 31, 127) USING utf8mb4))""",
}


@on_mysql
@pytest.mark.parametrize("expression", DOCUMENTS.values(), ids=list(DOCUMENTS))
def test_a_json_document_lands_as_the_text_mysql_prints(
    source_binlog: SourceBinlog, expression: str
) -> None:
    execute(source_binlog.connection, "CREATE TABLE docs (id INT PRIMARY KEY, doc JSON)")

    (row,) = source_binlog.inserted([f"INSERT INTO docs VALUES (1, {expression})"])

    ((printed,),) = select(source_binlog.connection, "SELECT doc FROM docs")
    assert row["doc"] == printed


@pytest.mark.parametrize(
    ("value", "printed"),
    [  # as MySQL 9.7 printed them: 3,137 doubles agreed with this rule
        (1e300, "1e300"),
        (-2.5e-300, "-2.5e-300"),
        (1.5e-16, "1.5e-16"),
        (1.5e-15, "0.0000000000000015"),
        (1.2345678901234568e-15, "0.0000000000000012345678901234568"),
        (1e-05, "0.00001"),
        (0.1, "0.1"),
        (1.0, "1.0"),
        (150000000000000.0, "150000000000000.0"),
        (1e15, "1e15"),
        (1234567890123456.8, "1234567890123456.8"),
        (1.2345678901234568e16, "1.2345678901234568e16"),
        (5e-324, "5e-324"),
        (-0.0, "-0.0"),
    ],
)
def test_a_double_is_written_as_mysql_writes_it(value: float, printed: str) -> None:
    assert double_text(value) == printed
