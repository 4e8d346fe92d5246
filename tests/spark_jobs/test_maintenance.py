"""Maintenance on the real stack: commits like ingest's, a mirror stamped like a merge's."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pymysql
import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from bench.workloads.changelog_commits import DATA, T0, commit
from ingest.changelog.table import ChangelogTable, open_changelog
from spark_jobs.maintenance import (
    FileCounts,
    MaintenanceSettings,
    TableKind,
    TableMaintainer,
    TableResult,
    maintain_tables,
)
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tidemark.config import load_pipeline
from tidemark.config.inventory import read_tables
from tidemark.config.plan import SinkTable, build_plan
from tidemark.contracts.mirror import MirrorKey
from tidemark.contracts.progress import TableProgress
from tidemark.stack.endpoints import StackEndpoints

COMMITS = 50  # changelog commits, watermark 2 s apart: T0 .. T0 + 98 s
WINDOW = timedelta(seconds=10)
MIRROR_WINDOWS = 7  # the mirror holds windows up to T0 + 70 s
KEPT_FROM = 29  # windows from T0 + 60 s on need commit 29 (T0 + 58 s) onwards
SETTINGS = MaintenanceSettings(
    min_snapshot_age=timedelta(0), retain_last=1, min_input_files=2, delete_file_threshold=1
)


@dataclass(frozen=True)
class Lake:
    sink: SinkTable
    changelog_ids: list[int]  # oldest first
    last_progress: TableProgress
    newest_stamp_id: int


@pytest.mark.every_storage
def test_maintenance_compacts_and_expires_only_what_nothing_needs(
    catalog: Catalog, spark: SparkSession, namespace: str
) -> None:
    lake = build_lake(catalog, spark, namespace)
    changelog_rows, mirror_rows = read_changelog(catalog, lake), read_mirror(spark, lake)

    results = TableMaintainer(spark, "tidemark", SETTINGS).maintain(lake.sink)

    changelog, mirror = by_kind(results)
    assert changelog.error is None and mirror.error is None
    assert changelog.files_before == FileCounts(COMMITS, 0)
    assert changelog.files_after == FileCounts(1, 0)
    assert changelog.rewritten_data_files == COMMITS
    assert read_changelog(catalog, lake) == changelog_rows
    remaining = snapshot_ids(spark, lake.sink.changelog)
    assert remaining.isdisjoint(lake.changelog_ids[:KEPT_FROM])
    assert remaining.issuperset(lake.changelog_ids[KEPT_FROM:])
    assert changelog.snapshots_expired == KEPT_FROM

    assert mirror.files_before is not None and mirror.files_after is not None
    assert mirror.files_before.data_files >= MIRROR_WINDOWS - 1
    assert mirror.files_before.delete_files >= 1
    assert mirror.files_after == FileCounts(1, 0)
    assert read_mirror(spark, lake) == mirror_rows
    assert lake.newest_stamp_id in snapshot_ids(spark, lake.sink.name)
    assert mirror.snapshots_expired == MIRROR_WINDOWS - 1

    # ingest resumes from the newest progress, past the compaction, and appends again
    table = ChangelogTable(catalog.load_table(lake.sink.changelog))
    assert table.progress() == lake.last_progress
    following = commit(table, COMMITS)
    assert ChangelogTable(catalog.load_table(lake.sink.changelog)).progress() == following
    assert len(read_changelog(catalog, lake)) == COMMITS + 1


def test_a_dry_run_changes_nothing(catalog: Catalog, spark: SparkSession, namespace: str) -> None:
    lake = build_lake(catalog, spark, namespace)
    before = {
        name: (snapshot_ids(spark, name), files(spark, name))
        for name in (lake.sink.changelog, lake.sink.name)
    }

    results = TableMaintainer(spark, "tidemark", SETTINGS).maintain(lake.sink, dry_run=True)

    after = {name: (snapshot_ids(spark, name), files(spark, name)) for name in before}
    assert after == before
    changelog, mirror = by_kind(results)
    assert changelog.snapshots_expired == KEPT_FROM  # what a real run would expire
    assert mirror.snapshots_expired == MIRROR_WINDOWS - 1
    assert changelog.files_after == changelog.files_before == FileCounts(COMMITS, 0)


def test_each_table_s_result_is_reported_as_soon_as_that_table_is_done(
    catalog: Catalog, spark: SparkSession, namespace: str, endpoints: StackEndpoints
) -> None:
    """What ``tidemark maintain`` shows as it goes: the changelog's result comes before the
    mirror, its sink's next table, is compacted."""
    lake = build_lake(catalog, spark, namespace)
    mirror_files = files(spark, lake.sink.name)
    reported: list[tuple[TableResult, list[str]]] = []

    results = maintain_tables(
        [lake.sink],
        endpoints.catalog.name,
        endpoints.catalog.properties(),
        endpoints.spark.jars,
        settings=SETTINGS,
        on_result=lambda result: reported.append((result, files(spark, lake.sink.name))),
    )

    assert [result for result, _ in reported] == results
    [(changelog, mirror_then), (mirror, _)] = reported
    assert (changelog.kind, mirror.kind) == (TableKind.CHANGELOG, TableKind.MIRROR)
    assert mirror_then == mirror_files
    assert files(spark, lake.sink.name) != mirror_files


