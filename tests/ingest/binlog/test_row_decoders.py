"""Tidemark's fast binlog path (``ingest.binlog.native_loop`` reading the hot events itself,
``ingest.binlog.row_decoders`` decoding row images with compiled functions) gives exactly the change
records of the library's own path, on the real server's binlog."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from pymysqlreplication.row_event import RowsEvent

from ingest.binlog import native_loop, reader
from ingest.binlog.events import RowsChanged
from ingest.binlog.reader import BinlogReader
from tests.ingest.binlog.every_event import comparable, write_every_kind_of_event
from tidemark.source import BinlogPosition, SourceConnection, current_position
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


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
    source: SourceConnection, database: str, start: BinlogPosition, end: BinlogPosition
) -> list[Any]:
    """Every event from ``start`` to ``end`` (other tests' transactions may follow)."""
    with BinlogReader(source, start, databases=[database]) as reader:
        return [comparable(event) for event in reader if event.position <= end]


def test_the_fast_path_reads_every_event_as_the_library_path_does(
    source: SourceEndpoint,
    source_database: str,
    admin_connection: Connection,
    counted_fallbacks: list[Any],
    native_rows: list[int],
    request: pytest.FixtureRequest,
    server_id: int,
) -> None:
    cdc_source = source.cdc_source(server_id)
    start = current_position(cdc_source)
    write_every_kind_of_event(admin_connection, source.flavor)
    end = current_position(cdc_source)

    fast = _events(cdc_source, source_database, start, end)
    fallen_back, read_natively = len(counted_fallbacks), sum(native_rows)
    request.getfixturevalue("library_path")
    library = _events(cdc_source, source_database, start, end)

    rows = sum(len(fields["rows"]) for name, fields in fast if name == "RowsChanged")
    assert rows > 6_000
    assert read_natively > 4_000  # the plain table's, read without the library
    assert fallen_back == 0  # the others' rows read by compiled decoders too
    assert fast == library
