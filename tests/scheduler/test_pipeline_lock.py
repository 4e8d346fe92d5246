"""A scheduler told to stop never takes its pipeline's lock (``PipelineLock.wait``), whether
the stop came before it asked or while it waited: `tidemark run` once took the lock on its way
out, after its ingest died while Spark was starting (issue 45)."""

from __future__ import annotations

import threading
import time

from bench.polling import wait_until
from scheduler.state import PipelineLock, StateStore
from tests.scheduler.harness import DEADLINE


def test_a_scheduler_told_to_stop_never_takes_the_lock(store: StateStore, unique_name: str) -> None:
    lock = PipelineLock(store, unique_name)
    stop = threading.Event()
    stop.set()

    assert not lock.wait(stop)
    assert not lock.wait(stop, deadline=time.monotonic())  # "asks once at least": not now

    assert store.holders(unique_name).active is None


def test_a_standby_told_to_stop_as_the_lock_frees_gives_it_back(
    store: StateStore, unique_name: str
) -> None:
    active, standby = PipelineLock(store, unique_name), PipelineLock(store, unique_name)
    active.acquire()
    stop = threading.Event()
    outcome: list[bool] = []
    waiting = threading.Thread(target=lambda: outcome.append(standby.wait(stop)))
    waiting.start()
    wait_until("the standby waits", lambda: store.holders(unique_name).standbys, DEADLINE)

    stop.set()
    active.release()  # most likely while the standby's request waits: it is granted then

    waiting.join(DEADLINE)
    assert outcome == [False]
    wait_until("the lock free", lambda: store.holders(unique_name).active is None, DEADLINE)