def test_a_sink_whose_mirror_was_never_merged_keeps_its_changelog_history(
    catalog: Catalog, spark: SparkSession, namespace: str
) -> None:
    table = open_changelog(catalog, f"{namespace}.orders_changelog", DATA, {})
    for index in range(6):
        commit(table, index)
    sink = sink_table(namespace)

    changelog, mirror = TableMaintainer(spark, "tidemark", SETTINGS).maintain(sink)

    assert (mirror.kind, mirror.exists) == (TableKind.MIRROR, False)
    assert changelog.error is None
    assert changelog.snapshots_expired == 0
    assert changelog.files_after == FileCounts(1, 0)
    assert changelog.retention is not None and changelog.retention.expire_before_ms is None


# --- the lake ---------------------------------------------------------------------------------


def build_lake(catalog: Catalog, spark: SparkSession, namespace: str) -> Lake:
    table = open_changelog(catalog, f"{namespace}.orders_changelog", DATA, {})
    progress = [commit(table, index) for index in range(COMMITS)]
    history = catalog.load_table(f"{namespace}.orders_changelog").snapshots()
    sink = sink_table(namespace)
    newest_stamp = build_mirror(spark, f"tidemark.{sink.name}")
    return Lake(sink, [s.snapshot_id for s in history], progress[-1], newest_stamp)


def sink_table(namespace: str) -> SinkTable:
    return SinkTable(
        name=f"{namespace}.orders",
        key=("id",),
        key_origin="primary key",
        sources=("shop.orders",),
        mirror=f"{namespace}.orders",
        mirror_window=WINDOW,
        changelog=f"{namespace}.orders_changelog",
    )


