"""Changelog tables on the real catalog: what a commit keeps, and what it costs to stage."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
from pyiceberg.catalog import Catalog

from ingest.changelog import _Transaction, arrow_rows, open_changelog
from ingest.progress import TableProgress
from tidemark.contracts import MetadataColumn
from tidemark.source import BinlogPosition

DATA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())])


def _rows(first_id: int, count: int) -> list[dict[str, object]]:
    return [
        {
            "id": first_id + index,
            "name": f"n{first_id + index}",
            MetadataColumn.OPERATION: "c",
            MetadataColumn.EVENT_TIME: datetime(2026, 11, 25, tzinfo=UTC),
            MetadataColumn.POSITION: f"mariadb-bin.000001:{first_id + index}",
            MetadataColumn.SOURCE_DATABASE: "shop",
            MetadataColumn.SOURCE_TABLE: "orders",
            MetadataColumn.ORDER_KEY: first_id + index,
            MetadataColumn.SCHEMA_VERSION: 1,
        }
        for index in range(count)
    ]


def _progress(offset: int) -> TableProgress:
    return TableProgress(
        position=BinlogPosition("mariadb-bin.000001", offset),
        watermark_ms=offset,
        last_order=offset,
        source="shop.orders",
    )


def test_each_commit_keeps_its_rows_and_progress_after_a_long_history(
    catalog: Catalog, namespace: str
) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    for batch in range(40):
        changelog.commit(arrow_rows(_rows(batch * 10, 10), changelog.schema), _progress(batch))

    reopened = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    assert reopened.progress() == _progress(39)
    table = catalog.load_table(f"{namespace}.orders")
    assert len(table.snapshots()) == 40
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == list(range(400))


def test_a_transaction_stages_its_metadata_once_until_something_new_is_staged(
    catalog: Catalog, namespace: str
) -> None:
    open_changelog(catalog, f"{namespace}.orders", DATA, {})
    table = catalog.load_table(f"{namespace}.orders")
    transaction = _Transaction(table)

    before = transaction.table_metadata
    assert transaction.table_metadata is before  # no fresh deep copy for a second read

    transaction.set_properties({"tidemark.test": "staged"})
    staged = transaction.table_metadata
    assert staged is not before
    assert staged.properties["tidemark.test"] == "staged"
    assert "tidemark.test" not in table.metadata.properties  # staged, not committed

    transaction.commit_transaction()
    assert catalog.load_table(f"{namespace}.orders").properties["tidemark.test"] == "staged"
    assert transaction.table_metadata.properties["tidemark.test"] == "staged"
