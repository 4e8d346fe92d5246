"""A shop of two tables, shop.orders and shop.users, with a job ``gmv`` reading both, as the
scheduler sees it: its schedule, and the reports its ingest would publish on a real topic, at
clock times of one day. For the takeover benchmark and the scheduler's tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from confluent_kafka import Producer

from scheduler.gate import TaskSpec, job_task
from scheduler.reports_consumer import ConsumerSettings
from scheduler.spec import PipelineSchedule
from tidemark.config.plan import SinkTable
from tidemark.contracts.reports import CommitReport, TableMark, WatermarkReport

FIVE = timedelta(minutes=5)
DAY = "2026-01-01"
ORDERS, USERS = "shop.orders", "shop.users"


def at(clock: str) -> datetime:
    return datetime.fromisoformat(f"{DAY}T{clock}").replace(tzinfo=UTC)


def ms(clock: str) -> int:
    return int(at(clock).timestamp() * 1000)


def sink(name: str) -> SinkTable:
    return SinkTable(name, ("id",), "primary key", (name,), name, FIVE, f"{name}_changelog")


def two_table_schedule(
    pipeline: str,
    *,
    job_retries: int = 2,
    job_retry_delay: timedelta = FIVE,
    coalesce: bool = False,
    rerun_late_windows: bool = False,
    more_jobs: Sequence[TaskSpec] = (),
) -> PipelineSchedule:
    """Mirrors of shop.orders and shop.users, and a five-minute job ``gmv`` reading both."""
    job = TaskSpec(
        job_task("gmv"),
        (ORDERS, USERS),
        FIVE,
        job_retries,
        job_retry_delay,
        coalesce=coalesce,
        rerun_late_windows=rerun_late_windows,
    )
    return PipelineSchedule.build(pipeline, [sink(ORDERS), sink(USERS)], [job, *more_jobs])


def report(
    table: str, snapshot_id: int, watermark: str, last_order: int, rows_added: int = 1
) -> CommitReport:
    """The report ingest would publish for a commit of ``table`` (a sink table's name)."""
    return CommitReport(
        table=f"{table}_changelog",
        snapshot_id=snapshot_id,
        watermark_ms=ms(watermark),
        position=f"mariadb-bin.000001:{snapshot_id}",
        rows_added=rows_added,
        committed_at_ms=ms(watermark),
        last_order=last_order,
    )


def watermark_report(watermark: str, **snapshots: tuple[int, int]) -> WatermarkReport:
    """The watermark report ingest would publish: ``snapshots`` maps a sink table's name
    (``shop_users`` for shop.users) to the snapshot id and last order of its last commit."""
    return WatermarkReport(
        source="127.0.0.1:3306",
        watermark_ms=ms(watermark),
        position="mariadb-bin.000001:999",
        published_at_ms=ms(watermark),
        tables={
            f"{name.replace('_', '.', 1)}_changelog": TableMark(
                snapshot_id=snapshot_id, last_order=last_order
            )
            for name, (snapshot_id, last_order) in snapshots.items()
        },
    )


def publish(
    servers: str, topic: str, reports: Sequence[CommitReport | WatermarkReport | bytes]
) -> None:
    """Produce ``reports`` keyed by table, as ingest does, and wait for the broker."""
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    for item in reports:
        if isinstance(item, CommitReport):
            producer.produce(topic, key=item.table.encode(), value=item.to_json())
        elif isinstance(item, WatermarkReport):
            producer.produce(topic, key=item.key.encode(), value=item.to_json())
        else:
            producer.produce(topic, key=b"shop.orders_changelog", value=item)
    assert producer.flush(30) == 0


def consumer_settings(servers: str, topic: str, group: str) -> ConsumerSettings:
    return ConsumerSettings(topic, {"bootstrap.servers": servers}, group)
