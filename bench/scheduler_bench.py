"""Scheduler benchmark: from the commit report that completes a window to its jobs starting.

Runs the real service (APScheduler, Kafka consumer group, PostgreSQL state) against the local
stack with an executor that only notes the time it is called, so the figures are the
scheduler's own share of issue #8's target (p95 under 30 s from window end to job done): the
Spark merge and SQL times come on top. For each of ``--windows`` windows it publishes one
report whose watermark completes the window, and waits until the job of that window is called.

``python -m bench.scheduler_bench [--windows 30]``; prints a markdown table. Figures, not
assertions: nothing here fails on a slow machine.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.report import Figure, write_figures
from scheduler.gate import TaskSpec, job_task
from scheduler.reports_consumer import ConsumerSettings
from scheduler.service import PipelineRun, ServiceSettings, run
from scheduler.spec import PipelineSchedule
from scheduler.state import StateSettings, StateStore
from tidemark.config.plan import SinkTable
from tidemark.contracts.reports import CommitReport
from tidemark.outages import Outage
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack
from tidemark.windows import Window

FIVE = timedelta(minutes=5)
START = datetime(2026, 1, 1, tzinfo=UTC)


class TimingExecutor:
    """Notes when each window's merge and job are called (monotonic seconds)."""

    def __init__(self) -> None:
        self.merges: dict[datetime, float] = {}
        self.jobs: dict[datetime, float] = {}
        self.job_called = threading.Condition()

    def merge_mirror(self, sink_table: str, window: Window, up_to_order: int | None) -> object:
        self.merges[window.end] = time.monotonic()
        return None

    def maintain(self, sink_table: str) -> object:
        return None

    def outage(self) -> Outage | None:
        return None

    def run_job(
        self,
        job_name: str,
        window: Window,
        snapshots: Mapping[str, int] | None = None,
        since: Mapping[str, int] | None = None,
    ) -> object:
        with self.job_called:
            self.jobs[window.end] = time.monotonic()
            self.job_called.notify_all()
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--windows", type=int, default=30)
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    endpoints = Stack(StackSettings.from_env()).endpoints()
    name = f"bench_scheduler_{uuid.uuid4().hex[:8]}"
    servers = endpoints.kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(name, num_partitions=3)])[name].result(timeout=30)
    store = StateStore(StateSettings.from_catalog(endpoints.catalog.properties(), schema=name))
    sink = SinkTable("bench.t", ("id",), "primary key", ("bench.t",), "bench.t", FIVE, "bench.t_cl")
    schedule = PipelineSchedule.build(name, [sink], [TaskSpec(job_task("j"), ("bench.t",), FIVE)])
    executor = TimingExecutor()
    stop = threading.Event()
    service = threading.Thread(
        target=run,
        args=(
            [PipelineRun(schedule, ConsumerSettings(name, {"bootstrap.servers": servers}, name))],
            store,
            executor,
        ),
        kwargs={"settings": ServiceSettings(max_workers=2), "stop": stop},
        daemon=True,
    )
    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True})
    try:
        service.start()
        published = publish_windows(producer, name, executor, args.windows)
    finally:
        stop.set()
        service.join(60)
        store.drop()
        admin.delete_topics([name])[name].result(timeout=30)
    to_merge = [executor.merges[end] - t for end, t in published.items() if end in executor.merges]
    to_job = [executor.jobs[end] - t for end, t in published.items() if end in executor.jobs]
    sys.stdout.write(
        "| from report published to | n | p50 s | p95 s | max s |\n|---|---|---|---|---|\n"
        + row("mirror merge called", to_merge)
        + row("job called (after its merge)", to_job)
    )
    if args.figures:
        write_figures(args.figures, figures(to_merge, to_job))
    return 0


def figures(to_merge: list[float], to_job: list[float]) -> list[Figure]:
    """The scheduler's own share of issue #8's delay (no Spark)."""
    out = []
    for label, values in (("mirror merge called", to_merge), ("job called", to_job)):
        out += [
            Figure("scheduler", f"report published → {label}, p50", percentile(values, 50), "s"),
            Figure("scheduler", f"report published → {label}, p95", percentile(values, 95), "s"),
        ]
    return out


def percentile(values: list[float], p: int) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def publish_windows(
    producer: Producer, topic: str, executor: TimingExecutor, windows: int
) -> dict[datetime, float]:
    """One report per window, each completing it; the first only opens the table's history."""
    published: dict[datetime, float] = {}
    send(producer, topic, 0, START + timedelta(seconds=1))
    for n in range(1, windows + 1):
        end = START + n * FIVE
        published[end] = time.monotonic()
        send(producer, topic, n, end)
        with executor.job_called:
            if not executor.job_called.wait_for(functools.partial(_called, executor, end), 60):
                raise TimeoutError(f"the job of the window ending {end} was not called in 60 s")
    return published


def _called(executor: TimingExecutor, end: datetime) -> bool:
    return end in executor.jobs


def send(producer: Producer, topic: str, n: int, watermark: datetime) -> None:
    report = CommitReport(
        table="bench.t_cl",
        snapshot_id=n + 1,
        watermark_ms=int(watermark.timestamp() * 1000),
        position=f"bin.000001:{n}",
        rows_added=1,
        committed_at_ms=int(time.time() * 1000),
        last_order=n,
    )
    producer.produce(topic, key=report.table.encode(), value=report.to_json())
    producer.flush(30)


def row(label: str, values: list[float]) -> str:
    if not values:
        return f"| {label} | 0 | - | - | - |\n"
    return (
        f"| {label} | {len(values)} | {statistics.median(values):.2f} | "
        f"{percentile(values, 95):.2f} | {max(values):.2f} |\n"
    )


if __name__ == "__main__":
    sys.exit(main())
