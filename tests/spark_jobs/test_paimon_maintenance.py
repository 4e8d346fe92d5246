"""Paimon maintenance through Paimon's Java code in the Spark driver, on tables written as ingest
writes them (pypaimon, ``write-only``, a watermark and Tidemark's progress in every snapshot)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from bench.polling import wait_until
from bench.workloads.paimon_tables import SHARDS, Change, ContractTable, upserts
from spark_jobs.paimon_maintenance import (
    COMMIT_USER,
    PaimonJarMissingError,
    Retention,
    maintain_paimon_table,
    open_paimon_table,
    require_paimon,
)
from tidemark.contracts.changelog import SummaryKey

#: every snapshot may go as far as the table's own retention is concerned: only the pass's
#: floors keep any
EXPIRE_FREELY = {"snapshot.time-retained": "1 ms", "snapshot.num-retained.min": "1"}


@dataclass
class Source:
    """The source's rows as the changes written so far leave them: what a reader must see."""

    rows: dict[int, str] = field(default_factory=dict)

    def apply(self, changes: Sequence[Change]) -> Sequence[Change]:
        # within one commit the newest order of a key wins, whatever the order of the rows
        for change in sorted(changes, key=lambda c: c.order):
            if change.kind == "-D":
                self.rows.pop(change.key, None)
            else:
                self.rows[change.key] = change.name
        return changes

    def expected(self) -> list[tuple[Any, ...]]:
        return sorted((key, name, float(key)) for key, name in self.rows.items())


def history(table: ContractTable, source: Source, commits: int = 6) -> None:
    """``commits`` commits of upserts and deletes, watermarks 1000 ms apart: inserts of 60
    keys, then updates and deletes of some, a key changed twice in one commit, and a delete
    and re-insert of one key."""
    table.commit(source.apply(upserts(range(1, 61), "v0", 1)), 1_000)
    for n in range(1, commits):
        base = n * 1_000
        changes = [
            *upserts(range(n, 60, 7), f"v{n}", base, "+U"),
            Change(10 + n, "", base + 100, "-D"),
            Change(30 + n, f"first{n}", base + 200, "+U"),
            Change(30 + n, f"second{n}", base + 201, "+U"),
            Change(40 + n, "", base + 300, "-D"),
            Change(40 + n, f"back{n}", base + 301, "+I"),
        ]
        table.commit(source.apply(changes), (n + 1) * 1_000)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.mark.parametrize("buckets", [1, 2])
def test_a_pass_compacts_each_bucket_into_one_file_and_keeps_every_row(
    spark_context: SparkSession, warehouse: Path, buckets: int
) -> None:
    table = ContractTable(warehouse, "shop.orders", buckets=buckets)
    source = Source()
    history(table, source)
    rows, latest = table.rows(), table.snapshot()
    files_before = sum(table.data_files().values())

    result = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=1
    )

    compaction = table.snapshot()
    assert rows == source.expected()
    assert table.rows() == rows
    assert table.data_files() == dict.fromkeys(range(buckets), 1)
    assert table.manifests() <= 2  # the merged base, and the compaction's own
    assert compaction.snapshot_id == result.compaction_snapshot_id == latest.snapshot_id + 1
    assert compaction.kind == "COMPACT"
    assert compaction.commit_user == COMMIT_USER
    # not a progress commit: readers of Tidemark's progress skip it
    assert SummaryKey.POSITION.value not in compaction.properties
    assert compaction.watermark == latest.watermark == 6_000
    assert (result.buckets, result.files_compacted, result.files_written) == (
        buckets,
        files_before,
        buckets,
    )
    assert result.watermark == 6_000 and result.snapshots_expired == 0


def test_a_partitioned_table_gets_one_file_per_partition_and_bucket(
    spark_context: SparkSession, warehouse: Path
) -> None:
    table = ContractTable(warehouse, "shop.orders", buckets=2, partitioned=True)
    source = Source()
    history(table, source)

    result = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=1
    )

    assert table.rows() == source.expected()
    assert result.buckets == SHARDS * 2
    assert sorted(table.files_per_split()) == [(0, 1)] * SHARDS + [(1, 1)] * SHARDS


def test_a_pass_over_a_compact_table_commits_nothing(
    spark_context: SparkSession, warehouse: Path
) -> None:
    table = ContractTable(warehouse, "shop.orders", buckets=2)
    history(table, Source(), commits=2)
    maintain_paimon_table(spark_context, table.catalog_options, table.identifier, keep_from=1)
    compacted = table.snapshot()

    again = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=1
    )

    assert again.compaction_snapshot_id is None and again.files_compacted == 0
    assert table.snapshot() == compacted


