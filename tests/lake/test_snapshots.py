"""The snapshot producer (``tidemark.lake.snapshots``) against the stack's catalog: what it
commits, its retries, and which files it leaves when a commit fails. What ingest's appends and
the merge without Spark commit with it is compared with PyIceberg's and Spark's in
``tests/ingest/changelog/test_append.py`` and ``tests/spark_jobs/test_arrow_merge.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.types import LongType, NestedField, StringType

from tidemark.lake.data_files import write_with_pyiceberg
from tidemark.lake.snapshots import FastAppend, SnapshotPlan

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "name", StringType(), required=False),
)


def test_a_fast_append_commits_its_rows_and_properties(catalog: Catalog, namespace: str) -> None:
    table = catalog.create_table(f"{namespace}.t", SCHEMA)

    snapshot = _append(table, [1, 2], {"tidemark.test": "one"})
    _append(table, [3], {"tidemark.test": "two"})

    read = catalog.load_table(f"{namespace}.t")
    assert sorted(read.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    first = read.snapshot_by_id(snapshot.snapshot_id)
    assert first is not None and first.summary is not None
    assert first.summary.operation.value == "append"
    assert first.summary["added-records"] == "2"
    assert first.summary["tidemark.test"] == "one"
    current = read.current_snapshot()
    assert current is not None and current.summary is not None
    assert current.parent_snapshot_id == snapshot.snapshot_id
    assert current.summary["total-records"] == "3"


def test_a_commit_the_catalog_refuses_at_its_last_attempt_leaves_no_file(
    catalog: Catalog, namespace: str
) -> None:
    stale = catalog.create_table(f"{namespace}.t", SCHEMA)
    _append(catalog.load_table(f"{namespace}.t"), [1], {})  # another writer
    before = _files(stale)

    with pytest.raises(CommitFailedException):
        _append(stale, [2], {}, attempts=1)

    assert _files(stale) == before


def test_a_retry_lands_on_top_of_the_commit_in_between_once_asked(
    catalog: Catalog, namespace: str
) -> None:
    stale = catalog.create_table(f"{namespace}.t", SCHEMA)
    other = _append(catalog.load_table(f"{namespace}.t"), [1], {})
    asked = []

    snapshot = _append(stale, [2], {}, attempts=2, before_retry=lambda: asked.append(True))

    assert asked == [True]
    assert snapshot.parent_snapshot_id == other.snapshot_id
    read = catalog.load_table(f"{namespace}.t")
    assert sorted(read.scan().to_arrow()["id"].to_pylist()) == [1, 2]
    # the refused attempt's manifest list went with it
    lists = {path.name for path in _files(read) if path.name.startswith("snap-")}
    assert lists == {Path(s.manifest_list).name for s in read.snapshots()}


def test_a_retry_refused_by_before_retry_leaves_no_file(catalog: Catalog, namespace: str) -> None:
    stale = catalog.create_table(f"{namespace}.t", SCHEMA)
    _append(catalog.load_table(f"{namespace}.t"), [1], {})
    before = _files(stale)

    def refuse() -> None:
        raise RuntimeError("another writer committed")

    with pytest.raises(RuntimeError, match="another writer"):
        _append(stale, [2], {}, attempts=3, before_retry=refuse)

    assert _files(stale) == before


def test_a_commit_whose_outcome_is_unknown_keeps_its_files(
    catalog: Catalog, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog took the commit but its answer was lost: the files are the table's now."""
    table = catalog.create_table(f"{namespace}.t", SCHEMA)
    commit_table = table.catalog.commit_table

    def lost_answer(*arguments: Any) -> Any:
        commit_table(*arguments)
        raise ConnectionError("the catalog's database went away")

    monkeypatch.setattr(table.catalog, "commit_table", lost_answer)
    with pytest.raises(ConnectionError):
        _append(table, [1], {})
    monkeypatch.undo()

    assert catalog.load_table(f"{namespace}.t").scan().to_arrow()["id"].to_pylist() == [1]


def test_an_error_while_the_files_are_written_deletes_those_written(
    catalog: Catalog, namespace: str
) -> None:
    table = catalog.create_table(f"{namespace}.t", SCHEMA)
    before = _files(table)

    with pytest.raises(RuntimeError, match="no more rows"):
        with FastAppend(table, SnapshotPlan.of(table.metadata, laid_out=False), {}) as append:
            for data_file in write_with_pyiceberg(
                table.metadata, table.io, _rows([1]), append.commit_uuid
            ):
                append.append_data_file(data_file)
            raise RuntimeError("no more rows")

    assert _files(table) == before
    assert catalog.load_table(f"{namespace}.t").current_snapshot() is None


def _append(table: Table, ids: list[int], properties: dict[str, str], **options: Any) -> Any:
    plan = SnapshotPlan.of(table.metadata, laid_out=True)
    with FastAppend(table, plan, properties, **options) as append:
        for data_file in write_with_pyiceberg(
            table.metadata, table.io, _rows(ids), append.commit_uuid
        ):
            append.append_data_file(data_file)
    return append.snapshot


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids], pa.string())}
    )


def _files(table: Table) -> set[Path]:
    folder = Path(table.location().removeprefix("file://"))
    return {path for path in folder.rglob("*") if path.is_file()}
