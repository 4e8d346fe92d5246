"""Commits through the JDBC catalog start from the metadata the table holds, and still never
lose a concurrent writer's commit (``tidemark.lake.sql_catalog``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import Table

from tidemark.catalog import load_catalog, purge_table
from tidemark.lake.sql_catalog import TidemarkSqlCatalog
from tidemark.stack.endpoints import StackEndpoints

ROWS = pa.schema([pa.field("id", pa.int64())])


@pytest.fixture
def table(catalog: Catalog, namespace: str) -> Iterator[Table]:
    yield catalog.create_table(f"{namespace}.t", schema=ROWS)


def rows(*ids: int) -> pa.Table:
    return pa.Table.from_pylist([{"id": i} for i in ids], schema=ROWS)


def test_the_stacks_catalog_commits_through_tidemarks_sql_catalog(
    endpoints: StackEndpoints,
) -> None:
    catalog = load_catalog(endpoints.catalog.name, endpoints.catalog.properties())

    assert isinstance(catalog, TidemarkSqlCatalog)


def test_a_writer_behind_another_retries_on_the_newer_table_and_loses_nothing(
    catalog: Catalog, table: Table
) -> None:
    behind = catalog.load_table(table.name())
    table.append(rows(1))

    behind.append(rows(2))  # PyIceberg's transaction retries on the refreshed table

    current = catalog.load_table(table.name())
    assert sorted(current.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    assert len(current.snapshots()) == 2


def test_a_writer_behind_another_that_may_not_retry_fails_and_commits_nothing(
    catalog: Catalog, table: Table
) -> None:
    with table.transaction() as transaction:
        transaction.set_properties({"commit.retry.num-retries": "0"})
    behind = catalog.load_table(table.name())
    table.append(rows(1))

    with pytest.raises(CommitFailedException, match="updated by another process"):
        behind.append(rows(2))

    current = catalog.load_table(table.name())
    assert current.scan().to_arrow().column("id").to_pylist() == [1]
    assert current.metadata_location == table.metadata_location


def test_a_commit_keeps_the_metadata_log_and_the_tables_history(
    catalog: Catalog, table: Table
) -> None:
    created_at = table.metadata_location
    table.append(rows(1))
    table.append(rows(2))

    current = catalog.load_table(table.name())
    assert current.metadata == table.metadata
    assert [entry.metadata_file for entry in current.metadata.metadata_log][0] == created_at
    history = [snapshot.snapshot_id for snapshot in table.snapshots()]
    assert [snapshot.snapshot_id for snapshot in current.snapshots()] == history


def test_a_purged_table_of_a_local_warehouse_is_gone_from_the_catalog_and_the_disk(
    catalog: Catalog, namespace: str
) -> None:
    table = catalog.create_table(f"{namespace}.purged", schema=ROWS)
    for index in range(3):
        table.append(rows(index))
    folder = Path(urlsplit(table.location()).path)
    assert any(folder.rglob("*.parquet"))

    purge_table(catalog, f"{namespace}.purged")

    assert not catalog.table_exists(f"{namespace}.purged")
    assert not folder.exists()


def test_a_table_located_in_a_shared_folder_is_purged_file_by_file_leaving_the_rest(
    catalog: Catalog, namespace: str, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    table = catalog.create_table(f"{namespace}.elsewhere", schema=ROWS, location=shared.as_uri())
    table.append(rows(1))
    neighbour = shared / "someone_elses.txt"
    neighbour.write_text("kept")

    purge_table(catalog, f"{namespace}.elsewhere")

    assert not catalog.table_exists(f"{namespace}.elsewhere")
    assert neighbour.read_text() == "kept"
