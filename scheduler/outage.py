"""Riding out an outage of the scheduler's state database (docs/operations.md, "Outages").

Every part of the scheduler that finds its state database down says so through the one
``StateOutage`` of its run: the start (creating the schema, waiting for the pipelines' locks),
each tick, and each window recording that it starts or how it ended. So the log has one line
when the database goes away, one a minute while it stays away and one when it is back
(``tidemark.outages.OutageLog``), whichever part saw it first.

The start and the windows wait here: ``retry`` calls its step again after a capped exponential
backoff until the database answers, and gives up (``StoppedWaiting``) as soon as the run is
told to stop or its deadline passes. A window whose end could not be recorded waits here still
in flight, so no tick takes it for one a stopped scheduler left and runs it again. Ticks do not
wait: each failed tick is one more failed attempt, and the next tick is the next one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from scheduler.errors import SchedulerError
from scheduler.state import StateUnavailableError
from tidemark.outages import Backoff, Dependency, OutageLog

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: between two attempts while the state database is down: a connection refused costs nothing,
#: and a scheduler that waits long after the database is back holds every window
STATE_BACKOFF = Backoff(first=0.5, most=5.0)


class StoppedWaiting(SchedulerError):
    """The run was told to stop, or its time was up, while its state database was down."""


class StateOutage:
    """The state database's outages as one scheduler run sees them; ``stop`` and the monotonic
    ``deadline`` (None: none) end every wait at once."""

    def __init__(
        self,
        log: OutageLog,
        where: str,
        stop: threading.Event,
        deadline: float | None = None,
        *,
        backoff: Backoff = STATE_BACKOFF,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._stop = stop
        self._deadline = deadline
        self._backoff = backoff
        self._clock = clock
        #: what a running scheduler does meanwhile, for the log line
        self.holding = f"holding the windows in flight and trying again until {where} answers"

    @classmethod
    def of(
        cls,
        pipelines: Sequence[str],
        where: str,
        stop: threading.Event,
        deadline: float | None = None,
    ) -> StateOutage:
        """The outages of one scheduler run of ``pipelines``, logged by this module. The
        metrics' ``pipeline`` label is the pipeline's name, or the names joined by commas
        for a scheduler of several (they share the one state database)."""
        label = ",".join(sorted(pipelines))
        return cls(OutageLog(Dependency.STATE_DATABASE, label, logger), where, stop, deadline)

    def failed(self, error: StateUnavailableError, action: str) -> None:
        """An attempt failed; ``action`` says what the scheduler does meanwhile."""
        self._log.down(error.reason, action)

    def answered(self) -> None:
        """An attempt succeeded: the outage, if there was one, is over."""
        self._log.up()

    def retry(self, step: Callable[[], T], action: str | None = None) -> T:
        """``step()``, called again after a backoff each time the state database does not
        answer; ``StoppedWaiting`` once the run is told to stop or its deadline passes."""
        attempt = 0
        while True:
            try:
                result = step()
            except StateUnavailableError as error:
                attempt += 1
                self.failed(error, action or self.holding)
                if not self._wait(self._backoff.delay(attempt)):
                    raise StoppedWaiting(
                        f"told to stop while the state database was unavailable ({error.reason})"
                    ) from None
                continue
            self.answered()
            return result

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds`` or until the deadline; False when stopped or past the deadline."""
        if self._deadline is not None:
            left = self._deadline - self._clock()
            if left <= 0:
                return False
            seconds = min(seconds, left)
        return not self._stop.wait(seconds)
