"""A snapshot's SELECT gives every type the same lake values as the binlog does.

Each type family of ``type_families`` (edge values, NULLs, zero dates, values the binlog library
gets wrong) is read back through a read view and converted column at a time; the result must be
exactly what the family expects from the binlog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from ingest.bootstrap.snapshot_reader import ConsistentSnapshot, ReadView
from ingest.errors import UnconvertibleValueError
from ingest.schema.select_values import page_converter
from ingest.schema.source_tables import read_source_tables
from ingest.schema.types import arrow_schema
from tests.ingest.schema.type_families import NON_STRICT, Family, family_params
from tests.ingest.source_rows import select
from tidemark.contracts.source_tables import SourceTable
from tidemark.errors import TerminalError
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


@pytest.mark.parametrize("family", family_params())
def test_snapshot_values_equal_the_binlogs_for_every_type_family(
    family: Family,
    source: SourceEndpoint,
    source_database: str,
    admin_connection: Connection,
    server_id: int,
) -> None:
    for statement in family.session:
        select(admin_connection, statement)
    select(admin_connection, f"CREATE TABLE t (id INT PRIMARY KEY, {family.columns})")
    for i, values in enumerate(family.rows, 1):
        select(admin_connection, f"INSERT INTO t VALUES ({i}, {values})")
    table = _table(admin_connection, source_database)
    convert = page_converter(
        table,
        family.options.get("server_time_zone"),
        tinyint1_as_boolean=family.options.get("tinyint1_as_boolean", True),
    )

    with ReadView(source.cdc_source(server_id)) as view:
        chunks = list(view.chunks(table, ("id",), after=None, chunk_size=4))
    rows = [row for chunk in chunks for row in chunk.rows]
    landed = pa.Table.from_arrays(convert(rows), schema=arrow_schema(table)).to_pylist()

    assert landed == [{"id": i, **row} for i, row in enumerate(family.expected, 1)]
    assert [len(chunk.rows) for chunk in chunks] == _pages(len(family.rows), 4)


def test_a_zero_date_read_by_a_snapshot_is_refused_with_the_binlogs_text(
    source: SourceEndpoint, source_database: str, admin_connection: Connection, server_id: int
) -> None:
    select(admin_connection, NON_STRICT)
    select(
        admin_connection,
        "CREATE TABLE t (id INT PRIMARY KEY, "
        "d DATE NOT NULL, dt DATETIME(3) NOT NULL, ts TIMESTAMP NOT NULL)",
    )
    select(admin_connection, "INSERT INTO t VALUES (1, '0000-00-00', '2020-01-01', '2020-01-01')")
    select(admin_connection, "INSERT INTO t VALUES (2, '2020-01-01', '2020-00-01 10:00', NOW())")
    select(admin_connection, "INSERT INTO t VALUES (3, '2020-01-01', '2020-01-01', 0)")
    table = _table(admin_connection, source_database)
    convert = page_converter(table)

    with ReadView(source.cdc_source(server_id)) as view:
        rows = [
            row
            for chunk in view.chunks(table, ("id",), after=None, chunk_size=10)
            for row in chunk.rows
        ]
    refused = []
    for row in rows:
        with pytest.raises(UnconvertibleValueError) as caught:
            convert([row])
        refused.append((caught.value.column, caught.value.raw))

    # as the binlog's rows are refused (test_types)
    assert refused == [
        ("d", "InvalidTemporal(text='0000-00-00')"),
        ("dt", "InvalidTemporal(text='2020-00-01 10:00:00.000')"),
        ("ts", "InvalidTemporal(text='0000-00-00 00:00:00')"),
    ]


@pytest.mark.mariadb_only("MySQL's read views have no binlog position")
def test_the_snapshot_position_is_where_the_binlog_stood_when_the_read_view_opened(
    source: SourceEndpoint, source_database: str, admin_connection: Connection, server_id: int
) -> None:
    select(admin_connection, "CREATE TABLE t (id INT PRIMARY KEY)")
    reader = source.cdc_source(server_id)
    before = current_position(reader)

    table = _table(admin_connection, source_database)

    with ConsistentSnapshot(reader) as snapshot:
        opened = current_position(reader)
        select(admin_connection, "INSERT INTO t VALUES (1)")  # after the view: invisible
        chunks = list(snapshot.chunks(table, ("id",), after=None, chunk_size=10))

    # other tests write to the same server meanwhile: the view opened between the two reads
    assert before <= snapshot.position <= opened
    assert chunks == []
    assert current_position(reader) > opened


@pytest.mark.parametrize("source", ["mysql"], indirect=True)
def test_one_consistent_snapshot_of_mysql_is_refused_with_what_works_instead(
    source: SourceEndpoint, server_id: int
) -> None:
    with pytest.raises(TerminalError) as refused:
        ConsistentSnapshot(source.cdc_source(server_id)).__enter__()

    assert str(refused.value) == (
        f"{source.host}:{source.port} does not report the binlog position of a consistent "
        "snapshot (binlog_snapshot_file), which a bootstrap in one snapshot needs (MariaDB and "
        "Percona Server report it): set scan.incremental.snapshot.enabled: true in the "
        "pipeline's source block"
    )


def _table(connection: Connection, database: str) -> SourceTable:
    return read_source_tables(connection, [(database, "t")])[(database, "t")]


def _pages(rows: int, size: int) -> list[int]:
    return [min(size, rows - start) for start in range(0, rows, size)]
