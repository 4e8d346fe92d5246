"""The scheduler of a Paimon pipeline against the real Kafka and PostgreSQL: each job window is
recorded with the snapshot each input is read at, runs (and runs again) at those snapshots,
re-runs windows late changes belong in, and tells snapshot expiry what it must keep."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from bench.workloads.shop_schedule import FIVE, ORDERS, USERS, at, consumer_settings, ms, publish
from scheduler.engine import WindowEngine
from scheduler.gate import RunState, TaskSpec, job_task
from scheduler.reports_consumer import ReportsConsumer
from scheduler.retention import snapshots_needed
from scheduler.spec import PipelineSchedule
from scheduler.state import StateStore
from tests.scheduler.harness import Clock
from tests.scheduler.test_service import tick_until
from tidemark.config.plan import SinkTable
from tidemark.contracts.reports import CommitReport, TableMark, WatermarkReport
from tidemark.outages import Outage
from tidemark.windows import Window

GMV = job_task("gmv")


@dataclass
class PinsExecutor:
    """Notes each job call with the snapshots it was given; fails the first ``failures``."""

    failures: int = 0
    calls: list[tuple[Window, dict[str, int]]] = field(default_factory=list)
    #: per job call, the snapshots its window's changes start after (None: by watermark)
    changes_since: list[dict[str, int] | None] = field(default_factory=list)
    #: each maintenance pass asked for: the table, and the snapshot it must keep from
    maintained: list[tuple[str, int | None]] = field(default_factory=list)

    def merge_mirror(self, sink_table: str, window: Window, up_to_order: int | None) -> object:
        raise AssertionError(f"a Paimon table has no mirror to merge: {sink_table}")

    def run_job(
        self,
        job_name: str,
        window: Window,
        snapshots: Mapping[str, int] | None = None,
        since: Mapping[str, int] | None = None,
    ) -> object:
        self.calls.append((window, dict(snapshots or {})))
        self.changes_since.append(None if since is None else dict(since))
        if len(self.calls) <= self.failures:
            raise RuntimeError("the job failed")
        return None

    def maintain(self, sink_table: str, keep_from: int | None = None) -> object:
        self.maintained.append((sink_table, keep_from))
        return None

    def outage(self) -> Outage | None:
        return None


def paimon_schedule(
    pipeline: str, *, rerun_late_windows: bool = False, maintenance: timedelta | None = None
) -> PipelineSchedule:
    """shop.orders and shop.users as Paimon tables (each its own mirror: no merge task), and
    the five-minute job gmv reading both at pinned snapshots."""
    sinks = [
        SinkTable(name, ("id",), "primary key", (name,), None, FIVE, name)
        for name in (ORDERS, USERS)
    ]
    job = TaskSpec(
        GMV,
        (ORDERS, USERS),
        FIVE,
        retries=2,
        retry_delay=timedelta(minutes=1),
        rerun_late_windows=rerun_late_windows,
        pins_snapshots=True,
    )
    return PipelineSchedule.build(pipeline, sinks, [job], maintenance_interval=maintenance)


def commit(
    table: str, snapshot_id: int, watermark: str, late_from: str | None = None
) -> CommitReport:
    """The report of a Paimon commit: the table is the sink table itself."""
    return CommitReport(
        table=table,
        snapshot_id=snapshot_id,
        watermark_ms=ms(watermark),
        position=f"mariadb-bin.000001:{snapshot_id}",
        rows_added=1,
        committed_at_ms=ms(watermark),
        last_order=snapshot_id,
        late_rows=1 if late_from else 0,
        late_from_ms=ms(late_from) if late_from else None,
        late_to_ms=ms(late_from) if late_from else None,
    )


def marks(watermark: str, **snapshots: int) -> WatermarkReport:
    """A watermark report: ``users=1`` takes shop.users' snapshot 1 to ``watermark``."""
    return WatermarkReport(
        source="127.0.0.1:3306",
        watermark_ms=ms(watermark),
        position="mariadb-bin.000001:999",
        published_at_ms=ms(watermark),
        tables={
            f"shop.{name}": TableMark(snapshot_id=snapshot_id, last_order=snapshot_id)
            for name, snapshot_id in snapshots.items()
        },
    )


@pytest.fixture
def consumer(servers: str, reports_topic: str, unique_name: str) -> Iterator[ReportsConsumer]:
    consumer = ReportsConsumer(consumer_settings(servers, reports_topic, unique_name))
    yield consumer
    consumer.close()


#: the reports that make both tables complete to 10:05: orders by its snapshot 2, users (idle)
#: by a watermark report over its snapshot 1; the window to 10:05 pins {orders: 2, users: 1}
FIRST_WINDOW_COMPLETE: list[CommitReport | WatermarkReport] = [
    commit(ORDERS, 1, "10:01"),
    commit(ORDERS, 2, "10:05:01"),
    commit(USERS, 1, "10:02"),
    marks("10:05:30", users=1),
]
#: snapshots committed after that window was pinned
NEWER = [commit(ORDERS, 3, "10:06"), commit(USERS, 2, "10:07")]


