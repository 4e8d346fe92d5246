"""Write rows on a real source server and read them back as the binlog carries them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ingest.binlog.events import RowsChanged
from ingest.binlog.reader import BinlogReader
from tidemark.contracts.changelog import Operation
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

Row = dict[str, Any]
Image = tuple[Operation, Row | None, Row | None]


def binlog_images(
    source: SourceEndpoint,
    connection: Connection,
    database: str,
    server_id: int,
    statements: Sequence[str],
) -> list[Image]:
    """Run ``statements`` and return every row change they logged in ``database``, in order, as
    (operation, before image, after image) decoded by ``ingest.binlog``."""
    reader_source = source.cdc_source(server_id)
    start = current_position(reader_source)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    with BinlogReader(reader_source, start, databases=[database]) as reader:
        return [
            (event.operation, before, after)
            for event in reader
            if isinstance(event, RowsChanged) and event.database == database
            for before, after in event.images()
        ]


def inserted_rows(
    source: SourceEndpoint,
    connection: Connection,
    database: str,
    server_id: int,
    statements: Sequence[str],
) -> list[Row]:
    """The after images of the rows ``statements`` inserted in ``database``."""
    images = binlog_images(source, connection, database, server_id, statements)
    return [after for operation, _, after in images if operation is Operation.INSERT and after]


@dataclass(frozen=True)
class SourceBinlog:
    """The test's database, written through its admin connection and read back from the binlog
    by a reader with the test's own server id."""

    source: SourceEndpoint
    connection: Connection
    database: str
    server_id: int

    def images(self, statements: Sequence[str]) -> list[Image]:
        """``binlog_images`` of ``statements``."""
        return binlog_images(
            self.source, self.connection, self.database, self.server_id, statements
        )

    def inserted(self, statements: Sequence[str]) -> list[Row]:
        """``inserted_rows`` of ``statements``."""
        return inserted_rows(
            self.source, self.connection, self.database, self.server_id, statements
        )


def execute(connection: Connection, *statements: str) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def select(connection: Connection, query: str) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(query)
        return list(cursor.fetchall())
