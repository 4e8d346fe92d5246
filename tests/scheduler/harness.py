"""What the scheduler tests share: a two-table pipeline, reports on a real topic and the windows
they make due, an executor of our own that records its calls in PostgreSQL and fails when told
to, and the real service running in a thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg2
from confluent_kafka import Producer

from scheduler.gate import RunState, TaskSpec, job_task
from scheduler.reports_consumer import ConsumerSettings
from scheduler.service import PipelineRun, ServiceSettings, run
from scheduler.spec import PipelineSchedule
from scheduler.state import StateSettings, StateStore
from tidemark.config.plan import SinkTable
from tidemark.contracts.reports import CommitReport, TableMark, WatermarkReport
from tidemark.windows import Window

DEADLINE = 60.0
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


@dataclass(frozen=True)
class Call:
    task: str
    window_end: datetime
    up_to_order: int | None
    #: for a job: where each input mirror stood when its SQL ran ("shop.orders=10:05,...")
    cut: str | None


class RecordingExecutor:
    """Records every call and its effect in tables of the test's state schema.

    Like the real window jobs it is idempotent per window: a window whose effect is recorded
    does not record it again. ``fail`` names tasks ("job:gmv") whose every call raises.
    """

    def __init__(self, state: StateSettings, fail: Sequence[str] = ()) -> None:
        self._state = state
        self._fail = set(fail)
        with self._cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {state.schema}.calls (seq serial PRIMARY KEY, "
                "task text, window_end timestamptz, up_to_order bigint, cut text)"
            )
            cursor.execute(
                f"CREATE TABLE IF NOT EXISTS {state.schema}.effects (task text, "
                "window_end timestamptz, PRIMARY KEY (task, window_end))"
            )

    def stop_failing(self) -> None:
        self._fail.clear()

    def merge_mirror(self, sink_table: str, window: Window, up_to_order: int | None) -> object:
        self._call(f"mirror:{sink_table}", window, up_to_order, None)
        return None

    def run_job(self, job_name: str, window: Window) -> object:
        self._call(f"job:{job_name}", window, None, self._cut())
        return None

    def maintain(self, sink_table: str) -> object:
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.calls (task) VALUES (%s)",
                (f"maintain:{sink_table}",),
            )
        return None

    def calls(self) -> list[Call]:
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT task, window_end, up_to_order, cut FROM {self._state.schema}.calls "
                "ORDER BY seq"
            )
            return [Call(*row) for row in cursor.fetchall()]

    def effects(self) -> list[tuple[str, str]]:
        """(task, window end HH:MM) of every window that took effect, in task order."""
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT task, window_end FROM {self._state.schema}.effects "
                "ORDER BY task, window_end"
            )
            return [(task, end.strftime("%H:%M")) for task, end in cursor.fetchall()]

    def _call(self, task: str, window: Window, up_to_order: int | None, cut: str | None) -> None:
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.calls (task, window_end, up_to_order, cut) "
                "VALUES (%s, %s, %s, %s)",
                (task, window.end, up_to_order, cut),
            )
        if task in self._fail:
            raise RuntimeError(f"{task} was told to fail")
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {self._state.schema}.effects VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (task, window.end),
            )

    def _cut(self) -> str:
        """Where each mirror stands: the last window end it took effect for."""
        with self._cursor() as cursor:
            cursor.execute(
                f"SELECT task, max(window_end) FROM {self._state.schema}.effects "
                "WHERE task LIKE 'mirror:%%' GROUP BY task ORDER BY task"
            )
            return ",".join(
                f"{task.removeprefix('mirror:')}={end.strftime('%H:%M')}"
                for task, end in cursor.fetchall()
            )

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        params: dict[str, Any] = {**self._state.connection, "options": "-c TimeZone=UTC"}
        connection = psycopg2.connect(**params)
        try:
            with connection, connection.cursor() as cursor:
                yield cursor
        finally:
            connection.close()


def dumps_state(state: StateSettings) -> str:
    return json.dumps({"connection": dict(state.connection), "schema": state.schema})


def loads_state(text: str) -> StateSettings:
    raw = json.loads(text)
    return StateSettings(raw["connection"], raw["schema"])


#: orders complete to 10:11:30, users to 10:10:00: windows ending 10:05 and 10:10 are due.
#: users is quiet after its first commit: ingest's idle commits (no rows) move its watermark
REPORTS = [
    report(ORDERS, 1, "10:01", 10),
    report(ORDERS, 2, "10:06", 20),
    report(ORDERS, 3, "10:11:30", 30),
    report(USERS, 1, "10:02", 5),
    report(USERS, 2, "10:07", 5, rows_added=0),
    report(USERS, 3, "10:10:00", 5, rows_added=0),
]
EXPECTED = [
    ("job:gmv", "10:05"),
    ("job:gmv", "10:10"),
    ("mirror:shop.orders", "10:05"),
    ("mirror:shop.orders", "10:10"),
    ("mirror:shop.users", "10:05"),
    ("mirror:shop.users", "10:10"),
]


class Clock:
    """The scheduler's time, moved by the test."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def all_succeeded(store: StateStore, pipeline: str) -> Callable[[], bool]:
    def check() -> bool:
        runs = store.runs(pipeline)
        return len(runs) == len(EXPECTED) and all(r.state is RunState.SUCCEEDED for r in runs)

    return check


def run_in_thread(target: Callable[[], None]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            target()
        except BaseException as error:  # handed to the test thread
            errors.append(error)

    thread = threading.Thread(target=guarded, daemon=True)
    thread.start()
    return thread, errors


@contextmanager
def serving(
    store: StateStore, executor: RecordingExecutor, servers: str, topic: str, pipeline: str
) -> Iterator[None]:
    """The real service (APScheduler, thread pool) running while the block runs."""
    stop = threading.Event()
    settings = consumer_settings(servers, topic, pipeline)
    schedule = PipelineRun(
        two_table_schedule(pipeline),
        replace(settings, kafka={**settings.kafka, "reconnect.backoff.max.ms": "500"}),
    )
    thread, errors = run_in_thread(
        lambda: run([schedule], store, executor, settings=ServiceSettings(max_workers=2), stop=stop)
    )
    try:
        yield
    finally:
        stop.set()
        thread.join(DEADLINE)
    assert not errors, errors
