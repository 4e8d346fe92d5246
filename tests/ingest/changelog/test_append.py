"""Changelog appends (``ingest.changelog.table`` through ``tidemark.lake.appends``): what
PyIceberg's append would write, for less, and never a second writer's batch on top of the
first's."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyspark.sql import SparkSession

from bench.workloads.changelog_commits import DATA, T0, commit
from ingest.changelog.fencing import ConcurrentWriterError
from ingest.changelog.table import ChangelogTable, changelog_schema, open_changelog
from tidemark.contracts.instance import writer_id
from tidemark.contracts.progress import TableProgress
from tidemark.lake.manifest_tiers import FAN_IN
from tidemark.source import BinlogPosition

pytestmark = pytest.mark.every_storage

DAY_US = 86_400_000_000


def test_an_append_writes_what_pyiceberg_would(
    catalog: Catalog, namespace: str, spark: SparkSession
) -> None:
    lean = open_changelog(catalog, f"{namespace}.lean", DATA, {})
    reference = _with_pyiceberg_append(open_changelog(catalog, f"{namespace}.reference", DATA, {}))
    for index, days in enumerate([[0], [0, 1, 1], [], [2, 0]]):  # one day, two, none (idle)
        for table in (lean, reference):
            _append(table, index, days)

    written = catalog.load_table(lean.identifier)
    expected = catalog.load_table(reference.identifier)
    assert _rows(written) == _rows(expected)
    assert [_summary(s.summary) for s in written.snapshots()] == [
        _summary(s.summary) for s in expected.snapshots()
    ]
    assert _data_files(written) == _data_files(expected)
    assert [s.sequence_number for s in written.snapshots()] == [
        s.sequence_number for s in expected.snapshots()
    ]
    assert _manifests(written) == _manifests(expected)
    by_day = spark.sql(
        f"SELECT partition.event_day AS day, record_count FROM tidemark.{lean.identifier}.files"
    ).collect()
    assert sorted((row.day.isoformat(), row.record_count) for row in by_day) == [
        ("2026-01-01", 1),
        ("2026-01-01", 1),
        ("2026-01-01", 1),
        ("2026-01-02", 2),
        ("2026-01-03", 1),
    ]
    assert spark.table(f"tidemark.{lean.identifier}").count() == 6


@pytest.mark.parametrize("storage", ["local"], indirect=True)  # the tiers: storage-blind
def test_a_long_history_keeps_a_short_manifest_list_of_the_same_files(
    catalog: Catalog, namespace: str, spark: SparkSession
) -> None:
    commits = FAN_IN**2 + 3  # merges into the second tier, and a few manifests after it
    lean = open_changelog(catalog, f"{namespace}.lean", DATA, {})
    reference = _with_pyiceberg_append(open_changelog(catalog, f"{namespace}.reference", DATA, {}))
    for index in range(commits):
        for table in (lean, reference):
            _append(table, index, [index % 2])

    written = catalog.load_table(lean.identifier)
    expected = catalog.load_table(reference.identifier)
    assert len(_manifest_files(expected)) == commits
    assert len(_manifest_files(written)) <= 2 * (FAN_IN - 1)
    assert _entries(written) == _entries(expected)
    assert _rows(written) == _rows(expected)
    assert spark.table(f"tidemark.{lean.identifier}").count() == commits


@pytest.mark.parametrize("append", ["lean", "pyiceberg"])
def test_a_second_writer_commits_nothing_and_is_told_why(
    catalog: Catalog, namespace: str, append: str
) -> None:
    first = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    second = open_changelog(catalog, f"{namespace}.orders", DATA, {})  # a second ingest
    if append == "pyiceberg":  # its automatic retry must not apply the batch again
        _with_pyiceberg_append(second)
    commit(first, 1)
    data_files = _files_in(first, "data")

    # the writer named is the first one: this process here
    with pytest.raises(ConcurrentWriterError, match=re.escape(f"another writer ({writer_id()})")):
        commit(second, 2)

    table = catalog.load_table(first.identifier)
    assert table.scan().to_arrow()["qty"].to_pylist() == [1]
    if append == "lean":  # PyIceberg leaves a failed commit's data files to orphan removal
        assert _files_in(first, "data") == data_files  # its Parquet file is gone again
    commit(first, 3)  # the first writer goes on
    assert sorted(catalog.load_table(first.identifier).scan().to_arrow()["qty"].to_pylist()) == [
        1,
        3,
    ]


def test_two_writers_committing_at_the_same_moment_never_both_commit(
    catalog: Catalog, namespace: str
) -> None:
    writers = [open_changelog(catalog, f"{namespace}.orders", DATA, {}) for _ in range(2)]
    start = threading.Barrier(len(writers))

    def write(writer: ChangelogTable, index: int) -> str:
        start.wait()
        try:
            commit(writer, index)
        except ConcurrentWriterError:
            return "refused"
        return "committed"

    with ThreadPoolExecutor(len(writers)) as pool:
        outcomes = list(pool.map(write, writers, [1, 2]))

    assert sorted(outcomes) == ["committed", "refused"]
    qty = catalog.load_table(writers[0].identifier).scan().to_arrow()["qty"].to_pylist()
    assert qty == [1 if outcomes[0] == "committed" else 2]


def test_an_append_after_a_compaction_lands_on_top_of_it_once(
    catalog: Catalog, namespace: str, spark: SparkSession
) -> None:
    changelog = open_changelog(catalog, f"{namespace}.orders", DATA, {})
    for index in range(4):
        commit(changelog, index)
    spark.sql(
        f"CALL tidemark.system.rewrite_data_files(table => '{changelog.identifier}', "
        "options => map('min-input-files', '2'))"
    ).collect()
    compacted = catalog.load_table(changelog.identifier).current_snapshot()
    assert compacted is not None and compacted.summary is not None
    assert compacted.summary.operation.value == "replace"

    last = commit(changelog, 4)  # from the metadata it held before the compaction

    table = catalog.load_table(changelog.identifier)
    assert sorted(table.scan().to_arrow()["qty"].to_pylist()) == [0, 1, 2, 3, 4]
    assert table.current_snapshot().parent_snapshot_id == compacted.snapshot_id  # type: ignore[union-attr]
    assert ChangelogTable(table).progress() == last
    assert spark.table(f"tidemark.{changelog.identifier}").count() == 5


def _with_pyiceberg_append(table: ChangelogTable) -> ChangelogTable:
    """``table`` committing through PyIceberg's own append: the reference."""

    def never(metadata: TableMetadata) -> bool:
        return False

    table._appender.lean = never  # type: ignore[method-assign]
    return table


