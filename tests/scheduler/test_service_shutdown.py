"""Stopping the scheduler while a tick is submitting a window must not hang it: APScheduler's
shutdown holds its job store lock while it waits for the running jobs."""

from __future__ import annotations

import threading
from typing import cast

import pytest
from apscheduler.schedulers.base import STATE_STOPPED

from scheduler.engine import WindowEngine
from scheduler.service import SchedulerService, ServiceSettings
from scheduler.state import PipelineLockedError
from tidemark.stack.process import wait_for


class SubmittingWhileStopping:
    """An engine whose tick, once the service has begun to shut down, submits a window."""

    pipeline = "shutdown-race"

    def __init__(self, service: SchedulerService, stop: threading.Event) -> None:
        self._service = service
        self._stop = stop
        self.ticking = threading.Event()
        self.submitted = threading.Event()

    def tick(self) -> None:
        self.ticking.set()
        if not self._stop.wait(30):
            return
        wait_for(lambda: self._service._aps.state == STATE_STOPPED, timeout=30)
        self._service.submit(lambda: None)
        self.submitted.set()

    def housekeeping(self) -> None:
        pass


def test_a_window_submitted_while_the_scheduler_stops_does_not_hang_the_shutdown() -> None:
    service = SchedulerService()
    stop = threading.Event()
    engine = SubmittingWhileStopping(service, stop)
    running = threading.Thread(
        target=lambda: service.run([cast(WindowEngine, engine)], stop=stop), daemon=True
    )
    running.start()
    assert engine.ticking.wait(30)

    stop.set()
    running.join(60)

    assert not running.is_alive(), "the scheduler hung on its way out"
    assert engine.submitted.is_set()  # the tick got its answer: nothing runs after the stop


class QueuingWindows:
    """An engine whose first tick submits many windows to a pool of one: the first runs until
    released, the others wait in the pool's queue."""

    pipeline = "queued-windows"

    def __init__(self, service: SchedulerService, windows: int) -> None:
        self._service = service
        self._windows = windows
        self.started: list[int] = []
        self.first_running = threading.Event()
        self.release = threading.Event()

    def tick(self) -> None:
        if self.started or self.first_running.is_set():
            return
        for number in range(self._windows):
            self._service.submit(lambda number=number: self._run(number))  # type: ignore[misc]

    def _run(self, number: int) -> None:
        self.started.append(number)
        self.first_running.set()
        self.release.wait(30)

    def housekeeping(self) -> None:
        pass


def test_windows_still_queued_when_the_scheduler_stops_wait_for_its_next_start() -> None:
    service = SchedulerService(ServiceSettings(max_workers=1))
    engine = QueuingWindows(service, windows=50)
    stop = threading.Event()
    running = threading.Thread(
        target=lambda: service.run([cast(WindowEngine, engine)], stop=stop), daemon=True
    )
    running.start()
    assert engine.first_running.wait(30)
    # every window handed from APScheduler's job store to its pool (the tick and housekeeping
    # stay): APScheduler itself fails when it is shut down while handing one-off jobs over
    wait_for(lambda: len(service._aps.get_jobs()) == 2, timeout=30)

    stop.set()
    engine.release.set()  # the running window finishes; the 49 queued must not start
    running.join(60)

    assert not running.is_alive(), "the scheduler hung on its way out"
    assert engine.started == [0]


class LosingItsLock:
    """An engine whose tick finds that another scheduler took its pipeline."""

    pipeline = "lost-lock"

    def tick(self) -> None:
        raise PipelineLockedError("pipeline 'lost-lock''s lock was taken by another scheduler")

    def housekeeping(self) -> None:
        pass


def test_a_service_that_lost_its_lock_ends_its_term_but_leaves_the_stop_to_its_caller() -> None:
    service = SchedulerService()
    stop = threading.Event()

    with pytest.raises(PipelineLockedError):
        service.run([cast(WindowEngine, LosingItsLock())], stop=stop, max_seconds=60)

    # the caller (scheduler.service.run) waits as a standby again: a stop would end it
    assert not stop.is_set()
