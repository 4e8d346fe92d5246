"""The long-running scheduler: APScheduler ticks each pipeline's engine and runs its windows.

The only module of ``scheduler`` that imports ``apscheduler``. Two thread pools keep the parts
apart: ``control`` (one thread) runs every pipeline's tick and housekeeping in turn, so the
Kafka consumers are only ever used by one thread; ``windows`` (``max_workers`` threads) runs
window jobs, so at most that many run at once however many are due. A window that finishes
wakes the tick at once, so a mirror merge is followed by its jobs without waiting a period.

``run`` returns when ``stop`` is set (SIGINT/SIGTERM in the CLI), after ``max_seconds``, or when
a tick hits a terminal error (a report of a newer major version, a newer state schema), which it
then raises. On the way out it waits for the windows running, so their state is recorded.

An outage of the state database stops nothing (``scheduler.outage``): at start the scheduler
waits for it, saying so once; while running, each tick that fails on it is one more attempt,
and the windows in flight wait to record their end. One line when it goes, one a minute, one
when it is back.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from scheduler.engine import Clock, EngineSettings, Replan, WindowEngine
from scheduler.executor import WindowExecutor
from scheduler.outage import StateOutage, StoppedWaiting
from scheduler.reports_consumer import ConsumerSettings, ReportsConsumer
from scheduler.spec import PipelineSchedule
from scheduler.state import PipelineLock, PipelineLockedError, StateStore, StateUnavailableError
from tidemark.errors import TerminalError, TidemarkError
from tidemark.metrics import serve

logger = logging.getLogger(__name__)


def _not_a_skipped_tick(record: logging.LogRecord) -> bool:
    """APScheduler warns each period a job is still running; a tick that outlasts its period
    (a slow state database, Kafka away) is skipped by design, so once a second would flood."""
    return "skipped: maximum number of running instances reached" not in record.getMessage()


logging.getLogger("apscheduler.scheduler").addFilter(_not_a_skipped_tick)


@dataclass(frozen=True)
class ServiceSettings:
    #: how often each pipeline reads reports and looks for due windows
    tick_interval: timedelta = timedelta(seconds=1)
    #: how often stalled watermarks are looked for
    housekeeping_interval: timedelta = timedelta(minutes=1)
    #: window jobs running at once, at most, across all pipelines
    max_workers: int = 4

    def __post_init__(self) -> None:
        if self.max_workers < 1:
            raise ValueError(f"max_workers must be positive, got: {self.max_workers}")
        if self.tick_interval <= timedelta(0):
            raise ValueError(f"tick_interval must be positive, got: {self.tick_interval}")


def utc_now() -> datetime:
    return datetime.now(UTC)


class SchedulerService:
    """APScheduler around engines; build the engines with ``submit=service.submit`` and
    ``on_finished=service.wake``. With ``outage``, a tick that fails on the state database
    says so there (once per outage) rather than in a line of its own."""

    def __init__(
        self,
        settings: ServiceSettings = ServiceSettings(),  # noqa: B008 - frozen
        outage: StateOutage | None = None,
    ) -> None:
        self._settings = settings
        self._outage = outage
        self._aps = BackgroundScheduler(
            executors={
                "control": ThreadPoolExecutor(1),
                "windows": ThreadPoolExecutor(settings.max_workers),
            },
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone=UTC,
        )
        self._engines: list[WindowEngine] = []
        self._locks: list[PipelineLock] = []
        self._failure: TidemarkError | None = None
        self._stop = threading.Event()
        #: set when a step fails for good: this run of the service ends, with ``_failure``
        self._ended = threading.Event()
        # APScheduler's shutdown holds its job store lock while it waits for the running jobs:
        # a tick adding a window or a finished window waking the tick then would wait for it
        # forever. Calls from jobs take this lock and give up once ``_stopping`` is set.
        self._calls = threading.Lock()
        self._stopping = False

    def submit(self, run: Callable[[], None]) -> None:
        """Run a window in the bounded pool; it waits in the pool's queue when all are busy.
        Once stopping, nothing is submitted, and nothing still queued starts: the window stays
        pending in the state store, and the next scheduler runs it. The stop waits only for
        the windows already running, however many are queued."""
        with self._calls:
            if self._stopping:
                logger.info("Scheduler stopping: a due window waits for the next start")
                return
            self._aps.add_job(
                self._unless_stopping(run), executor="windows", misfire_grace_time=None
            )

    def _unless_stopping(self, run: Callable[[], None]) -> Callable[[], None]:
        def queued() -> None:
            if self._stopping or self._stop.is_set() or self._ended.is_set():
                return  # pending in the state store: the next start runs it
            run()

        return queued

    def wake(self) -> None:
        """Tick now rather than at the next period (a window finished: its successors may be
        due). Safe to call before start and after shutdown."""
        with self._calls:
            job = self._aps.get_job("tick") if self._aps.running and not self._stopping else None
            if job is not None:
                job.modify(next_run_time=datetime.now(UTC))

    def run(
        self,
        engines: Sequence[WindowEngine],
        *,
        locks: Sequence[PipelineLock] = (),
        stop: threading.Event | None = None,
        max_seconds: float | None = None,
    ) -> None:
        """Tick ``engines`` until ``stop``; each tick first confirms ``locks`` (the pipelines'
        locks, which a restart of the state database frees)."""
        self._engines = list(engines)
        self._locks = list(locks)
        stop = self._stop = stop or self._stop
        self._aps.add_job(
            self._guarded(self._tick, stop),
            "interval",
            seconds=self._settings.tick_interval.total_seconds(),
            id="tick",
            executor="control",
            # a wake during a tick queues one more behind it in the one control thread, rather
            # than being skipped: a window that finished mid-tick is seen at once
            max_instances=2,
            next_run_time=datetime.now(UTC),
        )
        self._aps.add_job(
            self._guarded(self._housekeeping, stop),
            "interval",
            seconds=self._settings.housekeeping_interval.total_seconds(),
            id="housekeeping",
            executor="control",
        )
        self._aps.start()
        logger.info(
            "Scheduler started for %s (up to %d windows at once)",
            ", ".join(e.pipeline for e in self._engines),
            self._settings.max_workers,
        )
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        try:
            while not stop.is_set() and not self._ended.is_set():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                stop.wait(1.0 if remaining is None else min(1.0, remaining))
        finally:
            logger.info("Scheduler stopping; waiting for the windows running")
            with self._calls:
                self._stopping = True
            self._aps.shutdown(wait=True)
        if self._failure is not None:
            raise self._failure

    def _tick(self) -> None:
        for lock in self._locks:
            lock.confirm()
        for engine in self._engines:
            engine.tick()

    def _housekeeping(self) -> None:
        for engine in self._engines:
            engine.housekeeping()

    def _guarded(self, step: Callable[[], None], stop: threading.Event) -> Callable[[], None]:
        """Log transient errors and go on; stop the service on a terminal one."""

        def guarded() -> None:
            try:
                step()
            except TerminalError as error:
                logger.error("Scheduler stopping: %s", error)
                self._failure = error
                # this term ends; the caller's stop stays its own: a scheduler that lost its
                # lock to another (``PipelineLockedError``) waits as a standby again
                self._ended.set()
            except StateUnavailableError as error:
                if self._outage is None:
                    logger.warning("Scheduler tick failed, trying again: %s", error)
                else:  # one line per outage, whichever tick sees it
                    self._outage.failed(error, self._outage.holding)
            except TidemarkError as error:
                logger.warning("Scheduler tick failed, trying again: %s", error)
            except Exception:  # a bug: keep the service up, and loud
                logger.exception("Scheduler tick failed")
            else:
                if self._outage is not None:  # every read and write of the step was answered
                    self._outage.answered()

        return guarded


@dataclass(frozen=True)
class PipelineRun:
    """One pipeline to schedule: its tasks and where its commit reports come from."""

    schedule: PipelineSchedule
    reports: ConsumerSettings
    #: the schedule planned again from the source: tables ingest onboards while running join
    replan: Replan | None = None


def run(
    pipelines: Sequence[PipelineRun],
    store: StateStore,
    executor: WindowExecutor,
    *,
    settings: ServiceSettings = ServiceSettings(),  # noqa: B008 - frozen
    engine_settings: EngineSettings = EngineSettings(),  # noqa: B008 - frozen
    clock: Clock = utc_now,
    stop: threading.Event | None = None,
    max_seconds: float | None = None,
    metrics_port: int | None = None,
) -> None:
    """Schedule ``pipelines`` until ``stop`` is set or ``max_seconds`` pass (the Python API
    behind ``tidemark schedule``); ``executor`` runs the windows. With ``metrics_port``,
    Prometheus scrapes ``http://127.0.0.1:<port>/metrics``. While another scheduler runs one
    of the pipelines against the same state, waits as its standby (``PipelineLock.wait``);
    after losing a pipeline to another scheduler, waits again. While the state database is
    down, waits for it (``scheduler.outage``), at start as while running."""
    # APScheduler logs two INFO lines per job run: every tick, every second
    logging.getLogger("apscheduler.executors").setLevel(logging.WARNING)
    stop = stop or threading.Event()
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    names = sorted(pipeline.schedule.pipeline for pipeline in pipelines)
    outage = StateOutage.of(names, store.where, stop, deadline)
    starting = f"waiting for it before scheduling {_pipelines(names)}"
    try:
        outage.retry(store.create, starting)
        while True:
            try:
                _run_while_active(
                    pipelines,
                    store,
                    executor,
                    _Run(settings, engine_settings, clock, stop, deadline, metrics_port, outage),
                )
                return
            except PipelineLockedError as error:
                logger.warning("%s; waiting as a standby again", error)
    except StoppedWaiting as stopped:
        logger.info("Scheduler stopping: %s", stopped)
    finally:
        store.close()


def _pipelines(names: Sequence[str]) -> str:
    """``pipeline 'shop'``, ``pipelines 'a', 'b'``"""
    return ("pipeline " if len(names) == 1 else "pipelines ") + ", ".join(map(repr, names))


@dataclass(frozen=True)
class _Run:
    """How ``run`` was asked to run, for each term as the active scheduler."""

    settings: ServiceSettings
    engine_settings: EngineSettings
    clock: Clock
    stop: threading.Event
    deadline: float | None
    metrics_port: int | None
    outage: StateOutage


def _run_while_active(
    pipelines: Sequence[PipelineRun],
    store: StateStore,
    executor: WindowExecutor,
    how: _Run,
) -> None:
    """Wait for every pipeline's lock, then schedule them until stopped."""
    service = SchedulerService(how.settings, how.outage)
    stop, deadline = how.stop, how.deadline
    with ExitStack() as resources:
        # locked before joining the consumer group: a standby must not take partitions from
        # the active scheduler; in one order, so that two schedulers of several pipelines
        # cannot each wait for the other
        locks = []
        for pipeline in sorted(pipelines, key=lambda p: p.schedule.pipeline):
            lock = PipelineLock(store, pipeline.schedule.pipeline)
            resources.callback(lock.release)
            waiting = f"waiting for it to take pipeline {lock.pipeline!r}'s lock"
            if not how.outage.retry(functools.partial(lock.wait, stop, deadline), waiting):
                return
            locks.append(lock)
        engines = []
        for pipeline in pipelines:
            consumer = ReportsConsumer(pipeline.reports)
            resources.callback(consumer.close)
            engines.append(
                WindowEngine(
                    pipeline.schedule,
                    store,
                    consumer,
                    executor,
                    clock=how.clock,
                    submit=service.submit,
                    settings=how.engine_settings,
                    on_finished=service.wake,
                    replan=pipeline.replan,
                    state_outage=how.outage,
                )
            )
        if how.metrics_port is not None:
            server = serve(how.metrics_port)
            resources.callback(server.close)
            logger.info("Metrics at http://127.0.0.1:%d/metrics", server.port)
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        service.run(engines, locks=locks, stop=stop, max_seconds=remaining)