def test_a_commit_between_the_compactions_plan_and_its_commit_is_kept(
    spark_context: SparkSession, warehouse: Path
) -> None:
    table = ContractTable(warehouse, "shop.orders", buckets=2)
    source = Source()
    history(table, source)
    # keys the compaction rewrites, updated and deleted, and a new one; in both buckets
    racing = [
        *upserts(range(3, 61), "raced", 50_000, "+U"),
        Change(2, "", 50_100, "-D"),
        Change(500, "new", 50_101, "+I"),
    ]

    with open_paimon_table(spark_context, table.catalog_options, table.identifier) as java:
        compaction = java.compact()
        raced = table.commit(source.apply(racing), 9_000)
        compaction_id = java.commit(compaction)

    assert compaction_id == raced + 1
    assert table.rows() == source.expected()
    # the raced commit's files are not in the compaction: they stay, beside the compacted ones
    assert table.data_files() == {0: 2, 1: 2}
    # the compaction was planned at watermark 6000, and never takes the table's back from 9000
    assert compaction.watermark == 6_000
    assert table.snapshot().watermark == 9_000

    maintain_paimon_table(spark_context, table.catalog_options, table.identifier, keep_from=1)

    assert table.rows() == source.expected()
    assert table.data_files() == {0: 1, 1: 1}


PACE = 0.2


@dataclass
class IngestLike:
    """What a thread committing with pypaimon did: each commit's start, end and snapshot."""

    commits: list[tuple[float, float, int]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


@contextmanager
def ingest_like(table: ContractTable, source: Source) -> Iterator[IngestLike]:
    """pypaimon commits in a thread, one every ``PACE`` seconds (ingest commits every second
    or so: this is harsher), from the first one on until the block ends."""
    ingest, stop = IngestLike(), threading.Event()

    def run() -> None:
        n = 0
        try:
            while not stop.wait(0 if n == 0 else PACE):
                n += 1
                changes = [
                    Change(n % 50, f"live{n}", 100_000 + n, "+U"),
                    Change(1_000 + n, f"new{n}", 100_000 + n, "+I"),
                    Change(60 - n % 60, "", 100_000 + n, "-D"),
                ]
                started = time.perf_counter()
                snapshot_id = table.commit(source.apply(changes), 10_000 + n)
                ingest.commits.append((started, time.perf_counter(), snapshot_id))
        except BaseException as error:
            ingest.errors.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_until("a first commit", lambda: ingest.commits or ingest.errors, 30)
        yield ingest
    finally:
        stop.set()
        thread.join(timeout=60)
    assert ingest.errors == []


def test_commits_made_during_a_pass_are_neither_lost_nor_hidden(
    spark_context: SparkSession, warehouse: Path
) -> None:
    table = ContractTable(warehouse, "shop.orders", buckets=2, options=EXPIRE_FREELY)
    source = Source()
    history(table, source)
    keep_from = table.snapshot().snapshot_id

    with ingest_like(table, source) as ingest:
        started = time.perf_counter()
        result = maintain_paimon_table(
            spark_context, table.catalog_options, table.identifier, keep_from=keep_from
        )
        done = time.perf_counter()

    during = [c for c in ingest.commits if c[0] >= started and c[1] <= done]
    assert during, "no commit landed while the pass ran: the test tested nothing"
    assert result.snapshots_expired == keep_from - 1
    assert table.rows() == source.expected()
    newest_commit = ingest.commits[-1][2]
    assert table.rows(newest_commit) == source.expected()
    # every commit's snapshot is still there to read, and the watermark only rose
    watermarks = [table.snapshot(i).watermark or 0 for i in table.snapshot_ids()]
    assert table.snapshot_ids() == list(range(keep_from, table.snapshot().snapshot_id + 1))
    assert watermarks == sorted(watermarks)


def test_expiry_keeps_the_given_snapshot_and_newer_readable_and_removes_older(
    spark_context: SparkSession, warehouse: Path
) -> None:
    # Paimon expires at most ``snapshot.expire.limit`` snapshots a call (after each of its
    # commits): a pass, after many commits, goes on to the end
    options = {**EXPIRE_FREELY, "snapshot.expire.limit": "2"}
    table = ContractTable(warehouse, "shop.orders", buckets=2, options=options)
    source = Source()
    history(table, source)
    rows_at = {i: table.rows(i) for i in table.snapshot_ids()}

    result = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=4
    )

    assert result.snapshots_expired == 3 and result.earliest_kept == 4
    assert table.snapshot_ids() == [4, 5, 6, 7]
    assert {i: table.rows(i) for i in (4, 5, 6)} == {i: rows_at[i] for i in (4, 5, 6)}
    assert table.rows() == rows_at[6]