def test_a_window_is_pinned_when_recorded_and_run_again_at_the_same_snapshots(
    store: StateStore, consumer: ReportsConsumer, servers: str, reports_topic: str, unique_name: str
) -> None:
    schedule = paimon_schedule(unique_name)
    executor = PinsExecutor(failures=1)
    clock = Clock(at("10:06"))
    engine = WindowEngine(schedule, store, consumer, executor, clock=clock)
    publish(
        servers,
        reports_topic,
        FIRST_WINDOW_COMPLETE,
    )
    pinned = {ORDERS: 2, USERS: 1}

    tick_until(engine, lambda: len(executor.calls) == 1)
    (failed,) = store.runs(unique_name, GMV)
    assert (failed.window, failed.state, failed.snapshots) == (
        Window(at("10:00"), at("10:05")),
        RunState.FAILED,
        pinned,
    )
    # expiry must keep what it will re-read, and where its changes start: orders' first
    # snapshot complete to 10:00 is 1 (the snapshot before it, none: 1 itself)
    assert snapshots_needed(schedule, store) == {ORDERS: 1, USERS: 1}

    # newer snapshots arrive before the retry: it reads what the window was pinned to
    publish(servers, reports_topic, NEWER)
    clock.now = at("10:08")
    tick_until(engine, lambda: len(executor.calls) == 2)

    assert executor.calls == [(Window(at("10:00"), at("10:05")), pinned)] * 2
    (done,) = store.runs(unique_name, GMV)
    assert (done.state, done.snapshots) == (RunState.SUCCEEDED, pinned)
    # the next window reads its changes after what this one read: {orders: 2, users: 1}, and
    # the snapshots before the first complete to its start (orders 2 - 1, users 1)
    assert snapshots_needed(schedule, store) == {ORDERS: 1, USERS: 1}


def test_a_late_change_read_by_a_window_re_runs_the_window_it_belongs_in(
    store: StateStore, consumer: ReportsConsumer, servers: str, reports_topic: str, unique_name: str
) -> None:
    schedule = paimon_schedule(unique_name, rerun_late_windows=True)
    executor = PinsExecutor()
    clock = Clock(at("10:06"))
    engine = WindowEngine(schedule, store, consumer, executor, clock=clock)
    publish(
        servers,
        reports_topic,
        [
            commit(ORDERS, 1, "10:01"),
            commit(USERS, 1, "10:01"),
            commit(ORDERS, 2, "10:05:01"),
            commit(USERS, 2, "10:05:01"),
        ],
    )
    tick_until(engine, lambda: len(executor.calls) == 1)
    # a change committed at 10:03 by the source's clock arrives after 10:05 was published
    publish(
        servers,
        reports_topic,
        [commit(ORDERS, 3, "10:10:01", late_from="10:03"), commit(USERS, 3, "10:10:01")],
    )
    clock.now = at("10:11")
    tick_until(engine, lambda: len(executor.calls) == 3)

    at_10_10 = {ORDERS: 3, USERS: 3}
    assert executor.calls == [
        (Window(at("10:00"), at("10:05")), {ORDERS: 2, USERS: 2}),
        (Window(at("10:00"), at("10:05")), at_10_10),  # again, with the late change
        (Window(at("10:05"), at("10:10")), at_10_10),
    ]
    # its changes start where the window before read: a re-run's start at the window's start
    assert executor.changes_since == [None, None, {ORDERS: 2, USERS: 2}]


def test_maintenance_of_a_paimon_table_keeps_the_snapshots_a_failed_window_will_read_again(
    store: StateStore, consumer: ReportsConsumer, servers: str, reports_topic: str, unique_name: str
) -> None:
    schedule = paimon_schedule(unique_name, maintenance=timedelta(minutes=1))
    executor = PinsExecutor(failures=1)
    clock = Clock(at("10:06"))
    engine = WindowEngine(schedule, store, consumer, executor, clock=clock)
    publish(
        servers,
        reports_topic,
        FIRST_WINDOW_COMPLETE,
    )
    tick_until(engine, lambda: len(executor.calls) == 1)  # the window failed: pinned at 2, 1
    publish(servers, reports_topic, NEWER)

    clock.now = at("10:07:30")  # maintenance is due (a minute after the engine started)
    engine.consume()
    engine.start_maintenance()

    # the failed window's pins (2, 1), and the snapshot before orders' first complete to 10:00
    assert sorted(executor.maintained) == [(ORDERS, 1), (USERS, 1)]
