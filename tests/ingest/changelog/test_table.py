"""Changelog tables on the real catalog: what a commit keeps, what it costs to stage, and which
metadata files stay."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest
from pyiceberg.catalog import Catalog

from bench.workloads.changelog_commits import DATA, T0, commit
from ingest.changelog.catalogs import IcebergSinkCatalog
from ingest.changelog.listing import CatalogListing
from ingest.changelog.table import changelog_schema, open_changelog
from ingest.launch import onboard
from tests.ingest.catalog_calls import recording_load_table
from tests.ingest.pipelines import write_pipeline
from tidemark.config import load_pipeline
from tidemark.freshness import FreshnessSample
from tidemark.lake.transactions import StagedOnceTransaction
from tidemark.sinks.commits import watermark_history
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


def test_each_commit_keeps_its_rows_and_progress_after_a_long_history(
    catalog: Catalog, namespace: str
) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    last = [commit(changelog, index) for index in range(40)][-1]

    assert open_changelog(catalog, f"{namespace}.orders", DATA, {}).progress() == last
    table = catalog.load_table(f"{namespace}.orders")
    assert len(table.snapshots()) == 40
    assert sorted(table.scan().to_arrow()["qty"].to_pylist()) == list(range(40))


def test_a_transaction_stages_its_metadata_once_until_something_new_is_staged(
    catalog: Catalog, namespace: str
) -> None:
    open_changelog(catalog, f"{namespace}.orders", DATA, {})
    table = catalog.load_table(f"{namespace}.orders")
    transaction = StagedOnceTransaction(table)

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


def test_a_changelog_keeps_only_its_last_metadata_files(catalog: Catalog, namespace: str) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    for index in range(15):
        commit(changelog, index)

    table = catalog.load_table(f"{namespace}.orders")
    assert _metadata_files(table.location()) == 11  # the current one and ten before it
    assert len(table.snapshots()) == 15  # snapshots are kept: only old metadata files go


def test_a_changelog_without_retention_gets_it_when_opened_keeping_what_the_user_set(
    catalog: Catalog, namespace: str
) -> None:
    identifier = f"{namespace}.orders"
    catalog.create_table(
        identifier,
        schema=changelog_schema(DATA),
        properties={"format-version": "2", "write.metadata.previous-versions-max": "3"},
    )

    changelog = open_changelog(catalog, identifier, DATA, {})
    for index in range(6):
        commit(changelog, index)

    properties = catalog.load_table(identifier).properties
    assert properties["write.metadata.delete-after-commit.enabled"] == "true"
    assert properties["write.metadata.previous-versions-max"] == "3"
    assert _metadata_files(catalog.load_table(identifier).location()) == 4


@pytest.mark.every_source
def test_onboarding_asks_the_catalog_only_for_changelogs_that_exist(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    tmp_path: Path,
    server_id: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with admin_connection.cursor() as cursor:
        for name in ("kept", "fresh"):
            cursor.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, qty INT)")
    path = write_pipeline(
        tmp_path / "p.yaml",
        source,
        endpoints.catalog,
        database=source_database,
        tables="kept|fresh",
        namespace=namespace,
        server_id=server_id,
    )
    kept = f"{namespace}.kept_changelog"
    onboard(
        load_pipeline(path), IcebergSinkCatalog(catalog)
    )  # an earlier run made kept's changelog
    catalog.drop_table(f"{namespace}.fresh_changelog")  # and not fresh's
    uuid = catalog.load_table(kept).metadata.table_uuid
    asked = recording_load_table(catalog, monkeypatch)

    onboarding = onboard(load_pipeline(path), IcebergSinkCatalog(catalog))

    assert asked == [kept]
    assert sorted(table.identifier for table in onboarding.tables.values()) == [
        f"{namespace}.fresh_changelog",
        kept,
    ]
    assert catalog.load_table(kept).metadata.table_uuid == uuid  # opened, not made again
    assert catalog.load_table(f"{namespace}.fresh_changelog").schema().find_field("qty")


def test_a_changelog_created_since_the_listing_is_opened_as_it_is(
    catalog: Catalog, namespace: str
) -> None:
    listing = CatalogListing(IcebergSinkCatalog(catalog), [namespace])
    first = open_changelog(catalog, f"{namespace}.orders", DATA, {})  # by someone else
    commit(first, 1)

    opened = open_changelog(catalog, f"{namespace}.orders", DATA, {}, listing)

    assert opened.progress() == first.progress()


def _metadata_files(location: str) -> int:
    folder = Path(urlsplit(location).path) / "metadata"
    return len(list(folder.glob("*.metadata.json")))


def test_the_watermark_history_is_one_sample_a_minute_of_the_commits_that_have_one(
    catalog: Catalog, namespace: str
) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    streamed = [commit(changelog, index) for index in range(3)]
    # a bootstrap's commit holds its watermark until the stream catches up: no sample
    held = replace(streamed[-1], watermark_ms=streamed[-1].watermark_ms + 60_000)
    changelog.commit(changelog.schema.empty_table(), replace(held, hold_until=held.position))
    table = catalog.load_table(f"{namespace}.orders")
    third = datetime.fromtimestamp(table.snapshots()[2].timestamp_ms / 1000, UTC)

    history = watermark_history(changelog.commits(), since=third - timedelta(minutes=5))
    later = watermark_history(changelog.commits(), since=third + timedelta(minutes=5))

    # the three commits came within a minute or two: the furthest of each minute is kept
    assert history[-1] == FreshnessSample(third, streamed[-1].watermark_ms)
    assert {sample.watermark_ms for sample in history} <= {p.watermark_ms for p in streamed}
    assert later == (history[-1],)  # where a chart starting later begins


def test_the_newest_rows_since_a_time_are_read_newest_first(
    catalog: Catalog, namespace: str
) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    for index in range(40):  # a file each, the row of commit i changed at T0 + 2 s * i
        commit(changelog, index)
    start = datetime.fromtimestamp(T0 / 1000, UTC)

    newest = changelog.newest_rows(start + timedelta(seconds=60), ["qty"], limit=3)
    since_74 = changelog.newest_rows(start + timedelta(seconds=74), ["qty"], limit=5)

    assert newest.to_pydict() == {"qty": [39, 38, 37]}
    assert since_74.to_pydict() == {"qty": [39, 38, 37]}  # fewer than asked: no older one
