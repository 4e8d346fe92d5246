"""Ingest's Prometheus metrics, scraped over HTTP from a pipeline that bootstrapped and streamed:
per table its rows, commits and their durations, error rows, watermark and lag, bootstrap rows;
per process whether it is active."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import orders_pipeline, run_to_end
from tests.prometheus import Labels, labels, scrape
from tests.runners import MakeRunner
from tidemark.app.pipeline import Pipeline
from tidemark.metrics import IngestMetrics, MetricsServer, sample, serve
from tidemark.source import BinlogPosition, current_position
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


@pytest.fixture
def metrics_server() -> Iterator[MetricsServer]:
    server = serve(0)
    yield server
    server.close()


def test_a_pipelines_tables_and_process_are_measured(
    metrics_server: MetricsServer,
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    admin_connection: Connection,
    source_database: str,
    namespace: str,
    make_runner: MakeRunner,
    tmp_path: Path,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, made DATE NOT NULL)")
        cursor.execute("INSERT INTO orders VALUES (1, '2026-01-01'), (2, '2026-01-02')")
    pipeline = Pipeline.open(
        orders_pipeline(
            tmp_path,
            source,
            endpoints.catalog,
            database=source_database,
            namespace=namespace,
            server_id=server_id,
        )
    )
    connection = pipeline.config.source.connection
    pipeline.ingest(StopWhen(until_position=current_position(connection)))
    with admin_connection.cursor() as cursor:
        cursor.execute("SET SESSION sql_mode = 'ALLOW_INVALID_DATES'")
        cursor.execute("INSERT INTO orders VALUES (3, '2026-01-03'), (4, '0000-00-00')")
        cursor.execute("INSERT INTO orders VALUES (5, '2026-01-05'), (6, '2026-01-06')")

    # the runner alone, as an active process runs it: its stream's metrics stay to be read
    runner = make_runner(pipeline.config)
    run_to_end(runner, source, server_id, max_seconds=60)

    samples = scrape(metrics_server.port)
    name = pipeline.name
    table = labels(pipeline=name, table=f"{namespace}.orders")

    def value(metric: str, of: Labels = table) -> float | None:
        return samples.get((metric, of))

    assert value("tidemark_ingest_rows_total") == 3  # streamed; the bootstrap's are below
    assert value("tidemark_ingest_row_events_total") == 2  # an INSERT of two rows is one event
    assert value("tidemark_ingest_error_rows_total") == 1  # the zero date, refused
    commits = value("tidemark_ingest_commits_total")
    assert commits is not None and commits >= 1
    assert value("tidemark_ingest_commit_duration_seconds_count") == commits
    watermark = value("tidemark_ingest_watermark_timestamp_seconds")
    lag = value("tidemark_ingest_watermark_lag_seconds")
    assert watermark is not None and watermark > 0 and lag is not None and 0 <= lag < 3600
    bootstrapped = labels(pipeline=name, table=f"{source_database}.orders")
    assert value("tidemark_ingest_bootstrap_rows", bootstrapped) == 2
    assert value("tidemark_ingest_active", labels(pipeline=name)) == 0  # its term ended
    behind = value("tidemark_ingest_seconds_behind_source", labels(pipeline=name))
    assert behind is not None and 0 <= behind < 600
    binlog_bytes = value("tidemark_ingest_binlog_bytes_total", labels(pipeline=name))
    assert binlog_bytes is not None and binlog_bytes > 100  # two INSERTs' events, at least

    # a term that ends takes its stream's lag along: a standby shows none growing
    pipeline.ingest(StopWhen(until_position=current_position(connection)))
    after_term = scrape(metrics_server.port)
    assert ("tidemark_ingest_watermark_lag_seconds", table) not in after_term
    assert ("tidemark_ingest_seconds_behind_source", labels(pipeline=name)) not in after_term
    assert after_term[("tidemark_ingest_rows_total", table)] == 3  # counters stay


def test_seconds_behind_the_source_count_from_the_newest_transaction_read_until_caught_up() -> None:
    now = [1_000.0]
    metrics = IngestMetrics("behind", clock=lambda: now[0])
    metrics.stream()

    metrics.read_transaction(990_000, BinlogPosition("mariadb-bin.000001", 400))
    first = sample("tidemark_ingest_seconds_behind_source", pipeline="behind")
    now[0] = 1_005.0
    later = sample("tidemark_ingest_seconds_behind_source", pipeline="behind")
    metrics.caught_up()
    caught_up = sample("tidemark_ingest_seconds_behind_source", pipeline="behind")

    assert (first, later, caught_up) == (10.0, 15.0, 0.0)


def test_binlog_bytes_follow_the_positions_read_across_files() -> None:
    metrics = IngestMetrics("bytes")

    metrics.reading_from(BinlogPosition("mysql-bin.000001", 1_000))
    for position in (
        BinlogPosition("mysql-bin.000001", 1_100),
        BinlogPosition("mysql-bin.000001", 1_600),
        BinlogPosition("mysql-bin.000002", 304),  # a new file: from its first event, at 4
    ):
        metrics.read_transaction(0, position)

    assert sample("tidemark_ingest_binlog_bytes_total", pipeline="bytes") == 100 + 500 + 300


def test_the_oldest_table_is_the_waiting_one_committed_least_far_not_the_newest_read() -> None:
    now = [1_000.0]
    metrics = IngestMetrics("oldest", clock=lambda: now[0])
    assert metrics.oldest(["shop.orders"]) is None  # nothing committed yet
    metrics.committed("shop.orders", 1, 1, 0.1, 999_000, 0)
    metrics.committed("shop.quiet", 1, 1, 0.1, 880_000, 0)  # its last rows wait for a slot
    metrics.committed("shop.idle", 0, 0, 0.1, 700_000, 0)  # nothing waits: complete as read

    now[0] = 1_010.0
    metrics.waiting(2)

    assert metrics.oldest(["shop.orders", "shop.quiet"]) == ("shop.quiet", 130.0)
    assert sample("tidemark_ingest_tables_waiting", pipeline="oldest") == 2
