"""MySQL's own binlog events, read from the real MySQL server: compressed transactions
(TRANSACTION_PAYLOAD) as the same rows as uncompressed ones, committed where the payload
ends, and partial JSON updates refused rather than misread."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ingest.binlog import transaction_payload
from ingest.binlog.events import RowsChanged, TransactionCommitted, TransactionStarted
from ingest.binlog.reader import BinlogReader
from ingest.errors import PartialJsonUpdatesError
from tidemark.source import BinlogPosition
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

#: the events these tests read are MySQL's alone
on_mysql = pytest.mark.parametrize("source", ["mysql"], indirect=True)

WORKLOAD = (
    "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(200), price DECIMAL(12, 2), "
    "made DATETIME(6), doc JSON, blob_ BLOB)",
    "SET SESSION cte_max_recursion_depth = 10000",
    "BEGIN",
    # one transaction of many rows: a payload far larger than one event
    "INSERT INTO items WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
    "WHERE i < 3000) SELECT i, REPEAT('é', i % 200), i / 7, "
    "TIMESTAMP('2024-02-29 23:59:59.123456') + INTERVAL i SECOND, "
    "JSON_OBJECT('i', i, 'tags', JSON_ARRAY('a', i % 5)), REPEAT(X'00FF', i % 50) FROM n",
    "COMMIT",
    "UPDATE items SET price = price * 2, doc = JSON_SET(doc, '$.i', -1) WHERE id % 3 = 0",
    "DELETE FROM items WHERE id % 7 = 0",
    # OLTP-shaped: one row a statement, one transaction each
    *(f"UPDATE items SET name = 'renamed {key}' WHERE id = {key}" for key in range(1, 60)),
)


def _run(connection: Connection, compression: str) -> tuple[BinlogPosition, BinlogPosition]:
    """The workload in the connection's database with ``binlog_transaction_compression`` set
    as asked; the binlog positions before and after it."""
    with connection.cursor() as cursor:
        cursor.execute(f"SET SESSION binlog_transaction_compression = {compression}")
        start = _position(cursor)
        for statement in WORKLOAD:
            cursor.execute(statement)
        return start, _position(cursor)


def _position(cursor: Any) -> BinlogPosition:
    cursor.execute("SHOW BINARY LOG STATUS")
    file, offset, *_ = cursor.fetchone()
    return BinlogPosition(file, offset)


def _read(
    source: SourceEndpoint,
    server_id: int,
    database: str,
    start: BinlogPosition,
    end: BinlogPosition,
) -> list[Any]:
    with BinlogReader(source.cdc_source(server_id), start, databases=[database]) as reader:
        return [event for event in reader if event.position <= end]


def _commits_with_rows(events: list[Any]) -> list[BinlogPosition]:
    """Where each transaction that changed rows the reader was asked for commits (others'
    transactions, from tests running beside this one, have no rows here)."""
    commits, rows_seen = [], False
    for event in events:
        if isinstance(event, TransactionStarted):
            rows_seen = False
        elif isinstance(event, RowsChanged):
            rows_seen = True
        elif isinstance(event, TransactionCommitted) and rows_seen:
            commits.append(event.position)
    return commits


def _rows(events: list[Any]) -> list[tuple[str, str, Any]]:
    return [
        (event.table, event.operation.value, event.rows)
        for event in events
        if isinstance(event, RowsChanged)
    ]


def _payload_ends(
    connection: Connection, database: str, start: BinlogPosition, end: BinlogPosition
) -> list[int]:
    """Where each TRANSACTION_PAYLOAD event from ``start`` to ``end`` that changes a table of
    ``database`` ends, as the server lists its events (those inside a payload follow it)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW BINLOG EVENTS IN '{start.file}' FROM {start.offset}")
        listed = [row for row in cursor.fetchall() if row[4] <= end.offset]
    ends: list[int] = []
    payload_end: int | None = None
    for _, _, kind, _, end_position, info in listed:
        if kind == "Transaction_payload":
            payload_end = end_position
        elif kind == "Gtid":
            payload_end = None
        elif kind == "Table_map" and f"({database}." in info and payload_end is not None:
            if payload_end not in ends:
                ends.append(payload_end)
    return ends


