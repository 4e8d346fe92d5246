"""The tables of one flush are committed several at a time (``IngestSettings.commit_threads``):
each gets its rows once, and a table whose commit fails neither hides the others' commits nor
their reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from ingest.launch import build_runner
from ingest.settings import IngestSettings
from tests.ingest.pipelines import run_to_end, write_pipeline
from tidemark.config import load_pipeline
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.stack.endpoints import StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

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


def test_one_flush_commits_every_table_once_and_reports_each_even_when_one_fails(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    twelve_tables: Connection,
    tmp_path: Path,
    server_id: int,
) -> None:
    config = load_pipeline(
        write_pipeline(
            tmp_path / "p.yaml",
            endpoints,
            database=source_database,
            tables="t\\d+",
            namespace=namespace,
            server_id=server_id,
        )
    )
    reports = Reports()
    settings = IngestSettings(commit_threads=4, flush_interval_seconds=3600.0)
    runner = build_runner(config, catalog, reports, settings)
    with twelve_tables.cursor() as cursor:  # one transaction: one flush at the end
        for number in range(TABLES):
            cursor.execute(f"INSERT INTO t{number:02} VALUES (1, {number}), (2, {number})")
    twelve_tables.commit()
    catalog.drop_table(f"{namespace}.t05_changelog")  # its commit cannot land

    with pytest.raises(NoSuchTableError):
        run_to_end(runner, endpoints, server_id, max_seconds=120)

    others = {f"{namespace}.t{n:02}_changelog": n for n in range(TABLES) if n != 5}
    for identifier, number in others.items():
        rows = catalog.load_table(identifier).scan().to_arrow()
        assert rows["qty"].to_pylist() == [number, number]
    assert sorted(report.table for report in reports.commits) == sorted(others)
