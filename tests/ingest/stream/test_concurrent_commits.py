"""Changelog commits run several at a time (``IngestSettings.commit_threads``) in the
background: the binlog is read while tables commit, and a table whose commit fails stops the
run only once the commits beside it have ended, each that landed reported once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from bench.polling import wait_until
from ingest.changelog.table import ChangelogTable
from ingest.settings import IngestSettings
from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import run_to_end, write_pipeline
from tests.runners import MakeRunner
from tidemark.config import PipelineConfig, load_pipeline
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.source import current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source

TABLES = 12


class Reports:
    """The reports a runner publishes, kept in order (the runner's ``ReportSink``)."""

    def __init__(self) -> None:
        self.commits: list[CommitReport] = []

    def publish(self, report: CommitReport) -> None:
        self.commits.append(report)

    def publish_watermark(self, report: WatermarkReport) -> None:
        pass

    def tick(self) -> None:
        pass


@pytest.fixture
def twelve_tables(orders: Connection) -> Connection:
    with orders.cursor() as cursor:
        for number in range(TABLES):
            cursor.execute(f"CREATE TABLE t{number:02} (id INT PRIMARY KEY, qty INT)")
    return orders


@pytest.fixture
def config(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> PipelineConfig:
    """A pipeline of the tables ``t00``...``t11``."""
    return load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            source,
            endpoints.catalog,
            database=source_database,
            tables="t\\d+",
            namespace=namespace,
            server_id=server_id,
        )
    )


class CommitGate:
    """Once ``armed``, holds every changelog commit until ``opened``, telling when the first
    one is waiting."""

    def __init__(self) -> None:
        self.armed = False
        self.waiting = threading.Event()
        self.opened = threading.Event()

    def hold(self) -> None:
        if not self.armed:
            return
        self.waiting.set()
        assert self.opened.wait(timeout=120), "the gate was never opened"


@pytest.fixture
def commit_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[CommitGate]:
    gate = CommitGate()
    commit = ChangelogTable.commit

    def held_commit(self: ChangelogTable, *arguments: object, **keywords: object) -> object:
        gate.hold()
        return commit(self, *arguments, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(ChangelogTable, "commit", held_commit)
    yield gate
    gate.opened.set()


def test_the_binlog_is_read_while_a_flush_commits(
    source: SourceEndpoint,
    catalog: Catalog,
    make_runner: MakeRunner,
    namespace: str,
    config: PipelineConfig,
    twelve_tables: Connection,
    server_id: int,
    commit_gate: CommitGate,
) -> None:
    settings = IngestSettings(commit_threads=4, flush_interval_seconds=0.1)
    runner = make_runner(config, settings=settings)
    commit_gate.armed = True  # the start-up's own commits are done
    stop = threading.Event()
    run = threading.Thread(target=runner.run, args=(StopWhen(requested=stop),), daemon=True)
    run.start()
    try:
        with twelve_tables.cursor() as cursor:
            cursor.execute("INSERT INTO t00 VALUES (1, 1)")
            cursor.execute("INSERT INTO t01 VALUES (1, 1)")
        wait_until("a flush committing", commit_gate.waiting.is_set, seconds=60)
        with twelve_tables.cursor() as cursor:
            cursor.execute("INSERT INTO t02 VALUES (1, 2)")
        later = current_position(source.cdc_source(server_id))

        # the flush of t00 and t01 still holds: what came after is read all the same
        wait_until("reading on", lambda: runner.consistent_from() >= later, seconds=60)
    finally:
        commit_gate.opened.set()
        stop.set()
        run.join(timeout=120)
    assert not run.is_alive()
    for table, qty in (("t00", [1]), ("t01", [1]), ("t02", [2])):
        rows = catalog.load_table(f"{namespace}.{table}_changelog").scan().to_arrow()
        assert rows["qty"].to_pylist() == qty


def test_each_table_is_committed_while_the_stream_runs(
    catalog: Catalog,
    make_runner: MakeRunner,
    namespace: str,
    config: PipelineConfig,
    twelve_tables: Connection,
) -> None:
    settings = IngestSettings(commit_threads=2, flush_interval_seconds=0.2)
    runner = make_runner(config, settings=settings)
    stop = threading.Event()
    run = threading.Thread(target=runner.run, args=(StopWhen(requested=stop),), daemon=True)
    run.start()
    try:
        for round_ in range(2):  # twice each table: later rows too, not only first ones
            for number in range(TABLES):
                with twelve_tables.cursor() as cursor:
                    cursor.execute(f"INSERT INTO t{number:02} VALUES ({round_}, {number})")
                wait_until(
                    f"t{number:02}'s row {round_} committed while streaming",
                    _holds_rows(catalog, f"{namespace}.t{number:02}_changelog", round_ + 1),
                    seconds=30,
                )
    finally:
        stop.set()
        run.join(timeout=120)
    assert not run.is_alive()


def _holds_rows(catalog: Catalog, identifier: str, rows: int) -> Callable[[], bool]:
    return lambda: len(catalog.load_table(identifier).scan().to_arrow()) == rows


def test_a_failed_commit_stops_the_run_and_every_commit_that_landed_is_reported(
    source: SourceEndpoint,
    namespace: str,
    catalog: Catalog,
    make_runner: MakeRunner,
    config: PipelineConfig,
    twelve_tables: Connection,
    server_id: int,
) -> None:
    reports = Reports()
    settings = IngestSettings(commit_threads=4, flush_interval_seconds=3600.0)
    runner = make_runner(config, reports=reports, settings=settings)
    with twelve_tables.cursor() as cursor:  # one transaction: twelve tables to commit at once
        cursor.execute("BEGIN")
        for number in range(TABLES):
            cursor.execute(f"INSERT INTO t{number:02} VALUES (1, {number}), (2, {number})")
        cursor.execute("COMMIT")
    catalog.drop_table(f"{namespace}.t05_changelog")  # its commit cannot land

    with pytest.raises(NoSuchTableError):
        run_to_end(runner, source, server_id, max_seconds=120)

    reported = [report.table for report in reports.commits]
    assert len(reported) == len(set(reported))  # each once
    landed = set()
    for number in (n for n in range(TABLES) if n != 5):
        identifier = f"{namespace}.t{number:02}_changelog"
        qty = catalog.load_table(identifier).scan().to_arrow()["qty"].to_pylist()
        assert qty in ([], [number, number])  # committed whole, or not yet
        if qty:
            landed.add(identifier)
    assert landed  # the others in flight beside the failed one ended and landed
    assert set(reported) == landed
