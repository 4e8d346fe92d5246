"""Idle rounds of many tables are spread over ticks, so the binlog is read between them.

An idle round gives every table without changes an empty commit that moves its watermark. With
hundreds of tables a round takes longer than ``idle-commit-interval``; the loop must neither
block reading for the whole round nor start the next round as soon as one ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog

from ingest.settings import IngestSettings
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tidemark.config import load_pipeline
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source

QUIET_TABLES = 60
TRANSACTIONS = 10


class SteppingClock:
    """A monotonic clock on which each reading is a second after the one before, so every
    commit looks longer than any tick budget and every round longer than the idle interval."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_an_idle_round_longer_than_the_idle_interval_does_not_starve_reading(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    with orders.cursor() as cursor:
        for number in range(QUIET_TABLES):
            cursor.execute(f"CREATE TABLE quiet_{number:03} (id INT PRIMARY KEY)")
    config = load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=source_database,
            tables="\\.*",
            namespace=namespace,
            server_id=server_id,
        )
    )
    settings = IngestSettings(idle_commit_seconds=1.0, flush_interval_seconds=1.0)
    runner = make_runner(config, settings=settings, clock=SteppingClock())
    onboarded = _commits_of_quiet_tables(catalog, namespace)
    with orders.cursor() as cursor:
        for number in range(TRANSACTIONS):
            cursor.execute(f"INSERT INTO orders VALUES ({number}, 'kettle', 1)")

    run_to_end(runner, source, server_id, max_seconds=1e9)

    changelog = catalog.load_table(f"{namespace}.orders_changelog")
    assert len(changelog.scan().to_arrow()) == TRANSACTIONS
    # one empty commit per round: a loop that started another round at every event would have
    # committed each quiet table once per event. How many rounds fit depends on how the events
    # arrive in batches (2 on a quiet machine, 3 on a loaded one), so the bound is half that.
    streamed = _commits_of_quiet_tables(catalog, namespace)
    added = {table: streamed[table] - onboarded[table] for table in streamed}
    assert max(added.values()) < TRANSACTIONS // 2, added


def _commits_of_quiet_tables(catalog: Catalog, namespace: str) -> dict[str, int]:
    return {
        table: len(catalog.load_table(f"{namespace}.{table}_changelog").snapshots())
        for table in (f"quiet_{number:03}" for number in range(QUIET_TABLES))
    }
