"""Changelog commits as ingest makes them, without a binlog: rows and progress in one commit."""

from __future__ import annotations

import pyarrow as pa

from ingest.changelog.table import ChangelogTable, changelog_schema
from tidemark.contracts.progress import TableProgress
from tidemark.source import BinlogPosition

T0 = 1_767_225_600_000  # 2026-01-01 00:00 UTC: the source's clock in these commits
DATA = pa.schema([("id", pa.int64()), ("item", pa.string()), ("qty", pa.int64())])


def commit(table: ChangelogTable, index: int) -> TableProgress:
    """One ingest-like commit: a row of key ``index % 7`` and progress with watermark
    ``T0 + 2 s * index``."""
    progress = TableProgress(
        position=BinlogPosition("binlog.000001", 4 + index * 100),
        watermark_ms=T0 + index * 2_000,
        last_order=index,
        source="127.0.0.1:3306",
    )
    row = {
        "id": index % 7,
        "item": f"item-{index}",
        "qty": index,
        "_tm_op": "u",
        "_tm_event_time": T0 * 1000 + index * 2_000_000,
        "_tm_position": f"binlog.000001:{4 + index * 100}",
        "_tm_source_db": "shop",
        "_tm_source_table": "orders",
        "_tm_order": index,
        "_tm_schema_version": 1,
    }
    rows = pa.Table.from_pylist([row], changelog_schema(DATA)).cast(table.schema)
    table.commit(rows, progress)
    return progress