def build_mirror(spark: SparkSession, name: str) -> int:
    """A merge-on-read mirror: windows that insert, then one whose merge deletes and updates;
    returns the snapshot id of that last, newest-stamped commit."""
    spark.sql(
        f"CREATE TABLE {name} (id BIGINT, item STRING, qty BIGINT) USING iceberg TBLPROPERTIES ("
        "'format-version'='2', 'write.delete.mode'='merge-on-read', "
        "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')"
    )
    for window in range(1, MIRROR_WINDOWS):
        with stamped(spark, window):
            values = ", ".join(f"({window * 10 + i}, 'w{window}', {i})" for i in range(3))
            spark.sql(f"INSERT INTO {name} VALUES {values}")
    with stamped(spark, MIRROR_WINDOWS):
        spark.sql(
            f"MERGE INTO {name} t USING (SELECT id FROM {name} WHERE qty = 0) s ON t.id = s.id "
            "WHEN MATCHED AND t.id % 20 = 0 THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET t.qty = 100"
        )
    row = spark.sql(
        f"SELECT snapshot_id FROM {name}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).collect()[0]
    return int(row["snapshot_id"])


@contextmanager
def stamped(spark: SparkSession, window: int) -> Iterator[None]:
    """Spark SQL commits inside carry the stamps of window number ``window``, as a merge's do."""
    end = T0 + window * (WINDOW // timedelta(milliseconds=1))
    stamps: Mapping[str, str] = {
        MirrorKey.WINDOW_START: str(end - WINDOW // timedelta(milliseconds=1)),
        MirrorKey.WINDOW_END: str(end),
        MirrorKey.MERGED_ORDER: str(window),
        MirrorKey.SOURCE_WATERMARK: str(end),
    }
    keys = [f"spark.sql.iceberg.snapshot-property.{key}" for key in stamps]
    for key, value in zip(keys, stamps.values(), strict=True):
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in keys:  # the session is shared with other tests
            spark.conf.unset(key)


# --- reading it back --------------------------------------------------------------------------


def by_kind(results: list[TableResult]) -> tuple[TableResult, TableResult]:
    kinds = {result.kind: result for result in results}
    assert len(kinds) == len(results) == 2
    return kinds[TableKind.CHANGELOG], kinds[TableKind.MIRROR]


def read_changelog(catalog: Catalog, lake: Lake) -> list[dict[str, Any]]:
    rows = catalog.load_table(lake.sink.changelog).scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda row: row["_tm_order"])


def read_mirror(spark: SparkSession, lake: Lake) -> list[tuple[Any, ...]]:
    spark.sql(f"REFRESH TABLE tidemark.{lake.sink.name}")
    rows = spark.sql(f"SELECT id, item, qty FROM tidemark.{lake.sink.name} ORDER BY id").collect()
    return [tuple(row) for row in rows]


def snapshot_ids(spark: SparkSession, table: str) -> set[int]:
    spark.sql(f"REFRESH TABLE tidemark.{table}")
    rows = spark.sql(f"SELECT snapshot_id FROM tidemark.{table}.snapshots").collect()
    return {int(row["snapshot_id"]) for row in rows}


def files(spark: SparkSession, table: str) -> list[str]:
    spark.sql(f"REFRESH TABLE tidemark.{table}")
    rows = spark.sql(f"SELECT file_path FROM tidemark.{table}.files").collect()
    return sorted(row["file_path"] for row in rows)


@pytest.fixture(autouse=True)
def _quiet_spark(spark: SparkSession) -> None:
    spark.sparkContext.setLogLevel("ERROR")


@pytest.mark.every_storage
def test_compaction_beside_a_busy_ingest_loses_no_row_and_says_if_it_lost_the_race(
    catalog: Catalog, spark: SparkSession, namespace: str
) -> None:
    name = f"{namespace}.orders_changelog"
    table = open_changelog(catalog, name, DATA, {})
    for index in range(20):
        commit(table, index)
    appended: list[TableProgress] = []
    done = threading.Event()

    def ingest() -> None:  # back to back, far faster than ingest's commit every 2 s
        writer = ChangelogTable(catalog.load_table(name))
        while not done.is_set() and len(appended) < 150:  # a bound on the test's cost
            appended.append(commit(writer, 20 + len(appended)))

    appender = threading.Thread(target=ingest)
    appender.start()
    try:
        [result, _] = TableMaintainer(spark, "tidemark", SETTINGS).maintain(sink_table(namespace))
    finally:
        done.set()
        appender.join(timeout=60)

    assert not appender.is_alive()
    assert appended, "no append ran during the maintenance"
    rows = catalog.load_table(name).scan().to_arrow()
    assert sorted(rows.column("_tm_order").to_pylist()) == list(range(20 + len(appended)))
    assert ChangelogTable(catalog.load_table(name)).progress() == appended[-1]
    if result.error is None:
        assert result.rewritten_data_files >= 20
    else:  # Iceberg retried and gave up: nothing was committed, and the user is told
        assert "CommitFailedException" in result.error


def test_real_ingest_resumes_after_maintenance_without_losing_or_repeating_a_change(
    endpoints: StackEndpoints,
    admin_connection: pymysql.connections.Connection[pymysql.cursors.Cursor],
    catalog: Catalog,
    make_runner: MakeRunner,
    spark: SparkSession,
    namespace: str,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    config = load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            endpoints.mariadb,
            endpoints.catalog,
            database=source_database,
            tables="orders",
            namespace=namespace,
            server_id=server_id,
            # no mirror: only ingest's progress holds the changelog's history back
            extra=f"tidemark:\n  tables:\n    {namespace}.orders:\n      mirror: false\n",
        )
    )
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, qty INT)")
    runner = make_runner(config)
    for key in range(6):
        with admin_connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO orders VALUES ({key}, {key})")
        run_to_end(runner, endpoints.mariadb, server_id, max_seconds=60)
    [sink] = build_plan(config, read_tables(config.source.connection, config.source.captures)).sinks
    name = sink.changelog
    progress = ChangelogTable(catalog.load_table(name)).progress()

    [result] = TableMaintainer(spark, "tidemark", SETTINGS).maintain(sink)

    assert result.error is None, result.error
    assert result.files_after == FileCounts(1, 0)
    assert result.snapshots_expired == result.snapshots_before - 1
    assert ChangelogTable(catalog.load_table(name)).progress() == progress
    with admin_connection.cursor() as cursor:
        cursor.execute("UPDATE orders SET qty = 100 WHERE id = 0")
        cursor.execute("INSERT INTO orders VALUES (6, 6)")
    restarted = make_runner(config)
    run_to_end(restarted, endpoints.mariadb, server_id, max_seconds=60)
    rows = catalog.load_table(name).scan().to_arrow().to_pylist()
    changes = [(r["_tm_op"], r["id"], r["qty"]) for r in sorted(rows, key=lambda r: r["_tm_order"])]
    assert changes == [("c", key, key) for key in range(6)] + [("u", 0, 100), ("c", 6, 6)]
    assert [r["_tm_order"] for r in sorted(rows, key=lambda r: r["_tm_order"])] == list(range(1, 9))
