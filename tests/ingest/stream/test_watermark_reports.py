"""Tables without changes get their watermark from a watermark report, not from a commit each.

One message on the report topic names every table complete to the watermark, with the snapshot
its completeness rests on; idle tables' empty commits come once an ``idle-commit-interval``
(10 minutes by default), so a thousand idle tables cost a message, not a thousand commits.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Consumer, TopicPartition
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from ingest.stream.runner import StopWhen
from tests.ingest.pipelines import write_pipeline
from tidemark.app.pipeline import Pipeline
from tidemark.contracts.reports import WatermarkReport, read_report
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

pytestmark = pytest.mark.every_source

QUIET_TABLES = 20


def test_idle_tables_watermarks_move_by_report_without_a_commit(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    orders: Connection,
    tmp_path: Path,
    server_id: int,
    unique_name: str,
) -> None:
    with orders.cursor() as cursor:
        for number in range(QUIET_TABLES):
            cursor.execute(f"CREATE TABLE quiet_{number:02} (id INT PRIMARY KEY)")
    path = write_pipeline(
        tmp_path / "p.yaml",
        source,
        endpoints.catalog,
        database=source_database,
        tables="\\.*",
        namespace=namespace,
        server_id=server_id,
        extra=(
            "tidemark:\n"
            "  reports:\n"
            f"    topic: {unique_name}\n"
            f"    kafka.bootstrap.servers: {endpoints.kafka.bootstrap_servers}\n"
            "  ingest:\n"
            "    watermark-report-interval: 1 s\n"
        ),
    )
    pipeline = Pipeline.open(path)
    pipeline.ingest(StopWhen(max_seconds=0))  # onboards: each table's first commit
    onboarded = _last_snapshots(catalog, namespace)
    with orders.cursor() as cursor:
        cursor.execute("INSERT INTO orders VALUES (1, 'kettle', 1)")
    before_run_ms = int(time.time() * 1000)

    def newest_past_the_start() -> WatermarkReport | None:
        reports = _watermark_reports(endpoints.kafka.bootstrap_servers, unique_name)
        newest = max(reports, key=lambda report: report.watermark_ms, default=None)
        return newest if newest is not None and newest.watermark_ms >= before_run_ms else None

    stop = threading.Event()
    run = threading.Thread(target=pipeline.ingest, args=(StopWhen(max_seconds=60, requested=stop),))
    run.start()
    try:
        # the quiet tables become complete to the source's clock (its binlog's seconds: it may
        # take the next second's event) on the snapshots onboarding made
        newest = wait_until("a watermark report past the run's start", newest_past_the_start, 30)
    finally:
        stop.set()
        run.join(60)
    assert newest is not None
    quiet = {name: mark.snapshot_id for name, mark in newest.tables.items() if "quiet_" in name}
    assert quiet == {name: onboarded[name] for name in onboarded if "quiet_" in name}
    # and orders on the commit that holds its new row
    orders_mark = newest.tables[f"{namespace}.orders_changelog"]
    assert orders_mark.last_order == 1
    assert orders_mark.snapshot_id != onboarded[f"{namespace}.orders_changelog"]


def _last_snapshots(catalog: Catalog, namespace: str) -> dict[str, int]:
    snapshots = {}
    for identifier in catalog.list_tables(namespace):
        name = ".".join(identifier)
        current = catalog.load_table(name).current_snapshot()
        assert current is not None
        snapshots[name] = current.snapshot_id
    return snapshots


def _watermark_reports(servers: str, topic: str) -> list[WatermarkReport]:
    """Every watermark report on ``topic``."""
    consumer = Consumer({"bootstrap.servers": servers, "group.id": topic})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if ends[p]])
        read = dict.fromkeys(ends, 0)
        found: list[WatermarkReport] = []
        deadline = time.monotonic() + 30
        while any(read[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=100, timeout=1):
                partition, offset = message.partition(), message.offset()
                assert message.error() is None and partition is not None and offset is not None
                read[partition] = offset + 1
                report = read_report(message.value() or b"")
                if isinstance(report, WatermarkReport):
                    found.append(report)
        return found
    finally:
        consumer.close()
