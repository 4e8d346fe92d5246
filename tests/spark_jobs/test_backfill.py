"""`tidemark backfill`: a past range's windows in order, with progress, safe to repeat."""

from __future__ import annotations

import io
import logging
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
from tidemark.cli import main
from tidemark.contracts.mirror import MirrorKey
from tidemark.output.progress import Progress
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


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_one_updating_line_on_a_terminal() -> None:
    stream = FakeTerminal()
    progress = Progress(2, "job:gmv", stream, clock=lambda: 0.0)
    window = Window.ending_at(datetime(2026, 3, 1, 12, 5, tzinfo=UTC), FIVE_MINUTES)

    progress.update(1, window)
    progress.update(2, window.next())
    progress.close()

    lines = stream.getvalue().split("\r")[1:]
    assert [line.split("]")[0] for line in lines] == ["[1/2", "[2/2"]
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1


def test_progress_elsewhere_is_a_log_line_at_most_every_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    progress = Progress(4, "job:gmv", io.StringIO(), clock=lambda: now[0], interval=10)
    window = Window.ending_at(datetime(2026, 3, 1, 12, 5, tzinfo=UTC), FIVE_MINUTES)
    caplog.set_level(logging.INFO, logger="tidemark.output.progress")

    for done, at in enumerate([1.0, 11.0, 12.0, 13.0], start=1):
        now[0] = at
        progress.update(done, window)

    assert [r.getMessage().split("]")[0] for r in caplog.records] == [
        "Backfill [2/4",
        "Backfill [4/4",
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
