"""Outages of the services around a long-running process: what is down, since when, said once.

A process that depends on a service (the source, the catalog, the object store or the
warehouse's disk, Kafka, the state database) rides out its outage: it waits, retries with
capped backoff, and goes on by itself when the service answers again (docs/operations.md#outages).
``OutageLog`` is how every such wait shows: one log line when the service goes away, one a
minute while it stays away, one when it is back, and the ``tidemark_dependency_*`` metrics.
What counts as an outage (rather than a terminal error that stops the process with its fix) is
decided next to each SDK: ``tidemark.lake.outages`` for the lake, the source's and Kafka's
modules for theirs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from tidemark.metrics import DEPENDENCY_DOWN_SINCE, DEPENDENCY_OUTAGES, DEPENDENCY_UP


class Dependency(StrEnum):
    """A service a Tidemark process cannot work without (the ``dependency`` metric label)."""

    SOURCE = "source"
    CATALOG = "catalog"
    OBJECT_STORE = "object_store"
    WAREHOUSE_DISK = "warehouse_disk"
    KAFKA = "kafka"
    STATE_DATABASE = "state_database"

    @property
    def described(self) -> str:
        return _DESCRIBED[self]


_DESCRIBED = {
    Dependency.SOURCE: "the source database",
    Dependency.CATALOG: "the catalog",
    Dependency.OBJECT_STORE: "the object store",
    Dependency.WAREHOUSE_DISK: "the warehouse's disk",
    Dependency.KAFKA: "Kafka",
    Dependency.STATE_DATABASE: "the scheduler state database",
}


@dataclass(frozen=True)
class Outage:
    """A service that did not answer, and what it said (one line, never a secret)."""

    dependency: Dependency
    detail: str

    def describe(self) -> str:
        return f"{self.dependency.described} ({self.detail})"


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff between attempts: ``first``, twice that, ... up to ``most``."""

    first: float = 1.0
    most: float = 30.0

    def delay(self, attempt: int) -> float:
        """The wait after the ``attempt``-th failure in a row (1, 2, ...)."""
        return float(min(self.most, self.first * 2 ** max(0, attempt - 1)))


#: how often a wait that goes on is said again
REMIND_SECONDS = 60.0


class OutageLog:
    """One service's outages as one process sees them: ``down`` at each failed attempt,
    ``up`` at the first success after. Logs once when it goes away, once a ``remind_seconds``
    while it stays away, once when it is back; keeps the ``tidemark_dependency_*`` metrics."""

    def __init__(
        self,
        dependency: Dependency,
        pipeline: str,
        logger: logging.Logger,
        *,
        remind_seconds: float = REMIND_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.dependency = dependency
        self._pipeline = pipeline
        self._logger = logger
        self._remind_seconds = remind_seconds
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._down_at: float | None = None  # clock()
        self._said_at = 0.0
        #: when the current outage began (UTC); None while the service answers
        self.since: datetime | None = None
        DEPENDENCY_UP.labels(pipeline, dependency.value).set(1)
        DEPENDENCY_DOWN_SINCE.labels(pipeline, dependency.value).set(0)

    @property
    def is_down(self) -> bool:
        return self.since is not None

    def down(self, detail: str, action: str = "retrying until it answers") -> None:
        """An attempt failed with ``detail``; ``action`` says what the process does meanwhile."""
        with self._lock:
            now = self._clock()
            if self._down_at is None:
                self._down_at, self._said_at = now, now
                wall = self._wall_clock()
                self.since = datetime.fromtimestamp(wall, UTC)
                DEPENDENCY_UP.labels(self._pipeline, self.dependency.value).set(0)
                DEPENDENCY_DOWN_SINCE.labels(self._pipeline, self.dependency.value).set(wall)
                DEPENDENCY_OUTAGES.labels(self._pipeline, self.dependency.value).inc()
                self._logger.warning(
                    "%s is unavailable (%s): %s",
                    _capital(self.dependency.described),
                    detail,
                    action,
                )
            elif now - self._said_at >= self._remind_seconds:
                self._said_at = now
                self._logger.warning(
                    "Still waiting for %s, unavailable for %.0f s (%s)",
                    self.dependency.described,
                    now - self._down_at,
                    detail,
                )

    def up(self) -> None:
        """An attempt succeeded: the outage, if there was one, is over."""
        with self._lock:
            if self._down_at is None:
                return
            seconds = self._clock() - self._down_at
            self._down_at, self.since = None, None
            DEPENDENCY_UP.labels(self._pipeline, self.dependency.value).set(1)
            DEPENDENCY_DOWN_SINCE.labels(self._pipeline, self.dependency.value).set(0)
            self._logger.info(
                "%s is back after %.0f s", _capital(self.dependency.described), seconds
            )

    def waiting(self) -> str | None:
        """``waiting for the catalog since 2026-11-29 03:41:07 UTC`` during an outage."""
        since = self.since
        if since is None:
            return None
        return f"waiting for {self.dependency.described} since {since:%Y-%m-%d %H:%M:%S} UTC"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


class OutageLogs:
    """One ``OutageLog`` per service a process depends on, made when first needed."""

    def __init__(
        self,
        pipeline: str,
        logger: logging.Logger,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._pipeline = pipeline
        self._logger = logger
        self._clock = clock
        self._wall_clock = wall_clock
        self._logs: dict[Dependency, OutageLog] = {}
        self._lock = threading.Lock()

    def of(self, dependency: Dependency) -> OutageLog:
        with self._lock:
            log = self._logs.get(dependency)
            if log is None:
                log = self._logs[dependency] = OutageLog(
                    dependency,
                    self._pipeline,
                    self._logger,
                    clock=self._clock,
                    wall_clock=self._wall_clock,
                )
            return log

    def up(self) -> None:
        """Every service answers: the outages under way, if any, are over."""
        with self._lock:
            logs = list(self._logs.values())
        for log in logs:
            log.up()
