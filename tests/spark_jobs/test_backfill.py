"""`tidemark backfill`: a past range's windows in order, safe to repeat (its progress display:
``tests/output/test_backfill_progress.py``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.backfill import windows_in
from tests.spark_jobs.sources import (
    changelog_watermark,
    create_shards,
    ingest_to_end,
    orders_pipeline,
    tick_past_now,
)
from tidemark.app.cli import main
from tidemark.contracts.mirror import MirrorKey
from tidemark.stack.endpoints import StackEndpoints
from tidemark.windows import Window

if TYPE_CHECKING:
    from tests.spark_jobs.sources import Connection

FIVE_MINUTES = timedelta(minutes=5)


def test_the_windows_of_a_range_are_those_overlapping_it_aligned_on_midnight() -> None:
    start = datetime(2026, 3, 1, 12, 3, tzinfo=UTC)

    windows = list(windows_in(start, start + timedelta(minutes=10), FIVE_MINUTES))

    assert [str(w) for w in windows] == [
        "[2026-03-01T12:00:00+00:00, 2026-03-01T12:05:00+00:00)",
        "[2026-03-01T12:05:00+00:00, 2026-03-01T12:10:00+00:00)",
        "[2026-03-01T12:10:00+00:00, 2026-03-01T12:15:00+00:00)",
    ]


def test_a_mirror_backfill_merges_each_window_once(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    spark: SparkSession,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    server_id: int,
) -> None:
    create_shards(admin_connection, 1)
    config = orders_pipeline(
        tmp_path / "p.yaml",
        endpoints,
        database=source_database,
        namespace=namespace,
        server_id=server_id,
    )
    ingest_to_end(config, catalog, endpoints, server_id)
    tick_past_now(admin_connection)
    ingest_to_end(config, catalog, endpoints, server_id)
    last_end = Window.containing(
        changelog_watermark(catalog, f"{namespace}.orders_changelog"), FIVE_MINUTES
    ).start
    argv = [
        "backfill",
        str(config.path),
        "--mirror",
        f"{namespace}.orders",
        "--from",
        (last_end - 3 * FIVE_MINUTES).isoformat(),
        "--to",
        last_end.isoformat(),
    ]

    assert main(argv) == 0
    assert "3 windows done" in capsys.readouterr().out
    mirror = f"tidemark.{namespace}.orders"
    snapshots = spark.sql(f"SELECT summary FROM {mirror}.snapshots ORDER BY committed_at").collect()
    ends = [int(row.summary[MirrorKey.WINDOW_END]) for row in snapshots]
    assert ends == [int((last_end - n * FIVE_MINUTES).timestamp() * 1000) for n in (2, 1, 0)]

    assert main(argv) == 0  # again: every window is already merged

    assert spark.sql(f"SELECT * FROM {mirror}.snapshots").count() == 3
