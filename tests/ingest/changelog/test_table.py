"""Changelog tables on the real catalog: what a commit keeps, what it costs to stage, and which
metadata files stay."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pyiceberg.catalog import Catalog

from ingest.changelog.table import _Transaction, changelog_schema, open_changelog
from tests.spark_jobs.changelogs import DATA, commit


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


def _metadata_files(location: str) -> int:
    folder = Path(urlsplit(location).path) / "metadata"
    return len(list(folder.glob("*.metadata.json")))
