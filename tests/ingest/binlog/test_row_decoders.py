"""Tidemark's fast binlog path (``ingest.binlog.native_loop`` reading the hot events itself,
``ingest.binlog.row_decoders`` decoding row images with compiled functions) gives exactly the change
records of the library's own path, on the real server's binlog."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from pymysqlreplication.row_event import RowsEvent

from ingest.binlog import native_loop, reader
from ingest.binlog.events import RowsChanged
from ingest.binlog.reader import BinlogReader
from tests.ingest.schema.test_types import FAMILIES, NON_STRICT
from tidemark.source import BinlogPosition, current_position
from tidemark.stack.endpoints import StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

SERVER_ID = 4260


@pytest.fixture
def library_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every event read by the library's ``fetchone`` and every row by its ``_fetch_rows``
    (with ``ingest.binlog.corrections``'s corrections still in place): the reference."""
    monkeypatch.setattr(
        reader.native_loop, "events", lambda stream, before_wait, wire: iter(stream)
    )
    monkeypatch.setattr(RowsEvent, "_fetch_rows", RowsEvent._tidemark_library_fetch)
    yield


@pytest.fixture
def native_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rows each row event read natively (a ``RowsChanged`` from the native loop)
    held."""
    counts: list[int] = []
    native = native_loop.events

    def counted(stream: Any, before_wait: Any, wire: bool) -> Iterator[Any]:
        for event in native(stream, before_wait, wire=wire):
            if isinstance(event, RowsChanged):
                counts.append(len(event.rows))
            yield event

    monkeypatch.setattr(reader.native_loop, "events", counted)
    return counts


@pytest.fixture
def counted_fallbacks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Row events the compiled decoders left to the library's row reading."""
    fallbacks: list[Any] = []
    library_fetch = RowsEvent._tidemark_library_fetch

    def counted(event: Any) -> None:
        fallbacks.append(event)
        library_fetch(event)

    monkeypatch.setattr(RowsEvent, "_tidemark_library_fetch", counted)
    return fallbacks


def _events(
    endpoints: StackEndpoints, database: str, start: BinlogPosition, end: BinlogPosition
) -> list[Any]:
    """Every event from ``start`` to ``end`` (other tests' transactions may follow)."""
    source = endpoints.mariadb.cdc_source(SERVER_ID)
    with BinlogReader(source, start, databases=[database]) as reader:
        return [_comparable(event) for event in reader if event.position <= end]


def _comparable(event: Any) -> Any:
    """The event without its structure callback (a new partial per event)."""
    fields = {field.name: getattr(event, field.name) for field in dataclasses.fields(event)}
    fields.pop("structure", None)
    return type(event).__name__, fields


def _write_every_kind_of_event(connection: Connection) -> None:
    with connection.cursor() as cursor:
        cursor.execute(NON_STRICT)
        for number, family in enumerate(FAMILIES):
            table = f"t{number}"
            cursor.execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, {family.columns})")
            for statement in family.session:
                cursor.execute(statement)
            for key, values in enumerate(family.rows, 1):
                cursor.execute(f"INSERT INTO {table} VALUES ({key}, {values})")
            cursor.execute(f"INSERT INTO {table} SELECT id + 100, {_names(family)} FROM {table}")
            cursor.execute(f"UPDATE {table} SET id = id + 1000 WHERE id > 100")
            # a structure change in the middle: a new table map, a new layout
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN tm_extra VARCHAR(300) DEFAULT 'x'")
            cursor.execute(f"UPDATE {table} SET tm_extra = REPEAT('é', 290) WHERE id < 100")
            cursor.execute(f"DELETE FROM {table} WHERE id > 1000")
        # plain layouts (read natively), in a large transaction of bulk events
        cursor.execute(
            "CREATE TABLE plain (id BIGINT UNSIGNED PRIMARY KEY, k MEDIUMINT, f FLOAT, "
            "d DOUBLE, c CHAR(120) CHARACTER SET latin1, v VARCHAR(300), t TEXT, b VARBINARY(8))"
        )
        cursor.execute("BEGIN")
        cursor.execute(
            "INSERT INTO plain SELECT seq, -seq, seq / 3, seq / 7, REPEAT('é', seq % 120), "
            "REPEAT('ü', seq % 300), IF(seq % 5 = 0, NULL, REPEAT('t', seq)), "
            "UNHEX(HEX(seq)) FROM seq_1_to_4000"
        )
        cursor.execute("UPDATE plain SET c = NULL, k = k * 2 WHERE id % 3 = 0")
        cursor.execute("DELETE FROM plain WHERE id % 7 = 0")
        cursor.execute("COMMIT")
        for key in range(1, 200):  # OLTP-shaped: one row a statement, one transaction each
            cursor.execute(f"UPDATE plain SET k = k + 1 WHERE id = {key}")
            if key == 100:  # a new binlog file: table ids are mapped again
                cursor.execute("FLUSH BINARY LOGS")
        cursor.execute("TRUNCATE TABLE plain")


def test_the_fast_path_reads_every_event_as_the_library_path_does(
    endpoints: StackEndpoints,
    source_database: str,
    admin_connection: Connection,
    counted_fallbacks: list[Any],
    native_rows: list[int],
    request: pytest.FixtureRequest,
) -> None:
    start = current_position(endpoints.mariadb.cdc_source(SERVER_ID))
    _write_every_kind_of_event(admin_connection)
    end = current_position(endpoints.mariadb.cdc_source(SERVER_ID))

    fast = _events(endpoints, source_database, start, end)
    fallen_back, read_natively = len(counted_fallbacks), sum(native_rows)
    request.getfixturevalue("library_path")
    library = _events(endpoints, source_database, start, end)

    rows = sum(len(fields["rows"]) for name, fields in fast if name == "RowsChanged")
    assert rows > 6_000
    assert read_natively > 4_000  # the plain table's, read without the library
    assert fallen_back == 0  # the others' rows read by compiled decoders too
    assert fast == library


def _names(family: Any) -> str:
    """The family's column names, from its definitions (commas inside parentheses kept)."""
    names, depth, current = [], 0, ""
    for char in family.columns + ",":
        if char == "," and depth == 0:
            names.append(current.split()[0])
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    return ", ".join(names)
