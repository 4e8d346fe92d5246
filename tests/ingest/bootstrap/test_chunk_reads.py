"""The incremental snapshot's reads: each chunk in a read view of its own, between a low
watermark every earlier transaction is visible at and a high watermark after all it saw."""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

import pytest

from bench.polling import wait_until
from ingest.bootstrap.bootstrapper import chunk_key
from ingest.bootstrap.chunk_reads import ChunkReads, EvenDistribution, RangeReaders, even_spans
from ingest.schema.source_tables import read_source_tables
from tests.server_variables import global_variables
from tidemark.bulk_reads import open_bulk_connection
from tidemark.contracts.source_tables import SourceTable
from tidemark.errors import ConfigError, TerminalError
from tidemark.source import binlog_end
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


def _numbers(admin: Connection, rows: int) -> SourceTable:
    with admin.cursor() as cursor:
        cursor.execute("CREATE TABLE numbers (id INT PRIMARY KEY, label VARCHAR(20))")
        if rows:
            cursor.executemany(
                "INSERT INTO numbers VALUES (%s, %s)", [(key, f"n{key}") for key in range(rows)]
            )
    return _source_table(admin, "numbers")


def _source_table(admin: Connection, name: str) -> SourceTable:
    with admin.cursor() as cursor:
        cursor.execute("SELECT DATABASE()")
        database = cursor.fetchone()
    assert database is not None
    return read_source_tables(admin, [(str(database[0]), name)])[(str(database[0]), name)]


def _open_transactions(admin: Connection, thread_id: int) -> int:
    with admin.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = %s",
            (thread_id,),
        )
        row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def test_each_chunk_is_a_read_of_its_own_and_no_transaction_stays_open_between_them(
    source: SourceEndpoint, admin_connection: Connection, server_id: int
) -> None:
    table = _numbers(admin_connection, rows=30)

    with ChunkReads(source.cdc_source(server_id)) as reads:
        chunks = reads.chunks(table, ("id",), after=None, chunk_size=10)
        first = next(chunks)
        thread_id = reads._connection().thread_id()
        open_between_chunks = _open_transactions(admin_connection, thread_id)
        with admin_connection.cursor() as cursor:  # a key the next chunks have not reached
            cursor.execute("UPDATE numbers SET label = 'written meanwhile' WHERE id = 25")
        written_at = binlog_end(admin_connection)
        rest = list(chunks)

    assert open_between_chunks == 0
    assert [row[0] for row in first.rows] == list(range(10))
    rows = [row for chunk in rest for row in chunk.rows]
    assert (25, "written meanwhile") in rows, "a later chunk sees what was committed meanwhile"
    assert reads.high_watermark >= written_at > reads.position


@pytest.mark.server_wide
@pytest.mark.mysql_only(
    "MySQL's binlog_group_commit_sync_delay holds a transaction between its binlog write and "
    "its commit; MariaDB has no setting that does (its commit wait comes before the write)"
)
def test_the_low_watermark_is_never_past_a_transaction_reads_cannot_see_yet(
    source: SourceEndpoint, admin_connection: Connection, server_id: int
) -> None:
    table = _numbers(admin_connection, rows=0)
    before = binlog_end(admin_connection)

    def insert() -> None:
        with source.admin_source().connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"INSERT INTO {table.database}.numbers VALUES (1, 'in flight')")
            conn.commit()

    with global_variables(admin_connection, binlog_group_commit_sync_delay="1000000"):
        writer = threading.Thread(target=insert)
        writer.start()
        try:
            wait_until(
                "the insert written to the binlog",
                lambda: binlog_end(admin_connection) > before,
                10,
            )
            with admin_connection.cursor() as cursor:
                cursor.execute("SELECT COUNT(*) FROM numbers")
                seen_before = cursor.fetchone()
            with ChunkReads(source.cdc_source(server_id)) as reads:
                rows = [
                    row
                    for chunk in reads.chunks(table, ("id",), after=None, chunk_size=10)
                    for row in chunk.rows
                ]
        finally:
            writer.join()

    # the trap was set: the binlog's end was past a transaction no read saw yet
    assert seen_before == (0,)
    # every transaction before the low watermark is in the reads after it
    assert reads.position <= before or rows == [(1, "in flight")]