def _append(table: ChangelogTable, index: int, days: list[int]) -> None:
    rows = [
        {
            "id": index * 10 + n,
            "item": f"item-{index}-{n}",
            "qty": None if n == 1 else n,
            "_tm_op": "u",
            "_tm_event_time": T0 * 1000 + day * DAY_US + n,
            "_tm_position": f"binlog.000001:{4 + index}",
            "_tm_source_db": "shop",
            "_tm_source_table": "orders",
            "_tm_order": index * 10 + n,
            "_tm_schema_version": 1,
        }
        for n, day in enumerate(days)
    ]
    batch = pa.Table.from_pylist(rows, changelog_schema(DATA)).cast(table.schema)
    table.commit(batch, _progress(index))


def _progress(index: int) -> TableProgress:
    return TableProgress(
        position=BinlogPosition("binlog.000001", 4 + index),
        watermark_ms=T0 + index,
        last_order=index,
        source="127.0.0.1:3306",
    )


def _rows(table: Table) -> list[dict[str, Any]]:
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["_tm_order"])


#: the Arrow schema Parquet files embed is serialized a few bytes apart (same fields, ids and
#: types), so sizes differ by that much
_SIZES = {"added-files-size", "total-files-size"}


def _summary(summary: Any) -> dict[str, str]:
    kept = {k: v for k, v in summary.additional_properties.items() if k not in _SIZES}
    return kept | {"operation": summary.operation.value}


def _data_files(table: Table) -> list[tuple[Any, ...]]:
    files: list[tuple[Any, ...]] = []
    for task in table.scan().plan_files():
        data_file = task.file
        files.append(
            (
                tuple(data_file.partition),  # type: ignore[arg-type]  # a Record iterates
                data_file.record_count,
                sorted(data_file.value_counts.items()),
                sorted(data_file.null_value_counts.items()),
                sorted(data_file.lower_bounds.items()),
                sorted(data_file.upper_bounds.items()),
                data_file.spec_id,
            )
        )
    return sorted(files)


def _manifests(table: Table) -> list[tuple[Any, ...]]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return [
        (
            manifest.added_files_count,
            manifest.added_rows_count,
            manifest.sequence_number,
            manifest.min_sequence_number,
            [(p.contains_null, p.lower_bound, p.upper_bound) for p in manifest.partitions or []],
        )
        for manifest in snapshot.manifests(table.io)
    ]


def _manifest_files(table: Table) -> list[Any]:
    snapshot = table.current_snapshot()
    assert snapshot is not None
    return snapshot.manifests(table.io)


def _entries(table: Table) -> list[tuple[Any, ...]]:
    """Each live data file's sequence numbers, the snapshot that added it and its rows' first
    order key."""
    order_id = table.schema().find_field("_tm_order").field_id
    return sorted(
        (
            entry.sequence_number,
            entry.file_sequence_number,
            entry.data_file.record_count,
            entry.data_file.lower_bounds[order_id],
        )
        for manifest in _manifest_files(table)
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
    )


def _files_in(table: ChangelogTable, folder: str) -> set[str]:
    location = Path(urlsplit(table._table.location()).path) / folder
    return {str(path) for path in location.rglob("*") if path.is_file()}