def _gtid_ends(
    connection: Connection, start: BinlogPosition, end: BinlogPosition
) -> dict[str, int]:
    """Every GTID from ``start`` to ``end`` and where its GTID event ends, as the server lists
    them."""
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW BINLOG EVENTS IN '{start.file}' FROM {start.offset}")
        return {
            str(row[5]).split("'")[1]: int(row[4])
            for row in cursor.fetchall()
            if row[4] <= end.offset and row[2] == "Gtid"
        }


@pytest.fixture
def second_database(admin_connection: Connection, source_database: str) -> str:
    name = f"{source_database}_2"
    with admin_connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{name}`")
    return name


@on_mysql
def test_compressed_transactions_are_read_as_the_same_rows_as_uncompressed_ones(
    source: SourceEndpoint,
    source_database: str,
    second_database: str,
    admin_connection: Connection,
    server_id: int,
) -> None:
    plain = _run(admin_connection, "OFF")
    admin_connection.select_db(second_database)
    compressed = _run(admin_connection, "ON")

    plain_events = _read(source, server_id, source_database, *plain)
    compressed_events = _read(source, server_id, second_database, *compressed)

    payloads = _payload_ends(admin_connection, second_database, *compressed)
    # every transaction with rows: the insert, the update, the delete, and the renames of the
    # rows the delete left
    assert len(payloads) == 3 + 59 - 59 // 7
    assert sum(len(rows) for _, _, rows in _rows(plain_events)) > 3_000
    assert _rows(compressed_events) == _rows(plain_events)


@on_mysql
def test_a_compressed_transaction_starts_at_its_gtid_and_commits_where_its_payload_ends(
    source: SourceEndpoint,
    source_database: str,
    admin_connection: Connection,
    server_id: int,
) -> None:
    start, end = _run(admin_connection, "ON")

    events = _read(source, server_id, source_database, start, end)

    payload_ends = _payload_ends(admin_connection, source_database, start, end)
    assert len(payload_ends) > 50
    assert _commits_with_rows(events) == [
        BinlogPosition(start.file, position) for position in payload_ends
    ]
    gtid_ends = _gtid_ends(admin_connection, start, end)
    starts = {
        event.gtid: event.position.offset
        for event in events
        if isinstance(event, TransactionStarted) and event.gtid is not None
    }
    assert starts == gtid_ends


@on_mysql
def test_a_partial_json_update_stops_the_stream_with_the_fix(
    source: SourceEndpoint,
    source_database: str,
    admin_connection: Connection,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE docs (id INT PRIMARY KEY, doc JSON)")
        cursor.execute("""INSERT INTO docs VALUES (1, '{"a": 1, "b": "some text"}')""")
        start = _position(cursor)
        cursor.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
        cursor.execute("UPDATE docs SET doc = JSON_SET(doc, '$.a', 2) WHERE id = 1")
        end = _position(cursor)

    with pytest.raises(PartialJsonUpdatesError) as stopped:
        _read(source, server_id, source_database, start, end)

    assert f"the binlog holds a partial JSON update at {start.file}:" in str(stopped.value)
    assert "Run SET GLOBAL binlog_row_value_options = ''" in str(stopped.value)


@on_mysql
def test_a_partial_json_update_of_a_table_not_read_is_passed_over(
    source: SourceEndpoint,
    source_database: str,
    second_database: str,
    admin_connection: Connection,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE kept (id INT PRIMARY KEY)")
        cursor.execute(f"CREATE TABLE `{second_database}`.docs (id INT PRIMARY KEY, doc JSON)")
        cursor.execute(f"""INSERT INTO `{second_database}`.docs VALUES (1, '{{"a": 1}}')""")
        start = _position(cursor)
        cursor.execute("SET SESSION binlog_row_value_options = 'PARTIAL_JSON'")
        cursor.execute(f"UPDATE `{second_database}`.docs SET doc = JSON_SET(doc, '$.a', 2)")
        cursor.execute("INSERT INTO kept VALUES (7)")
        end = _position(cursor)

    events = _read(source, server_id, source_database, start, end)

    assert _rows(events) == [("kept", "c", [(None, (7,))])]


@on_mysql
def test_a_server_without_gtids_streams_its_transactions_without_them(
    private_source: SourceEndpoint, server_id: int
) -> None:
    with private_source.admin_source().connect() as conn, conn.cursor() as cursor:
        for mode in ("ON_PERMISSIVE", "OFF_PERMISSIVE", "OFF"):  # one step at a time
            cursor.execute(f"SET GLOBAL gtid_mode = {mode}")
        cursor.execute("CREATE DATABASE shop")
        cursor.execute("CREATE TABLE shop.orders (id INT PRIMARY KEY, qty INT)")
        start = _position(cursor)
        cursor.execute("INSERT INTO shop.orders VALUES (1, 5), (2, 7)")
        cursor.execute("UPDATE shop.orders SET qty = 6 WHERE id = 1")
        end = _position(cursor)

    events = _read(private_source, server_id, "shop", start, end)

    starts = [event for event in events if isinstance(event, TransactionStarted)]
    assert [event.gtid for event in starts] == [None, None]  # MySQL's anonymous GTID events
    assert _rows(events) == [
        ("orders", "c", [(None, (1, 5)), (None, (2, 7))]),
        ("orders", "u", [((1, 5), (1, 6))]),
    ]
    assert len(_commits_with_rows(events)) == 2


def test_a_payload_stored_without_compression_is_read_as_it_is() -> None:
    begin, xid = _event(kind=2, body=b"BEGIN"), _event(kind=16, body=bytes(8))
    # fields: type 1 (payload size), type 2 (compression: 255, none, a length-encoded 3
    # bytes long), then the end mark
    body = bytes([1, 1, len(begin + xid), 2, 3, 0xFC, 255, 0, 0]) + begin + xid
    payload = _packet(_event(kind=transaction_payload.EVENT_TYPE, body=body, log_pos=4321))

    assert transaction_payload.packets(payload, checksum=4) == [
        # each as the server sends an event alone: its size counts the checksum after it,
        # and it ends where the payload does
        _packet(_event(kind=2, body=b"BEGIN", log_pos=4321)),
        _packet(_event(kind=16, body=bytes(8), log_pos=4321)),
    ]


def test_a_damaged_payload_is_refused_rather_than_misread() -> None:
    begin = _event(kind=2, body=b"BEGIN")
    body = bytes([2, 3, 0xFC, 255, 0, 0]) + begin[:-2]
    payload = _packet(_event(kind=transaction_payload.EVENT_TYPE, body=body, log_pos=4321))

    with pytest.raises(transaction_payload.UnreadablePayloadError, match="payload is damaged"):
        transaction_payload.packets(payload, checksum=4)


def _event(kind: int, body: bytes, log_pos: int = 0) -> bytes:
    """A binlog event: timestamp, type, server id, size, position, flags, then ``body``."""
    size = 19 + len(body)
    return (
        (0).to_bytes(4, "little")
        + bytes([kind])
        + (1).to_bytes(4, "little")
        + size.to_bytes(4, "little")
        + log_pos.to_bytes(4, "little")
        + (0).to_bytes(2, "little")
        + body
    )


def _packet(event: bytes, checksum: int = 4) -> bytes:
    """``event`` as the replication stream sends it: the OK byte, the event with its size
    counting its checksum, then the checksum (never verified: zeros here)."""
    size = len(event) + checksum
    return b"\0" + event[:9] + size.to_bytes(4, "little") + event[13:] + bytes(checksum)
