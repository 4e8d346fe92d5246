"""The MySQL -> Iceberg type mapping, one type family at a time, against each real source server.

Each family inserts edge values (minimum, maximum, NULL, and the values the binlog library gets
wrong), reads them back through ``ingest.binlog``, converts them with ``ingest.schema.types`` and
checks three things: the exact Python values, that they fit the family's Arrow schema, and,
where the server is the ground truth, that they equal what a SELECT returns.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog

from ingest.errors import (
    NulledValuesError,
    SchemaChangeStopError,
    SourceSchemaError,
    UnconvertibleValueError,
)
from ingest.schema.source_tables import read_source_tables
from ingest.schema.types import arrow_schema, values_converter
from ingest.schema.values import UndecodableText
from tests.ingest.schema.type_families import NON_STRICT, UTC, Family, families_on, family_params
from tests.ingest.source_rows import Row, SourceBinlog, select
from tidemark.contracts.source_tables import SourceColumn, SourceTable
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


@pytest.mark.parametrize("family", family_params())
def test_type_family_converts_to_exact_values_that_fit_its_arrow_schema(
    family: Family,
    source_binlog: SourceBinlog,
    source_database: str,
    admin_connection: Connection,
) -> None:
    table = _create(admin_connection, source_database, family.columns)
    statements = [
        *family.session,
        *(f"INSERT INTO t VALUES ({i}, {values})" for i, values in enumerate(family.rows, 1)),
    ]
    images = source_binlog.inserted(statements)

    convert = dict_converter(table, **family.options)
    rows = [convert(image) for image in images]

    assert rows == [{"id": i, **row} for i, row in enumerate(family.expected, 1)]
    schema = arrow_schema(table)
    assert dict(zip(schema.names, schema.types, strict=True)) == {"id": pa.int32(), **family.types}
    assert pa.Table.from_pylist(rows, schema=schema).to_pylist() == rows
    if family.truth is not None:
        truth_of = family.truth_of or (lambda row: tuple(row[name] for name in family.types))
        select(admin_connection, "SET SESSION sql_mode = DEFAULT")  # strict date functions
        truth = select(admin_connection, f"SELECT {family.truth} FROM t ORDER BY id")
        assert [truth_of(row) for row in rows] == [tuple(values) for values in truth]


def dict_converter(
    table: SourceTable, server_time_zone: str | None = None, **options: bool
) -> Callable[[Row], Row]:
    """``values_converter`` for images of the table's columns, taken and given as dicts; a row
    with values stored as NULL as it lands (their records: ``test_error_table``)."""
    names = tuple(column.name for column in table.columns)
    convert_values = values_converter(table, names, server_time_zone, **options)

    def convert(row: Row) -> Row:
        try:
            values = convert_values(tuple(row[name] for name in names))
        except NulledValuesError as stored:
            values = stored.values
        return dict(zip(names, values, strict=True))

    return convert


def _create(connection: Connection, database: str, columns: str) -> SourceTable:
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE t (id INT PRIMARY KEY, {columns})")
    return read_source_tables(connection, [(database, "t")])[(database, "t")]


# --- values and columns that cannot be represented -------------------------------------------


def test_a_zero_date_in_a_not_null_column_is_refused_naming_table_column_and_value(
    source_binlog: SourceBinlog, source_database: str, admin_connection: Connection
) -> None:
    table = _create(
        admin_connection,
        source_database,
        "d DATE NOT NULL, dt DATETIME(3) NOT NULL, ts TIMESTAMP NOT NULL",
    )
    ok = "'2020-01-01', '2020-01-01 00:00:00', '2020-01-01 00:00:00'"
    images = source_binlog.inserted(
        [
            NON_STRICT,
            "INSERT INTO t VALUES (1, '0000-00-00', '2020-01-01', '2020-01-01')",
            "INSERT INTO t VALUES (2, '2020-01-01', '2020-00-01 10:00:00', '2020-01-01')",
            "INSERT INTO t VALUES (3, '2020-01-01', '2020-01-01', '0000-00-00 00:00:00')",
            f"INSERT INTO t VALUES (4, {ok})",
        ],
    )
    convert = dict_converter(table)

    refused = []
    for image in images[:3]:
        with pytest.raises(UnconvertibleValueError) as caught:
            convert(image)
        refused.append((caught.value.table, caught.value.column, caught.value.raw))

    table_id = f"{source_database}.t"
    assert refused == [
        (table_id, "d", "InvalidTemporal(text='0000-00-00')"),
        (table_id, "dt", "InvalidTemporal(text='2020-00-01 10:00:00.000')"),
        (table_id, "ts", "InvalidTemporal(text='0000-00-00 00:00:00')"),
    ]
    assert str(caught.value).startswith(f"{table_id}.ts: cannot convert the value ")
    assert "NOT NULL" in caught.value.reason
    assert convert(images[3])["d"] == dt.date(2020, 1, 1)


def test_tinyint1_other_than_0_or_1_is_refused_unless_kept_as_an_integer(
    source_binlog: SourceBinlog, source_database: str, admin_connection: Connection
) -> None:
    table = _create(admin_connection, source_database, "flag BOOL")
    images = source_binlog.inserted(
        ["INSERT INTO t VALUES (1, 2), (2, -1)"],
    )

    with pytest.raises(UnconvertibleValueError) as caught:
        dict_converter(table)(images[0])
    assert (caught.value.column, caught.value.raw) == ("flag", "2")
    assert "treat-tinyint1-as-boolean.enabled: false" in caught.value.reason

    as_integers = dict_converter(table, tinyint1_as_boolean=False)
    assert [as_integers(image) for image in images] == [
        {"id": 1, "flag": 2},
        {"id": 2, "flag": -1},
    ]
    assert arrow_schema(table, tinyint1_as_boolean=False).field("flag").type == pa.int32()


@pytest.mark.parametrize(
    ("column", "names"),
    [
        ("v VARCHAR(5) CHARACTER SET swe7", "'swe7', which Tidemark cannot decode"),
        pytest.param(
            "v VARCHAR(5) CHARACTER SET ucs2 COLLATE ucs2_uca1400_ai_ci",
            "ucs2_uca1400_ai_ci, which mysql-replication 1.0.17 does not know",
            marks=pytest.mark.mariadb_only("MySQL has no UCA 14.0.0 collations"),
        ),
    ],
)
def test_a_column_whose_text_cannot_be_decoded_is_refused_before_ingest_starts(
    column: str, names: str, source_database: str, admin_connection: Connection
) -> None:
    table = _create(admin_connection, source_database, column)

    with pytest.raises(SourceSchemaError) as caught:
        dict_converter(table)
    assert f"{source_database}.t.v is varchar(5)" in str(caught.value) or names in str(caught.value)
    assert names in str(caught.value)
    with pytest.raises(SourceSchemaError):
        arrow_schema(table)


# --- into Iceberg --------------------------------------------------------------------------


def test_every_type_lands_in_an_iceberg_table_unchanged(
    source: SourceEndpoint,
    source_binlog: SourceBinlog,
    source_database: str,
    admin_connection: Connection,
    catalog: Catalog,
    namespace: str,
) -> None:
    families = families_on(source.flavor)
    columns = ", ".join(
        f"{family.name}_{name} {definition}"
        for family in families
        for name, definition in family.column_definitions()
    )
    table = _create(admin_connection, source_database, columns)
    first = ", ".join(family.rows[0] for family in families)
    last = ", ".join(family.rows[-1] for family in families)  # NULLs where allowed
    images = source_binlog.inserted(
        [
            *dict.fromkeys(statement for family in families for statement in family.session),
            f"INSERT INTO t VALUES (1, {first})",
            f"INSERT INTO t VALUES (2, {last})",
        ],
    )
    rows = [dict_converter(table)(image) for image in images]

    iceberg = catalog.create_table(f"{namespace}.every_type", schema=arrow_schema(table))
    iceberg.append(pa.Table.from_pylist(rows, schema=arrow_schema(table)))

    landed = sorted(iceberg.scan().to_arrow().to_pylist(), key=lambda row: row["id"])
    assert landed == rows
    for id_, index in ((1, 0), (2, -1)):
        assert landed[id_ - 1] == {
            "id": id_,
            **{
                f"{family.name}_{name}": value
                for family in families
                for name, value in family.expected[index].items()
            },
        }


# --- server-time-zone ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "utc"),
    [
        ("UTC", dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC)),
        ("+08:00", dt.datetime(2024, 1, 1, 4, 0, tzinfo=UTC)),
        ("UTC-0530", dt.datetime(2024, 1, 1, 17, 30, tzinfo=UTC)),
        ("America/New_York", dt.datetime(2024, 1, 1, 17, 0, tzinfo=UTC)),
        (None, dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC)),
    ],
)
def test_server_time_zone_reads_naive_timestamps_and_leaves_binlog_ones_alone(
    zone: str | None, utc: dt.datetime
) -> None:
    """A SELECT returns TIMESTAMP as a naive wall-clock time in the session's zone; the binlog
    decoding returns UTC datetimes, which no zone moves."""
    table = SourceTable(
        "db", "t", (SourceColumn("ts", 1, "timestamp", "timestamp", nullable=True),)
    )
    convert = dict_converter(table, zone)

    assert convert({"ts": dt.datetime(2024, 1, 1, 12, 0)}) == {"ts": utc}
    binlog_value = dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert convert({"ts": binlog_value}) == {"ts": binlog_value}


def test_values_convert_in_the_order_the_row_event_names_the_columns() -> None:
    table = SourceTable(
        "db",
        "t",
        (
            SourceColumn("ts", 1, "timestamp", "timestamp", nullable=True),
            SourceColumn("n", 2, "int", "int", nullable=True),
        ),
    )
    convert = values_converter(table, ("n", "ts"), "+08:00")

    assert convert((7, dt.datetime(2024, 1, 1, 12, 0))) == (
        7,
        dt.datetime(2024, 1, 1, 4, 0, tzinfo=UTC),
    )
    assert convert((None, None)) == (None, None)


def test_text_is_checked_on_the_way_and_a_row_of_good_text_is_given_back_as_it_came() -> None:
    table = SourceTable(
        "db",
        "t",
        (
            SourceColumn("id", 1, "int", "int", nullable=False),
            SourceColumn("name", 2, "varchar", "varchar(20)", nullable=True, charset="utf8mb4"),
            SourceColumn("note", 3, "text", "text", nullable=True, charset="utf8mb4"),
        ),
    )
    convert = values_converter(table, ("id", "name", "note"))

    row = (1, "ok", "fine")
    assert convert(row) is row
    assert convert((2, None, "fine")) == (2, None, "fine")
    with pytest.raises(UnconvertibleValueError) as caught:
        convert((3, "ok", UndecodableText(b"\xff", "utf8mb4")))
    assert (caught.value.column, caught.value.reason) == (
        "note",
        "the bytes are not valid utf8mb4 text",
    )


@pytest.mark.parametrize(
    "columns",
    [
        pytest.param(("id",), id="a column missing"),
        pytest.param(("id", "name", "added_later"), id="a column too many"),
        pytest.param(("id", "other"), id="a column renamed"),
    ],
)
def test_a_row_image_with_other_columns_stops_ingest(
    admin_connection: Connection, source_database: str, columns: tuple[str, ...]
) -> None:
    table = _create(admin_connection, source_database, "name TEXT")

    with pytest.raises(SchemaChangeStopError, match="structure changed since ingest read it"):
        values_converter(table, columns)


def test_columns_of_any_name_convert_and_are_named_when_a_value_is_refused(
    source_binlog: SourceBinlog, source_database: str, admin_connection: Connection
) -> None:
    # the converter is compiled with the names as literals: quotes, backslashes and braces
    # must stay the names they are
    quoted, accented = 'it\'s "odd" \\ {x}', "été"
    table = _create(
        admin_connection, source_database, f"`{quoted}` VARCHAR(20), `{accented}` DATE NOT NULL"
    )
    images = source_binlog.inserted(
        [
            NON_STRICT,
            "INSERT INTO t VALUES (1, 'one', '2020-01-01'), (2, NULL, '0000-00-00')",
        ],
    )
    convert = dict_converter(table)

    assert convert(images[0]) == {"id": 1, quoted: "one", accented: dt.date(2020, 1, 1)}
    with pytest.raises(UnconvertibleValueError) as caught:
        convert(images[1])
    assert (caught.value.column, caught.value.raw) == (
        accented,
        "InvalidTemporal(text='0000-00-00')",
    )