def test_chunks_read_ahead_in_parallel_hold_every_row_once_in_key_order(
    source: SourceEndpoint, admin_connection: Connection, server_id: int
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE pairs (region VARCHAR(10), id INT, label VARCHAR(20), "
            "PRIMARY KEY (region, id))"
        )
        cursor.executemany(
            "INSERT INTO pairs VALUES (%s, %s, 'before')",
            [(region, key) for region in ("eu", "uk", "us") for key in range(20)],
        )
    table = _source_table(admin_connection, "pairs")
    readers = RangeReaders(source.cdc_source(server_id), size=3)
    try:
        with ChunkReads(source.cdc_source(server_id), readers) as reads:
            chunks = reads.chunks(table, ("region", "id"), after=None, chunk_size=7)
            seen = [next(chunks)]
            with admin_connection.cursor() as cursor:
                # behind the reads, in them, and ahead of them
                cursor.execute("DELETE FROM pairs WHERE region = 'eu' AND id = 2")
                cursor.execute("UPDATE pairs SET label = 'after' WHERE region = 'uk' AND id = 5")
                cursor.execute("INSERT INTO pairs VALUES ('us', 99, 'new')")
            seen += list(chunks)
    finally:
        readers.close()

    keys = [(row[0], row[1]) for chunk in seen for row in chunk.rows]
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    untouched = {(region, key) for region in ("eu", "uk", "us") for key in range(20)}
    untouched -= {("eu", 2), ("uk", 5)}
    assert untouched <= set(keys), "a row nobody changed was missed"
    assert ("us", 99) in keys, "the last chunk is open-ended"
    ends = [chunk.last_key for chunk in seen if chunk.last_key is not None]
    assert ends == sorted(ends) and ends[-1] == ("us", 99) and len(ends) == len(seen)
    assert len(seen) >= 60 // 7


def test_an_evenly_spread_integer_key_is_cut_into_spans_of_values_and_a_sparse_one_is_not(
    source: SourceEndpoint, admin_connection: Connection, server_id: int
) -> None:
    dense = _numbers(admin_connection, rows=3000)
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE sparse (id BIGINT PRIMARY KEY, label VARCHAR(20))")
        cursor.executemany(
            "INSERT INTO sparse VALUES (%s, 'far apart')", [(key * 10**6,) for key in range(3000)]
        )
        cursor.execute("ANALYZE TABLE numbers, sparse")  # InnoDB's row estimates, now
        cursor.fetchall()
    sparse = _source_table(admin_connection, "sparse")

    with ChunkReads(source.cdc_source(server_id)) as reads:
        dense_spans = even_spans(reads._connection(), dense, ("id",), 300, EvenDistribution())
        sparse_spans = even_spans(reads._connection(), sparse, ("id",), 300, EvenDistribution())

    assert dense_spans is not None and (dense_spans.first, dense_spans.last) == (0, 2999)
    assert 150 <= dense_spans.width <= 600  # 300 values, as far as InnoDB's estimate is right
    assert dense_spans.end_after(None) == (dense_spans.width - 1,)
    assert dense_spans.end_after((2999 - dense_spans.width,)) is None, "the last is open-ended"
    assert sparse_spans is None, "10^6 values a row is past the upper bound (1000)"


@pytest.mark.parametrize(
    ("column", "refusal"),
    [
        ("note", "which may hold NULL, and a chunk (a range of its values) never holds a NULL row"),
        ("weight", "a FLOAT column, whose values the server returns other than it compares them"),
        ("colour", "which has no such column (it has id, note, weight)"),
    ],
)
def test_a_chunk_key_column_that_cannot_cut_chunks_is_refused_with_the_fix(
    admin_connection: Connection, column: str, refusal: str
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE parcels (id INT PRIMARY KEY, note VARCHAR(20), weight FLOAT NOT NULL)"
        )
    table = _source_table(admin_connection, "parcels")

    with pytest.raises(ConfigError, match=re.escape(refusal)):
        chunk_key(table, column)
    assert chunk_key(table, "ID") == (("id",), True)  # MySQL's column names ignore case


@pytest.mark.mysql_only("resource groups are MySQL's")
def test_a_reading_connection_joins_its_resource_group_and_a_missing_one_stops_it_with_the_fix(
    source: SourceEndpoint, resource_group: str
) -> None:
    """The start checks refuse a missing group; this is a group dropped while ingest runs."""
    admin = source.admin_source()  # may join any group: only the group can be missing

    joined = open_bulk_connection(admin, autocommit=True, resource_group=resource_group)
    with joined.cursor() as cursor:
        cursor.execute(
            "SELECT RESOURCE_GROUP FROM performance_schema.threads "
            "WHERE PROCESSLIST_ID = CONNECTION_ID()"
        )
        assert cursor.fetchone() == (resource_group,)
    joined.close()
    with pytest.raises(TerminalError) as refused:
        open_bulk_connection(admin, autocommit=True, resource_group=f"{resource_group}_gone")

    assert str(refused.value) == (
        f"{source.host}:{source.port} refused to run the bootstrap's reads in resource group "
        f"{resource_group}_gone (tidemark.ingest.snapshot-resource-group): Resource Group "
        f"'{resource_group}_gone' does not exist.; create or enable it (CREATE RESOURCE GROUP "
        f"{resource_group}_gone TYPE = USER THREAD_PRIORITY = 19), grant RESOURCE_GROUP_USER "
        f"to {admin.user}, or remove the option"
    )
