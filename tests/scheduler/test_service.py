"""The scheduler against the real Kafka and PostgreSQL: each window fires once its inputs are
complete, exactly once, through crashes, failures and redelivered reports."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from bench.polling import wait_until
from bench.workloads.recording_executor import RecordingExecutor, dumps_state
from bench.workloads.shop_schedule import (
    FIVE,
    ORDERS,
    USERS,
    at,
    consumer_settings,
    ms,
    publish,
    report,
    sink,
    two_table_schedule,
    watermark_report,
)
from scheduler.engine import EngineSettings, WindowEngine
from scheduler.gate import RunState, TaskSpec, job_task, mirror_task
from scheduler.reports_consumer import ReportBatch, ReportsConsumer
from scheduler.service import PipelineRun, run
from scheduler.spec import PipelineSchedule
from scheduler.state import StateMissingError, StateSettings, StateStore
from scheduler.status import TaskCondition, describe
from tests.scheduler.harness import (
    DEADLINE,
    EXPECTED,
    REPORTS,
    Clock,
    all_succeeded,
    run_in_thread,
    serving,
)
from tidemark.contracts.instance import State
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.errors import TerminalError
from tidemark.metrics import sample
from tidemark.outages import Dependency, Outage
from tidemark.stack.kafka import Kafka
from tidemark.stack.process import wait_for
from tidemark.windows import Window


class CountingSource:
    """The real consumer, counting what Kafka delivers before the store deduplicates it."""

    def __init__(self, consumer: ReportsConsumer) -> None:
        self.consumer = consumer
        self.delivered = 0

    def poll(self, max_messages: int = 500, timeout: float = 0.5) -> ReportBatch:
        batch = self.consumer.poll(max_messages, timeout)
        self.delivered += len(batch)
        return batch

    def commit(self, batch: ReportBatch) -> None:
        self.consumer.commit(batch)


@pytest.fixture
def consumer(servers: str, reports_topic: str, unique_name: str) -> Iterator[ReportsConsumer]:
    consumer = ReportsConsumer(consumer_settings(servers, reports_topic, unique_name))
    yield consumer
    consumer.close()


def serve_until(
    condition: Callable[[], bool],
    store: StateStore,
    executor: RecordingExecutor,
    servers: str,
    topic: str,
    pipeline: str,
) -> None:
    """Run the real service until ``condition`` holds, then stop it."""
    with serving(store, executor, servers, topic, pipeline):
        assert wait_for(condition, timeout=DEADLINE), executor.effects()


def tick_until(engine: WindowEngine, condition: Callable[[], bool]) -> None:
    """Tick (Kafka needs a moment to hand the group its partitions) until ``condition``."""
    assert wait_for(lambda: (engine.tick(), condition())[1], timeout=DEADLINE)


@dataclass(frozen=True)
class Scheduling:
    """The real service on the test's topic and state, with a recording executor."""

    store: StateStore
    state: StateSettings
    servers: str
    topic: str
    pipeline: str

    def cuts_once_all_succeeded(
        self, messages: Sequence[CommitReport | WatermarkReport]
    ) -> dict[tuple[str, str], int | None]:
        """Publish ``messages``, serve until every expected window succeeded; each window's
        cut (``up_to_order``) by task and window end (``HH:MM``)."""
        executor = RecordingExecutor(self.state)
        publish(self.servers, self.topic, messages)
        serve_until(
            all_succeeded(self.store, self.pipeline),
            self.store,
            executor,
            self.servers,
            self.topic,
            self.pipeline,
        )
        return {(c.task, c.window_end.strftime("%H:%M")): c.up_to_order for c in executor.calls()}