def test_the_files_only_expired_snapshots_read_are_deleted(
    spark_context: SparkSession, warehouse: Path
) -> None:
    table = ContractTable(warehouse, "shop.orders", buckets=2, options=EXPIRE_FREELY)
    source = Source()
    history(table, source)
    written = set((warehouse / "shop.db" / "orders").rglob("data-*"))
    first = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=6
    )
    newer = table.commit(source.apply([Change(7, "late", 90_000)]), 9_000)

    # the compaction replaced the files ingest wrote; once no snapshot kept reads them, they go
    maintain_paimon_table(spark_context, table.catalog_options, table.identifier, keep_from=newer)

    assert first.compaction_snapshot_id == 7 and newer == 8
    assert table.snapshot_ids() == [8, 9]
    assert written & set((warehouse / "shop.db" / "orders").rglob("data-*")) == set()
    assert table.rows() == source.expected()


def test_the_tables_own_retention_still_holds_above_the_given_snapshot(
    spark_context: SparkSession, warehouse: Path
) -> None:
    # Paimon's default: an hour of snapshots
    table = ContractTable(warehouse, "shop.orders", options={"snapshot.num-retained.min": "1"})
    history(table, Source())

    result = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=6
    )

    assert result.snapshots_expired == 0
    assert table.snapshot_ids() == list(range(1, 8))


def test_the_newest_progress_snapshot_stays_whatever_snapshot_is_given(
    spark_context: SparkSession, warehouse: Path
) -> None:
    table = ContractTable(warehouse, "shop.orders", options=EXPIRE_FREELY)
    source = Source()
    history(table, source, commits=3)
    first = maintain_paimon_table(
        spark_context, table.catalog_options, table.identifier, keep_from=3
    )
    assert first.compaction_snapshot_id == 4
    table.commit(source.apply([Change(7, "late", 90_000)]), 9_000)  # snapshot 5
    maintain_paimon_table(spark_context, table.catalog_options, table.identifier, keep_from=6)

    # snapshot 5 is where ingest resumes: it carries the newest progress
    assert table.snapshot_ids() == [5, 6]
    assert table.snapshot(5).properties[SummaryKey.POSITION.value]
    assert table.rows() == source.expected()


def test_the_paimon_classes_are_on_the_stacks_spark_classpath(
    spark_context: SparkSession,
) -> None:
    assert require_paimon(spark_context, "shop.orders") is not None


def test_a_session_without_paimon_gets_an_error_naming_the_table_and_the_fix(
    spark_context: SparkSession,
) -> None:
    # a missing class is what a session without paimon-bundle finds: look one up
    with pytest.raises(PaimonJarMissingError) as raised:
        require_paimon(spark_context, "shop.orders", probe="org.apache.paimon.NoSuchClass")

    message = str(raised.value)
    assert "shop.orders" in message
    assert "paimon-bundle is not on the Spark classpath" in message
    assert "make setup" in message and "paimon-spark-4.1_2.13" in message


# --- the retention bound, pure ------------------------------------------------------------

NOW = 1_000_000
OLD = NOW - 10_000


def retention(**overrides: Any) -> Retention:
    values: dict[str, Any] = {
        "earliest": 1,
        "latest": 20,
        "retain_min": 1,
        "retain_max": 2**31 - 1,
        "older_than_ms": NOW,
        "consumer_next": None,
        "keep_from": None,
        "progress": None,
    }
    return Retention(**{**values, **overrides})


def all_old(snapshot_id: int) -> int:
    return OLD


@pytest.mark.parametrize(
    ("overrides", "end"),
    [
        ({}, 20),  # only num-retained.min=1: all but the latest
        ({"keep_from": 8}, 8),
        ({"keep_from": 8, "progress": 5}, 5),
        ({"keep_from": 8, "consumer_next": 3}, 3),
        ({"keep_from": 8, "retain_min": 15}, 6),
        # num-retained.max forces expiry, but never past the snapshot a window needs
        ({"keep_from": 8, "retain_max": 3, "older_than_ms": 0}, 8),
    ],
)
def test_expiry_ends_at_the_tightest_floor(overrides: dict[str, Any], end: int) -> None:
    assert retention(**overrides).end_exclusive(all_old) == end


def test_expiry_keeps_snapshots_younger_than_the_time_retained() -> None:
    young_from_12 = retention(keep_from=15)

    assert young_from_12.end_exclusive(lambda i: NOW if i >= 12 else OLD) == 12
