"""What the binlog reader refuses to decode, and what it says to do instead."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

from ingest.binlog.process import ProcessBinlogReader
from ingest.binlog.reader import BinlogReader
from ingest.errors import UnnamedColumnsError
from tests.server_share import require_alone
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


@contextmanager
def minimal_row_metadata(admin: Connection) -> Iterator[None]:
    """The server writes table maps without column names meanwhile (a global setting)."""
    require_alone("SET GLOBAL binlog_row_metadata")
    with admin.cursor() as cursor:
        cursor.execute("SET GLOBAL binlog_row_metadata = MINIMAL")
    try:
        yield
    finally:
        with admin.cursor() as cursor:
            cursor.execute("SET GLOBAL binlog_row_metadata = FULL")


@pytest.mark.server_wide
@pytest.mark.parametrize("reader", [BinlogReader, ProcessBinlogReader])
def test_row_events_without_column_names_stop_the_reader_with_the_fix(
    source: SourceEndpoint,
    admin_connection: Connection,
    source_database: str,
    server_id: int,
    reader: type[BinlogReader] | type[ProcessBinlogReader],
) -> None:
    cdc_source = source.cdc_source(server_id)
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE quiet (id INT PRIMARY KEY)")
    start = current_position(cdc_source)
    with minimal_row_metadata(admin_connection), admin_connection.cursor() as cursor:
        cursor.execute("INSERT INTO quiet VALUES (1)")

    with (
        pytest.raises(UnnamedColumnsError, match="binlog_row_metadata = FULL") as stopped,
        reader(cdc_source, start, databases=[source_database]) as events,
    ):
        list(events)

    assert (stopped.value.database, stopped.value.table) == (source_database, "quiet")
