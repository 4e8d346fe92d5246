"""A TABLE_MAP repeated byte for byte is parsed once per stream (``ingest.binlog.table_map_cache``):
rows still decode with the structure of their own table map, through every structure change."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.ingest.source_rows import SourceBinlog
from tidemark.contracts.changelog import Operation

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source


def test_rows_between_structure_changes_decode_with_the_structure_they_were_written_with(
    source_binlog: SourceBinlog, admin_connection: Connection
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10))")
        cursor.execute("CREATE TABLE b (id INT PRIMARY KEY, w INT)")

    images = source_binlog.images(
        [
            "INSERT INTO a VALUES (1, 'one')",
            "INSERT INTO b VALUES (1, 10)",
            "INSERT INTO a VALUES (2, 'two')",
            "ALTER TABLE a ADD COLUMN n INT",
            "INSERT INTO a VALUES (3, 'three', 3)",
            "INSERT INTO b VALUES (2, 20)",
            "ALTER TABLE a MODIFY v VARCHAR(300)",  # a length that needs two bytes
            "INSERT INTO a VALUES (4, 'four', 4)",
            "UPDATE a SET v = 'FOUR' WHERE id = 4",
            "ALTER TABLE a DROP COLUMN n, RENAME COLUMN v TO label",
            "INSERT INTO a VALUES (5, 'five')",
            "DELETE FROM b WHERE id = 1",
        ],
    )

    assert images == [
        (Operation.INSERT, None, {"id": 1, "v": "one"}),
        (Operation.INSERT, None, {"id": 1, "w": 10}),
        (Operation.INSERT, None, {"id": 2, "v": "two"}),
        (Operation.INSERT, None, {"id": 3, "v": "three", "n": 3}),
        (Operation.INSERT, None, {"id": 2, "w": 20}),
        (Operation.INSERT, None, {"id": 4, "v": "four", "n": 4}),
        (Operation.UPDATE, {"id": 4, "v": "four", "n": 4}, {"id": 4, "v": "FOUR", "n": 4}),
        (Operation.INSERT, None, {"id": 5, "label": "five"}),
        (Operation.DELETE, {"id": 1, "w": 10}, None),
    ]
