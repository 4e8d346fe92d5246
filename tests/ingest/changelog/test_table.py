"""Changelog tables on the real catalog: what a commit keeps, and what it costs to stage."""

from __future__ import annotations

from pyiceberg.catalog import Catalog

from ingest.changelog.table import _Transaction, open_changelog
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
