"""What the scheduler tests share beyond the shop (``bench.workloads.shop_schedule``) and its
recording executor (``bench.workloads.recording_executor``): reports that make two windows due,
a clock the test moves, and the real service running in a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime

from bench.workloads.recording_executor import RecordingExecutor
from bench.workloads.shop_schedule import (
    ORDERS,
    USERS,
    consumer_settings,
    report,
    two_table_schedule,
)
from scheduler.gate import RunState
from scheduler.service import PipelineRun, ServiceSettings, run
from scheduler.state import StateStore

#: how long a scheduler test waits for its condition: with three test workers, Kafka JVMs of
#: other tests' own and Spark on two cores, a new consumer group has taken over 60 s to be
#: handed its partitions (two tests failed so in one full run; both pass alone in 5 s)
DEADLINE = 150.0


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
) -> Iterator[list[BaseException]]:
    """The real service (APScheduler, thread pool) running while the block runs; the block
    gets the list where an error that ended it would be (empty while it runs)."""
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
        yield errors
    finally:
        stop.set()
        thread.join(DEADLINE)
    assert not errors, errors
