"""mysql-replication reads each source server's binlog from a saved position, and only from there.

The MariaDB trap (docs/architecture.md#source-facts): a reader that ignores the saved position
streams from the first binlog and sees the rows written before it, so the test writes some
before saving.
"""

from __future__ import annotations

import pymysql
import pytest

from ingest.binlog.events import RowsChanged
from ingest.binlog.reader import BinlogReader
from tidemark.contracts.changelog import Operation
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint

pytestmark = pytest.mark.every_source


def test_reading_from_a_saved_position_sees_only_later_rows(
    source: SourceEndpoint,
    source_database: str,
    admin_connection: pymysql.connections.Connection[pymysql.cursors.Cursor],
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE people (id INT PRIMARY KEY, name VARCHAR(40))")
        cursor.execute("INSERT INTO people VALUES (1, 'before the saved position')")
    cdc_source = source.cdc_source(server_id)
    saved = current_position(cdc_source)
    with admin_connection.cursor() as cursor:
        cursor.execute("INSERT INTO people VALUES (2, 'after the saved position')")
        cursor.execute("UPDATE people SET name = 'renamed' WHERE id = 2")

    with BinlogReader(cdc_source, saved) as reader:
        changes = [
            event
            for event in reader
            if isinstance(event, RowsChanged) and event.database == source_database
        ]

    assert [(c.operation, c.images()) for c in changes] == [
        (Operation.INSERT, [(None, {"id": 2, "name": "after the saved position"})]),
        (
            Operation.UPDATE,
            [({"id": 2, "name": "after the saved position"}, {"id": 2, "name": "renamed"})],
        ),
    ]
    assert all(change.position > saved for change in changes)
    assert changes[0].position < changes[1].position
