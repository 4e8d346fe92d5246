"""Stopping the scheduler while a tick is submitting a window must not hang it: APScheduler's
shutdown holds its job store lock while it waits for the running jobs."""

from __future__ import annotations

import threading
from typing import cast

from apscheduler.schedulers.base import STATE_STOPPED

from scheduler.engine import WindowEngine
from scheduler.service import SchedulerService
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
