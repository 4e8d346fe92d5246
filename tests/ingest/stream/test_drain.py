"""Rows waiting for a commit are handed to commits as slots free up, whether or not binlog
events arrive: a burst over many tables, then a binlog with nothing more in it (no heartbeat
either), is committed in a few flush intervals.

``server_wide``: it needs a binlog no other test writes to, since any transaction at all is an
event that would wake the loop.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ingest.settings import IngestSettings
from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import write_pipeline
from tests.runners import MakeRunner
from tidemark.config import load_pipeline
from tidemark.metrics import REGISTRY
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints
from tidemark.stack.process import wait_for

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = [pytest.mark.every_source, pytest.mark.server_wide]

TABLES = 100
#: a flush interval: each table is committed at most once in one
FLUSH_SECONDS = 0.2


def rows_committed(pipeline: str) -> float:
    """Rows ingest has committed for ``pipeline`` (its ``tidemark_ingest_rows``)."""
    return sum(
        sample.value
        for metric in REGISTRY.collect()
        if metric.name == "tidemark_ingest_rows"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels["pipeline"] == pipeline
    )


def test_a_burst_is_committed_with_no_binlog_event_after_it(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    with orders.cursor() as cursor:
        for number in range(TABLES):
            cursor.execute(f"CREATE TABLE burst_{number:03} (id INT PRIMARY KEY)")
    config = load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=source_database,
            tables="burst_\\d+",
            namespace=namespace,
            server_id=server_id,
        )
    )
    # no heartbeat: after the burst, nothing at all comes from the binlog
    settings = IngestSettings(
        heartbeat_seconds=3600.0, flush_interval_seconds=FLUSH_SECONDS, commit_threads=2
    )
    runner = make_runner(config, settings=settings)
    stop = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(runner.run, StopWhen(requested=stop))
        with orders.cursor() as cursor:
            for number in range(TABLES):  # one transaction per table
                cursor.execute(f"INSERT INTO burst_{number:03} VALUES (1)")
        drained = wait_for(lambda: rows_committed(namespace) >= TABLES, timeout=60)
        committed = rows_committed(namespace)  # the stop below commits the rest

        stop.set()
        with orders.cursor() as cursor:  # the event that lets a loop without wake-ups stop
            cursor.execute("INSERT INTO burst_000 VALUES (2)")
        running.result(timeout=60)

    # 100 tables on 4 commit slots take a few seconds (bench/: the drain's figures)
    assert drained, f"{committed:.0f} of {TABLES} rows committed after 60 s"