def test_reports_for_two_tables_fire_exactly_the_expected_windows_once(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    publish(servers, reports_topic, REPORTS)

    serve_until(
        all_succeeded(store, unique_name), store, executor, servers, reports_topic, unique_name
    )

    calls = executor.calls()
    assert sorted((c.task, c.window_end.strftime("%H:%M")) for c in calls) == EXPECTED
    merges = {(c.task, c.window_end.strftime("%H:%M")): c.up_to_order for c in calls}
    # each merge stops at the first commit that completes its window
    assert merges["mirror:shop.orders", "10:05"] == 20
    assert merges["mirror:shop.orders", "10:10"] == 30
    assert merges["mirror:shop.users", "10:05"] == 5
    assert merges["mirror:shop.users", "10:10"] == 5
    # the job's SQL ran on mirrors merged exactly to its window's end
    cuts = {c.window_end.strftime("%H:%M"): c.cut for c in calls if c.task == "job:gmv"}
    assert cuts == {
        "10:05": "shop.orders=10:05,shop.users=10:05",
        "10:10": "shop.orders=10:10,shop.users=10:10",
    }
    assert store.report_count("shop.orders_changelog") == 3


def test_a_watermark_report_moves_an_idle_tables_windows_without_a_commit(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    # users commits once at 10:02 and then only ingest's watermark reports speak for it; the
    # first names a snapshot of users no commit report announced, which must move nothing
    users = f"{USERS}_changelog"
    commits = [r for r in REPORTS if r.table != users or r.snapshot_id == 1]
    marks = [
        watermark_report("10:04", shop_users=(99, 7)),
        watermark_report("10:10:00", shop_users=(1, 5)),
    ]
    scheduling = Scheduling(store, state_settings, servers, reports_topic, unique_name)

    merges = scheduling.cuts_once_all_succeeded([*commits, *marks])

    assert sorted(merges) == EXPECTED
    assert merges["mirror:shop.users", "10:05"] == 5
    assert merges["mirror:shop.users", "10:10"] == 5
    assert store.report_count(users) == 1
    assert store.watermarks([users]) == {users: ms("10:10:00")}  # what status shows


def test_a_table_bootstrapped_and_then_idle_starts_its_windows_from_its_first_mark(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    # users' only commit is its bootstrap's, with no watermark (it promises nothing yet); the
    # watermark reports that follow must start its windows at the first of them, not chase
    # each newer one
    users = f"{USERS}_changelog"
    bootstrap = report(USERS, 1, "10:02", 5).model_copy(update={"watermark_ms": 0})
    commits = [*(r for r in REPORTS if r.table != users), bootstrap]
    marks = [watermark_report(clock, shop_users=(1, 5)) for clock in ("10:02", "10:06", "10:10:00")]
    scheduling = Scheduling(store, state_settings, servers, reports_topic, unique_name)

    merges = scheduling.cuts_once_all_succeeded([*commits, *marks])

    assert sorted(merges) == EXPECTED
    assert merges["mirror:shop.users", "10:05"] == 5


def test_a_scheduler_killed_inside_a_window_completes_each_window_once_after_restart(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    publish(servers, reports_topic, REPORTS)
    args = {
        "state": dumps_state(state_settings),
        "servers": servers,
        "topic": reports_topic,
        "group": unique_name,
        "pipeline": unique_name,
        "kill_task": "mirror:shop.orders",
        "kill_end": at("10:10").isoformat(),
    }
    crashed = subprocess.run(
        [sys.executable, "-m", "tests.scheduler.crash_scheduler", json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )
    assert crashed.returncode == -9, crashed.stderr[-3000:]
    killed = store.runs(unique_name, mirror_task(ORDERS))[-1]
    # the merge took effect, but the scheduler died before recording it
    assert (killed.window.end, killed.state) == (at("10:10"), RunState.RUNNING)
    assert ("mirror:shop.orders", "10:10") in executor.effects()

    serve_until(
        all_succeeded(store, unique_name), store, executor, servers, reports_topic, unique_name
    )

    calls = Counter((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls())
    assert calls.pop(("mirror:shop.orders", "10:10")) == 2  # run again: the merge is idempotent
    assert set(calls.values()) == {1}, calls
    assert executor.effects() == EXPECTED


def test_kafka_restarted_mid_stream_loses_no_window(
    store: StateStore,
    state_settings: StateSettings,
    own_kafka: Kafka,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    servers = own_kafka.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(unique_name, num_partitions=3)])[unique_name].result(30)
    executor = RecordingExecutor(state_settings)
    first_windows = [r for r in REPORTS if r.snapshot_id <= 2]  # complete to 10:05
    publish(servers, unique_name, first_windows)

    with serving(store, executor, servers, unique_name, unique_name):
        assert wait_for(lambda: len(executor.effects()) == 3, timeout=DEADLINE)
        own_kafka.down()
        with caplog.at_level(logging.WARNING, logger="scheduler.reports_consumer"):
            # librdkafka reports the lost broker through the consumer's logger
            assert wait_for(
                lambda: any(r.name == "scheduler.reports_consumer" for r in caplog.records),
                timeout=DEADLINE,
            )
        own_kafka.up()
        publish(servers, unique_name, [r for r in REPORTS if r.snapshot_id > 2])
        assert wait_for(all_succeeded(store, unique_name), timeout=DEADLINE)

    calls = sorted((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls())
    assert calls == EXPECTED


def test_a_failing_job_retries_with_backoff_then_holds_its_later_windows(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = RecordingExecutor(state_settings, fail=["job:gmv"])
    schedule = two_table_schedule(unique_name, job_retries=1, job_retry_delay=timedelta(minutes=1))
    clock = Clock(at("10:20"))
    engine = WindowEngine(schedule, store, consumer, executor, clock=clock)
    publish(servers, reports_topic, REPORTS)
    gmv = job_task("gmv")

    tick_until(engine, lambda: len(store.runs(unique_name, gmv)) == 1)
    (first,) = store.runs(unique_name, gmv)
    assert (first.state, first.attempts, first.retry_at) == (
        RunState.FAILED,
        1,
        at("10:21"),
    )
    engine.tick()
    engine.tick()
    assert [c.task for c in executor.calls()].count("job:gmv") == 1  # not before 10:21

    clock.now = at("10:21")
    with caplog.at_level(logging.ERROR):
        engine.tick()
    (held,) = store.runs(unique_name, gmv)
    assert (held.window.end, held.state, held.attempts, held.held) == (
        at("10:05"),
        RunState.FAILED,
        2,
        True,
    )
    assert any(
        "ALERT: job:gmv window" in r.getMessage()
        and "held" in r.getMessage()
        and "job:gmv was told to fail" in r.getMessage()
        for r in caplog.records
    )

    clock.now = at("11:30")
    engine.tick()
    ran = {(c.task, c.window_end.strftime("%H:%M")) for c in executor.calls()}
    # neither the job's next window nor the mirrors it needs at 10:05 moved on
    assert ran == {
        ("job:gmv", "10:05"),
        ("mirror:shop.orders", "10:05"),
        ("mirror:shop.users", "10:05"),
    }
    labels = {"pipeline": unique_name, "task": "job:gmv"}
    assert sample("tidemark_scheduler_windows_total", **labels, outcome="failed") == 1
    assert sample("tidemark_scheduler_windows_total", **labels, outcome="held") == 1
    assert sample("tidemark_scheduler_windows_held", **labels) == 1
    rows = {str(row.task): row for row in describe(schedule, store, clock.now)}
    assert rows["job:gmv"].condition is TaskCondition.HELD
    assert "held after 2 failed attempt(s): RuntimeError: job:gmv was told to fail" == (
        rows["job:gmv"].reason
    )
    assert rows["mirror:shop.orders"].reason.startswith("waiting for job:gmv to finish")

    executor.stop_failing()
    assert store.release(unique_name, gmv, clock.now) == Window(at("10:00"), at("10:05"))
    tick_until(engine, all_succeeded(store, unique_name))
    assert executor.effects() == EXPECTED
    assert sample("tidemark_scheduler_windows_held", **labels) == 0
    assert sample("tidemark_scheduler_windows_total", **labels, outcome="succeeded") == 2
    newest = sample("tidemark_scheduler_last_window_end_timestamp_seconds", **labels)
    assert newest == at("10:10").timestamp()
    # the 10:05 and 10:10 windows finished at 11:30 by the scheduler's clock
    assert sample("tidemark_scheduler_window_delay_seconds_sum", **labels) == (85 + 80) * 60


def test_a_window_failing_while_the_lake_is_down_is_retried_uncounted_and_never_held(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = RecordingExecutor(state_settings, fail=["job:gmv"])
    executor.down = Outage(Dependency.CATALOG, "connection refused")
    schedule = two_table_schedule(unique_name, job_retries=1, job_retry_delay=timedelta(minutes=1))
    clock = Clock(at("10:20"))
    engine = WindowEngine(schedule, store, consumer, executor, clock=clock)
    publish(servers, reports_topic, REPORTS)
    gmv = job_task("gmv")

    with caplog.at_level(logging.INFO, "scheduler.engine"):
        for _ in range(40):  # ten minutes of an outage: far more failures than retries
            engine.tick()
            clock.now += timedelta(seconds=15)
        (waiting,) = store.runs(unique_name, gmv)
        assert (waiting.state, waiting.attempts, waiting.held) == (RunState.FAILED, 0, False)
        assert [c.task for c in executor.calls()].count("job:gmv") > 5

        executor.down = None
        executor.stop_failing()
        clock.now += timedelta(seconds=30)  # the longest wait between retries
        tick_until(engine, all_succeeded(store, unique_name))
    assert executor.effects() == EXPECTED
    said = [r.getMessage() for r in caplog.records if r.name == "scheduler.engine"]
    outage = [line for line in said if "unavailable" in line or "is back" in line]
    assert outage[0] == (
        "The catalog is unavailable (connection refused): windows wait and retry, without "
        "counting attempts"
    )
    assert outage[-1].startswith("The catalog is back after ")
    reminders = outage[1:-1]
    assert len(reminders) <= 10  # once a minute at most
    assert all(line.startswith("Still waiting for the catalog") for line in reminders)
    labels = {"pipeline": unique_name, "task": "job:gmv"}
    assert sample("tidemark_scheduler_windows_total", **labels, outcome="failed") is None
    assert sample("tidemark_scheduler_windows_held", **labels) in (None, 0)


def test_reports_every_task_has_passed_are_pruned_and_later_windows_still_fire(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    engine = WindowEngine(
        two_table_schedule(unique_name), store, consumer, executor, clock=Clock(at("10:20"))
    )
    publish(servers, reports_topic, REPORTS[:1])
    tick_until(engine, lambda: store.report_count("shop.orders_changelog") == 1)
    assert engine.prune_reports() == 0  # no task has succeeded a window yet
    publish(servers, reports_topic, REPORTS[1:])
    tick_until(engine, all_succeeded(store, unique_name))

    # every task is done to 10:10: of the reports before it, each table keeps its newest
    assert engine.prune_reports() == 2
    assert store.report_count("shop.orders_changelog") == 2  # 10:06, 10:11:30
    assert store.report_count("shop.users_changelog") == 2  # 10:07, 10:10
    publish(servers, reports_topic, [report(ORDERS, 4, "10:16", 40), report(USERS, 4, "10:15", 5)])
    tick_until(engine, lambda: all_succeeded_to(store, unique_name, at("10:15")))


def all_succeeded_to(store: StateStore, pipeline: str, end: datetime) -> bool:
    runs = [run for run in store.runs(pipeline) if run.window.end == end]
    return len(runs) == 3 and all(run.state is RunState.SUCCEEDED for run in runs)


def in_(pool: ThreadPoolExecutor) -> Callable[[Callable[[], None]], None]:
    """A ``submit`` that runs windows in ``pool``, as the service's thread pool does."""

    def submit(run: Callable[[], None]) -> None:
        pool.submit(run)

    return submit


class BlockingMaintenance(RecordingExecutor):
    """Records like ``RecordingExecutor``; its maintenance holds until the test lets it end."""

    def __init__(self, state: StateSettings) -> None:
        super().__init__(state)
        self.maintaining = threading.Event()
        self.finish = threading.Event()

    def maintain(self, sink_table: str, keep_from: int | None = None) -> object:
        super().maintain(sink_table, keep_from)
        self.maintaining.set()
        self.finish.wait(DEADLINE)
        return None


def test_maintenance_runs_on_its_interval_and_no_window_of_its_table_starts_meanwhile(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = BlockingMaintenance(state_settings)
    schedule = replace(two_table_schedule(unique_name), maintenance_interval=timedelta(minutes=30))
    clock = Clock(at("10:20"))
    pool = ThreadPoolExecutor(4)
    engine = WindowEngine(schedule, store, consumer, executor, clock=clock, submit=in_(pool))
    publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id <= 2])  # to 10:05
    tick_until(engine, lambda: len(executor.effects()) == 3)
    assert not [c for c in executor.calls() if c.task.startswith("maintain:")]  # 10:20 + 30 min

    clock.now = at("10:50")
    engine.tick()
    assert executor.maintaining.wait(DEADLINE)
    publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id > 2])  # to 10:10
    tick_until(engine, lambda: store.report_count("shop.orders_changelog") == 3)
    decision = engine.tick()

    # the 10:10 merges are due, but each mirror's table is being maintained
    assert set(decision.running) == {mirror_task(ORDERS), mirror_task(USERS)}
    assert ("mirror:shop.orders", "10:10") not in executor.effects()
    executor.finish.set()
    tick_until(engine, all_succeeded(store, unique_name))
    pool.shutdown(wait=True)
    maintained = sorted(c.task for c in executor.calls() if c.task.startswith("maintain:"))
    assert maintained == ["maintain:shop.orders", "maintain:shop.users"]
    assert executor.effects() == EXPECTED


def test_a_coalescing_job_behind_runs_its_missed_windows_once_over_their_span(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    schedule = two_table_schedule(unique_name, coalesce=True)
    engine = WindowEngine(schedule, store, consumer, executor, clock=Clock(at("10:20")))
    publish(servers, reports_topic, [r for r in REPORTS if r.snapshot_id <= 2])  # to 10:05
    tick_until(engine, all_succeeded_to_end(store, unique_name, at("10:05")))
    # the scheduler was down; meanwhile both tables became complete to 10:20
    later = [report(ORDERS, 4, "10:21", 40), report(USERS, 4, "10:20:00", 5, rows_added=0)]
    publish(servers, reports_topic, [*[r for r in REPORTS if r.snapshot_id > 2], *later])

    tick_until(engine, all_succeeded_to_end(store, unique_name, at("10:20")))

    assert [r.window for r in store.runs(unique_name, job_task("gmv"))] == [
        Window(at("10:00"), at("10:05")),
        Window(at("10:05"), at("10:20")),
    ]
    assert [c.window_end.strftime("%H:%M") for c in executor.calls() if c.task == "job:gmv"] == [
        "10:05",
        "10:20",
    ]


def test_a_job_that_asks_runs_the_windows_late_changes_belong_in_again_once_mirrors_hold_them(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    plain = TaskSpec(job_task("orders_count"), (ORDERS,), FIVE)
    schedule = two_table_schedule(unique_name, rerun_late_windows=True, more_jobs=[plain])
    engine = WindowEngine(schedule, store, consumer, executor, clock=Clock(at("10:30")))
    publish(servers, reports_topic, REPORTS)
    tick_until(engine, all_succeeded_to_end(store, unique_name, at("10:10")))
    # the source's clock stepped back: changes committed at 10:02:30 and 10:07:10 arrive after
    # the 10:10 windows ran, in the commit that takes orders to 10:16
    late = report(ORDERS, 4, "10:16", 40).model_copy(
        update={"late_rows": 2, "late_from_ms": ms("10:02:30"), "late_to_ms": ms("10:07:10")}
    )
    publish(servers, reports_topic, [late, report(USERS, 4, "10:15", 5, rows_added=0)])
    tick_until(engine, all_succeeded_to_end(store, unique_name, at("10:15")))
    publish(servers, reports_topic, [report(ORDERS, 5, "10:21", 50), report(USERS, 5, "10:20", 5)])
    tick_until(engine, all_succeeded_to_end(store, unique_name, at("10:20")))

    gmv = [(c.window_end.strftime("%H:%M"), c.cut) for c in executor.calls() if c.task == "job:gmv"]
    assert gmv == [
        ("10:05", "shop.orders=10:05,shop.users=10:05"),
        ("10:10", "shop.orders=10:10,shop.users=10:10"),
        # again, in order, with the mirrors merged to 10:15: they hold the late changes now
        ("10:05", "shop.orders=10:15,shop.users=10:15"),
        ("10:10", "shop.orders=10:15,shop.users=10:15"),
        ("10:15", "shop.orders=10:15,shop.users=10:15"),
        ("10:20", "shop.orders=10:20,shop.users=10:20"),  # each late change re-runs once
    ]
    counted = [
        c.window_end.strftime("%H:%M") for c in executor.calls() if c.task == "job:orders_count"
    ]
    assert counted == ["10:05", "10:10", "10:15", "10:20"]  # it did not ask
    labels = {"pipeline": unique_name, "task": "job:gmv"}
    assert sample("tidemark_scheduler_window_reruns_total", **labels) == 2


def all_succeeded_to_end(store: StateStore, pipeline: str, end: datetime) -> Callable[[], bool]:
    def check() -> bool:
        runs = store.runs(pipeline)
        tasks = {str(r.task) for r in runs if r.window.end == end}
        settled = all(r.state is RunState.SUCCEEDED for r in runs)
        return settled and {"mirror:shop.orders", "mirror:shop.users", "job:gmv"} <= tasks

    return check


def test_late_changes_ingest_reports_are_counted_per_table_and_logged(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = WindowEngine(
        two_table_schedule(unique_name),
        store,
        consumer,
        RecordingExecutor(state_settings),
        clock=Clock(at("10:20")),
    )
    late = [
        report(ORDERS, 1, "10:01", 10),
        report(ORDERS, 2, "10:06", 20).model_copy(update={"late_rows": 3}),
        report(ORDERS, 3, "10:11:30", 30).model_copy(update={"late_rows": 3}),
    ]
    publish(servers, reports_topic, late)

    with caplog.at_level(logging.WARNING, logger="scheduler.engine"):
        tick_until(engine, lambda: store.report_count("shop.orders_changelog") == 3)

    labels = {"pipeline": unique_name, "table": ORDERS}
    assert sample("tidemark_scheduler_late_rows", **labels) == 3
    warnings = [r.getMessage() for r in caplog.records if "late change" in r.getMessage()]
    assert warnings == [
        f"shop.orders received 3 late change(s) (3 in all): they committed before a watermark "
        f"already published, so windows of {unique_name} that ran before them miss them; the "
        "next window's merge applies them to the mirror"
    ]


def test_redelivered_and_republished_reports_are_recorded_once(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    publish(servers, reports_topic, REPORTS)
    seen: list[CommitReport] = []

    def read() -> bool:
        seen.extend(consumer.poll().reports)
        return len(seen) == len(REPORTS)

    assert wait_for(read, timeout=DEADLINE)
    assert store.record_reports(seen, at("10:20")) == 6
    consumer.close()  # without committing: the group reads them all again
    publish(servers, reports_topic, REPORTS[1:3])  # ingest republishing after a restart

    executor = RecordingExecutor(state_settings)
    source = CountingSource(ReportsConsumer(consumer_settings(servers, reports_topic, unique_name)))
    engine = WindowEngine(
        two_table_schedule(unique_name), store, source, executor, clock=Clock(at("10:20"))
    )
    try:
        tick_until(engine, all_succeeded(store, unique_name))
        tick_until(engine, lambda: source.delivered == 8)
    finally:
        source.consumer.close()

    assert store.report_count("shop.orders_changelog") == 3
    assert store.report_count("shop.users_changelog") == 3
    assert sorted((c.task, c.window_end.strftime("%H:%M")) for c in executor.calls()) == EXPECTED


def test_a_report_of_a_newer_major_version_stops_the_scheduler_with_the_fix(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    newer = json.loads(REPORTS[0].to_json()) | {"version": "3.0"}
    publish(servers, reports_topic, [json.dumps(newer).encode()])
    schedule = PipelineRun(
        two_table_schedule(unique_name), consumer_settings(servers, reports_topic, unique_name)
    )

    with pytest.raises(TerminalError, match="newer than this Tidemark understands"):
        run([schedule], store, RecordingExecutor(state_settings), max_seconds=DEADLINE)


def test_a_table_whose_watermark_stops_moving_raises_an_alert(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock(at("10:20"))
    engine = WindowEngine(
        two_table_schedule(unique_name),
        store,
        consumer,
        RecordingExecutor(state_settings),
        clock=clock,
        settings=EngineSettings(stall_after=timedelta(minutes=10)),
    )
    publish(servers, reports_topic, REPORTS)
    tick_until(engine, lambda: store.report_count("shop.users_changelog") == 3)
    assert engine.housekeeping() == []

    clock.now = at("10:31")
    publish(servers, reports_topic, [report(USERS, 4, "10:30", 5, rows_added=0)])
    tick_until(engine, lambda: store.report_count("shop.users_changelog") == 4)
    with caplog.at_level(logging.ERROR):
        stalls = engine.housekeeping()

    assert [s.table for s in stalls] == [ORDERS]
    assert any(
        "ALERT: the watermark of shop.orders has stayed at 2026-01-01T10:11:30" in r.getMessage()
        for r in caplog.records
    )


def test_status_before_any_scheduler_ran_says_so(state_settings: StateSettings) -> None:
    never_created = StateStore(state_settings)

    with pytest.raises(StateMissingError, match="no scheduler has run against this database"):
        describe(two_table_schedule("nobody"), never_created, at("10:00"))


def test_a_second_scheduler_of_the_same_pipeline_waits_as_a_standby_and_takes_over(
    store: StateStore,
    state_settings: StateSettings,
    servers: str,
    reports_topic: str,
    unique_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = RecordingExecutor(state_settings)
    schedule = PipelineRun(
        two_table_schedule(unique_name), consumer_settings(servers, reports_topic, unique_name)
    )
    publish(servers, reports_topic, REPORTS)
    stop = threading.Event()
    standby, errors = run_in_thread(
        lambda: run([schedule], store, executor, clock=Clock(at("10:20")), stop=stop)
    )
    try:
        with store.pipeline_lock(unique_name):  # the active scheduler, here
            holders = wait_until(
                "the standby waits", lambda: store.holders(unique_name).standbys, DEADLINE
            )
            assert [(h.pid, h.state) for h in holders] == [(os.getpid(), State.STANDBY)]
            assert store.holders(unique_name).active is not None
            wait_until("it says for whom", lambda: "Waiting as a standby" in caplog.text, 10)
            assert executor.calls() == []  # nothing runs while it waits
        wait_until("the standby took over", all_succeeded(store, unique_name), DEADLINE)
    finally:
        stop.set()
        standby.join(DEADLINE)
    assert not errors
    assert executor.effects() == EXPECTED
    active = store.holders(unique_name).active
    assert active is None  # released when it stopped


def test_a_table_onboarded_while_running_is_scheduled_from_its_first_reports(
    store: StateStore,
    state_settings: StateSettings,
    consumer: ReportsConsumer,
    servers: str,
    reports_topic: str,
    unique_name: str,
) -> None:
    executor = RecordingExecutor(state_settings)
    started_with = PipelineSchedule.build(unique_name, [sink(ORDERS)])
    plans: list[str] = []

    def replan() -> PipelineSchedule:
        plans.append("planned")  # the source now has shop.users too
        return PipelineSchedule.build(unique_name, [sink(ORDERS), sink(USERS)])

    engine = WindowEngine(
        started_with, store, consumer, executor, clock=Clock(at("10:20")), replan=replan
    )
    other_pipeline = [report("other.events", n, "10:09", 3) for n in (1, 2)]
    publish(servers, reports_topic, [*REPORTS, *other_pipeline])

    tick_until(
        engine,
        lambda: (
            {(c.task, c.window_end.strftime("%H:%M")) for c in executor.calls()}
            >= {("mirror:shop.users", "10:05"), ("mirror:shop.users", "10:10")}
        ),
    )

    assert store.report_count("shop.users_changelog") == 3  # none lost to the replan
    assert store.report_count("other.events_changelog") == 0
    assert len(plans) <= 2  # users (and other.events, if alone in a batch); then never again
    engine.tick()
    assert len(plans) <= 2
