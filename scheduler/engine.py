"""One pipeline's scheduler, tick by tick: record reports, decide, run windows exactly once.

``tick`` reads commit reports, records them durably and only then commits their offsets, asks
the gate (``scheduler.gate``) which windows are due, records each as ``pending`` with its merge
cut and submits it. The submitted run records ``running`` before it calls the executor and
``succeeded`` or ``failed`` after. A window found ``pending`` or ``running`` by a later tick
that did not submit it (the scheduler stopped in between) is run again; the executor's calls
are idempotent per window, so its effect is exactly once.

A failed window is retried after ``retry_delay``, doubled at each attempt, ``retries`` times;
then it is *held*: an ERROR names the task, the window and the error, and later windows of
that task wait until someone releases it (``StateStore.release``). A window that failed
because the lake did not answer (the executor's ``outage``) is no attempt: it is retried with
capped backoff for as long as the outage lasts, said once (``tidemark.outages``).

While the state database is down, a window's thread waits to record that it runs or how it
ended (``scheduler.outage.StateOutage``), and the window stays in flight meanwhile: a window
that finished is never run again because its end could not be recorded, unless the scheduler
stops before the database is back (then the next start runs it again, idempotently).

The engine has no threads and no clock of its own: ``submit`` and ``clock`` are injected, so
tests run windows inline at chosen instants, and ``scheduler.service`` runs them in
APScheduler's bounded thread pool.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

from scheduler.executor import WindowExecutor
from scheduler.gate import Decision, DueWindow, TaskSpec, cuts_since, decide, mirror_task
from scheduler.outage import StateOutage, StoppedWaiting
from scheduler.reports_consumer import ReportBatch
from scheduler.retention import snapshots_needed
from scheduler.spec import PipelineSchedule
from scheduler.state import StateStore
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.lake.outages import lake_outage
from tidemark.metrics import SchedulerMetrics
from tidemark.outages import Backoff, Outage, OutageLogs
from tidemark.windows import (
    EPOCH,
    TaskKind,
    Window,
    WindowTask,
    from_epoch_ms,
    windows_between,
)

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]
Submit = Callable[[Callable[[], None]], None]
T = TypeVar("T")
#: the pipeline's schedule planned again from its source, as at start-up
Replan = Callable[[], PipelineSchedule]

#: the longest error text kept in the state store (a Spark error can carry a page of trace)
MAX_ERROR_CHARS = 2_000


class ReportSource(Protocol):
    """Where reports come from: ``ReportsConsumer``, or anything that batches like it."""

    def poll(self, max_messages: int = 500, timeout: float = 0.5) -> ReportBatch: ...

    def commit(self, batch: ReportBatch) -> None: ...


@dataclass(frozen=True)
class EngineSettings:
    #: an ERROR when a table's watermark has not moved for this long
    stall_after: timedelta = timedelta(minutes=10)
    #: reports read per tick at most, so a long backlog does not starve the windows
    max_reports_per_tick: int = 5_000
    #: ... and for this long at most: under a steady stream a poll is never empty
    max_read_time: timedelta = timedelta(seconds=1)
    #: how long one poll of Kafka may wait for reports
    poll_timeout_seconds: float = 0.2
    #: after a failed replan, how long before a report of an unknown table asks again
    replan_retry: timedelta = timedelta(minutes=1)
    #: how long the freshness samples of the status page's charts are kept
    freshness_kept: timedelta = timedelta(hours=24)


@dataclass(frozen=True)
class Stall:
    """A table whose watermark has not moved for longer than ``stall_after``."""

    table: str
    watermark: datetime
    since: datetime


def _only(report: WatermarkReport, tables: Mapping[str, str]) -> WatermarkReport:
    """``report`` with the marks of ``tables`` only (others are other pipelines')."""
    marks = {table: mark for table, mark in report.tables.items() if table in tables}
    return report.model_copy(update={"tables": marks})


def inline(run: Callable[[], None]) -> None:
    """A ``submit`` that runs the window at once, in the caller's thread."""
    run()


class WindowEngine:
    def __init__(
        self,
        schedule: PipelineSchedule,
        store: StateStore,
        reports: ReportSource,
        executor: WindowExecutor,
        *,
        clock: Clock,
        submit: Submit = inline,
        settings: EngineSettings = EngineSettings(),  # noqa: B008 - frozen
        on_finished: Callable[[], None] = lambda: None,
        metrics: SchedulerMetrics | None = None,
        replan: Replan | None = None,
        state_outage: StateOutage | None = None,
    ) -> None:
        self._schedule = schedule
        #: how a window waits for the state database; None: it does not (a failed record
        #: leaves the window open, and a later tick runs it again)
        self._state_outage = state_outage
        self._replan = replan
        #: report tables not (yet) ours -> when a report of one may ask for a replan again
        self._unknown: dict[str, datetime] = {}
        #: a batch read from Kafka whose recording failed: Kafka's position is past it, so it
        #: is recorded again, before anything newer, at the next tick
        self._unrecorded: ReportBatch | None = None
        self._store = store
        self._reports = reports
        self._executor = executor
        self._clock = clock
        self._submit = submit
        self._settings = settings
        self._on_finished = on_finished
        self.metrics = metrics or SchedulerMetrics(schedule.pipeline)
        self._specs = {spec.task: spec for spec in schedule.tasks}
        self._lock = threading.Lock()
        self._in_flight: set[WindowTask] = set()
        self._stall_alerted: dict[str, datetime] = {}
        #: the late changes each sink table has reported, in all
        self._late_rows: dict[str, int] = {}
        #: when each sink table's maintenance last started (the engine's start at first)
        self._maintained: dict[str, datetime] = {}
        self._created = clock()
        #: per service a window needs, its outages; windows it stopped in a row, for backoff
        seconds = lambda: clock().timestamp()  # noqa: E731 - the engine's clock
        self._outages = OutageLogs(schedule.pipeline, logger, clock=seconds, wall_clock=seconds)
        self._interrupted = 0
        self._backoff = Backoff()

    @property
    def pipeline(self) -> str:
        return self._schedule.pipeline

    def tick(self) -> Decision:
        """Record new reports, then submit every window due."""
        self.consume()
        decision = self.decide()
        for waiting in decision.waiting:
            self.metrics.held(str(waiting.task), waiting.held)
        for due in decision.due:
            self.metrics.held(str(due.task), False)
            self._dispatch(due)
        self.start_maintenance()
        return decision

    def start_maintenance(self) -> list[str]:
        """Submit the maintenance of each sink table whose interval has passed and whose mirror
        has no window running; while it runs, no window of that mirror starts (a compaction
        racing a MERGE fails the MERGE). The sink tables started."""
        interval = self._schedule.maintenance_interval
        if interval is None:
            return []
        now = self._clock()
        started = []
        for sink in sorted(self._schedule.changelogs):
            if now - self._maintained.get(sink, self._created) < interval:
                continue
            task = mirror_task(sink)
            with self._lock:
                if task in self._in_flight:
                    continue  # a window of the mirror runs: after it
                self._in_flight.add(task)
            self._maintained[sink] = now
            try:
                self._submit(functools.partial(self._maintain, sink, task))
            except Exception:
                with self._lock:
                    self._in_flight.discard(task)
                raise
            started.append(sink)
        return started

    def _maintain(self, sink: str, task: WindowTask) -> None:
        started = self._clock()
        try:
            # a Paimon table's jobs read pinned snapshots: expiry keeps what they may read
            keep_from = snapshots_needed(self._schedule, self._store).get(sink)
            self._executor.maintain(sink, keep_from)
            logger.info("Maintained the tables of %s in %s", sink, self._clock() - started)
        except Exception:  # the tables stay as they were; windows go on
            logger.exception(
                "Maintenance of %s failed; it is tried again in %s",
                sink,
                self._schedule.maintenance_interval,
            )
        finally:
            with self._lock:
                self._in_flight.discard(task)
            self._on_finished()

    def consume(self) -> int:
        """Record the reports Kafka has, then commit their offsets; how many were new (commit
        reports recorded, and recorded ones whose watermark a watermark report moved)."""
        ours = self._schedule.sink_of
        new = read = 0
        started = self._clock()
        while (
            read < self._settings.max_reports_per_tick
            and self._clock() - started < self._settings.max_read_time
        ):
            batch = self._unrecorded or self._reports.poll(
                timeout=self._settings.poll_timeout_seconds
            )
            self._unrecorded = None
            if not batch.offsets:
                break
            read += len(batch)
            ours = self._adopt_new_tables(batch.reports) or ours
            # reports of other pipelines' tables share the topic; their offsets are ours too
            mine = [r for r in batch.reports if r.table in ours]
            marks = [_only(w, ours) for w in batch.watermarks]
            try:
                now = self._clock()
                # commit reports first: a mark moves only a report already recorded
                new += self._store.record_reports(mine, now)
                new += self._store.record_watermarks(marks, now)
            except Exception:  # the state database: recorded again (idempotently) next tick
                self._unrecorded = batch
                raise
            self._reports.commit(batch)
            self._note_late_rows(mine)
        if new:
            logger.debug("Recorded %d new commit report(s) of %d read", new, read)
        return new

    def _adopt_new_tables(self, reports: Sequence[CommitReport]) -> dict[str, str] | None:
        """A report of a table the schedule does not know may come from a table ingest
        onboarded while running (created in the source): plan the pipeline again and schedule
        what it adds. Tables the new plan does not have belong to other pipelines sharing the
        topic and are not asked about again. The new ``sink_of``, or None if unchanged."""
        if self._replan is None:
            return None
        now = self._clock()
        known = self._schedule.sink_of
        unknown = {
            r.table
            for r in reports
            if r.table not in known and self._unknown.get(r.table, now) <= now
        }
        if not unknown:
            return None
        try:
            schedule = self._schedule.extended_by(self._replan())
        except Exception:  # the source or a config check: the next report asks again
            logger.exception(
                "Pipeline %s: could not plan again for the report(s) of %s; asking again in %s",
                self.pipeline,
                ", ".join(sorted(unknown)),
                self._settings.replan_retry,
            )
            self._unknown.update((table, now + self._settings.replan_retry) for table in unknown)
            return None
        added = sorted(set(schedule.changelogs) - set(self._schedule.changelogs))
        self._unknown.update((table, datetime.max.replace(tzinfo=now.tzinfo)) for table in unknown)
        if not added:
            return None
        self._specs = {spec.task: spec for spec in schedule.tasks}
        self._schedule = schedule
        logger.warning(
            "Pipeline %s now schedules %s, onboarded by ingest while running",
            self.pipeline,
            ", ".join(added),
        )
        return schedule.sink_of

    def _note_late_rows(self, reports: list[CommitReport]) -> None:
        """Count late changes (ingest's ``late_rows``: committed before a watermark already
        published) per table, in the metrics and, when the count grows, in a WARNING."""
        for report in reports:
            sink = self._schedule.sink_of[report.table]
            known = self._late_rows.get(sink, 0)
            if report.late_rows <= known:
                continue
            self._late_rows[sink] = report.late_rows
            self.metrics.late_rows(sink, report.late_rows)
            logger.warning(
                "%s received %d late change(s) (%d in all): they committed before a watermark "
                "already published, so windows of %s that ran before them miss them; the next "
                "window's merge applies them to the mirror",
                sink,
                report.late_rows - known,
                report.late_rows,
                self.pipeline,
            )

    def decide(self) -> Decision:
        """What the gate says now, from the recorded state."""
        # in flight first: a window that finishes after this line has recorded its end before
        # the states below are read, so it is never taken for one a stopped scheduler left
        with self._lock:
            in_flight = frozenset(self._in_flight)
        tasks = self._store.task_states(self.pipeline)
        tables = self._store.table_states(
            self._schedule.changelogs, cuts_since(self._schedule.tasks, tasks)
        )
        now = self._clock()
        for sink, table in tables.items():
            if table.watermark_ms is not None:
                lag = (now - EPOCH) / timedelta(seconds=1) - table.watermark_ms / 1000
                self.metrics.watermark_lag(sink, lag)
        return decide(self._schedule.tasks, tables, tasks, now, in_flight)

    def housekeeping(self) -> list[Stall]:
        """Prune the reports no window can need any more; ERROR for each table whose watermark
        has not moved for ``stall_after``, once per ``stall_after`` while it lasts."""
        self.prune_reports()
        now = self._clock()
        self._store.prune_freshness(now - self._settings.freshness_kept)
        reached = self._store.watermark_reached_at(self._schedule.changelogs.values())
        stalls = []
        for sink, changelog in sorted(self._schedule.changelogs.items()):
            report = reached.get(changelog)
            if report is None or now - report.recorded_at <= self._settings.stall_after:
                self._stall_alerted.pop(sink, None)
                continue
            stall = Stall(
                sink, EPOCH + timedelta(milliseconds=report.watermark_ms), report.recorded_at
            )
            stalls.append(stall)
            alerted = self._stall_alerted.get(sink)
            if alerted is None or now - alerted >= self._settings.stall_after:
                self._stall_alerted[sink] = now
                logger.error(
                    "ALERT: the watermark of %s has stayed at %s since %s (%s): its windows "
                    "and every job reading it wait; check that ingest of pipeline %s runs",
                    sink,
                    stall.watermark.isoformat(),
                    stall.since.isoformat(timespec="seconds"),
                    now - stall.since,
                    self.pipeline,
                )
        return stalls

    def prune_reports(self) -> int:
        """Delete the reports older than every task's last succeeded window: each window after
        it finds its cut in later reports. Nothing while a task has not succeeded once."""
        tasks = self._store.task_states(self.pipeline)
        ends = [
            tasks[spec.task].done_end if spec.task in tasks else None
            for spec in self._schedule.tasks
        ]
        if not ends or any(end is None for end in ends):
            return 0
        oldest = min(end for end in ends if end is not None)
        pruned = self._store.prune_reports(
            self._schedule.changelogs.values(), int((oldest - EPOCH) / timedelta(milliseconds=1))
        )
        if pruned:
            logger.info(
                "Pruned %d commit report(s) of pipeline %s from before %s, which every task has "
                "passed",
                pruned,
                self.pipeline,
                oldest.isoformat(),
            )
        return pruned

    # -- running windows -----------------------------------------------------------------

    def _dispatch(self, due: DueWindow) -> None:
        self._store.mark_pending(
            self.pipeline, due.task, due.window, due.up_to_order, self._clock(), due.snapshots
        )
        with self._lock:
            self._in_flight.add(due.task)
        try:
            self._submit(lambda: self._run(due))
        except Exception:
            with self._lock:
                self._in_flight.discard(due.task)
            raise

    def _run(self, due: DueWindow) -> None:
        try:
            self._run_recorded(due)
        except StoppedWaiting:
            logger.warning(
                "Scheduler stopping before the state database answered: window %s of %s stays "
                "open, and the next start runs it again (a mirror merge already applied is a "
                "no-op)",
                due.window,
                due.task,
            )
        except Exception:  # the state store failed: the window stays open and runs again
            logger.exception("Recording window %s of %s failed", due.window, due.task)
        finally:
            with self._lock:
                self._in_flight.discard(due.task)
            self._on_finished()

    def _recorded(self, step: Callable[[], T]) -> T:
        """``step()``, a read or write of the state store, waiting for the state database while
        it is down (``StateOutage.retry``) when the engine has an outage to wait through."""
        return step() if self._state_outage is None else self._state_outage.retry(step)

    def _run_recorded(self, due: DueWindow) -> None:
        spec = self._specs[due.task]
        attempt = due.attempt
        self._recorded(
            lambda: self._store.mark_running(
                self.pipeline, due.task, due.window, attempt, self._clock()
            )
        )
        logger.info("Running %s window %s (attempt %d)", due.task, due.window, attempt)
        late = self._recorded(lambda: self._late_windows(due))
        since = self._recorded(lambda: self._read_before(due))
        started = self._clock()
        try:
            self._call_executor(due, late, since)
        except Exception as error:  # any failure of a window job is the job's, not ours
            outage = self._outage_behind(error)
            if outage is None:
                self._fail(spec, due, attempt, error)
            else:  # ... unless the lake did not answer: no attempt, retried until it does
                self._wait_for(due, outage, error)
            return
        self._lake_answers()
        now = self._clock()
        self._recorded(lambda: self._store.mark_succeeded(self.pipeline, due.task, due.window, now))
        self.metrics.succeeded(
            str(due.task),
            window_end_s=(due.window.end - EPOCH) / timedelta(seconds=1),
            delay_s=(now - due.window.end) / timedelta(seconds=1),
            ran_s=(now - started) / timedelta(seconds=1),
        )
        logger.info("Finished %s window %s", due.task, due.window)

    def _call_executor(
        self, due: DueWindow, late: Sequence[Window], since: Mapping[str, int] | None
    ) -> None:
        if due.task.kind == TaskKind.MIRROR:
            self._executor.merge_mirror(due.task.name, due.window, due.up_to_order)
            return
        # a re-run reads the inputs as the window's own run does: with the late changes
        snapshots = due.snapshots or None
        for window in late:
            logger.info("Running %s window %s again: late changes belong in it", due.task, window)
            self._executor.run_job(due.task.name, window, snapshots)
            self.metrics.rerun(str(due.task))
        self._executor.run_job(due.task.name, due.window, snapshots, since)

    def _read_before(self, due: DueWindow) -> Mapping[str, int] | None:
        """The snapshots the previous window of a job over Paimon tables read: ``due``'s
        changes to each input start after them, so consecutive windows' changes neither
        overlap nor leave a gap. None for its first window (its changes then start at the
        first snapshot reaching its start)."""
        if not due.snapshots:
            return None
        previous = self._store.window_run(self.pipeline, due.task, due.window.start)
        return None if previous is None or not previous.snapshots else previous.snapshots

    def _late_windows(self, due: DueWindow) -> list[Window]:
        """For a job with ``rerun_late_windows``: its windows before ``due`` that hold the
        commit times of late changes its mirrors merged since its last window, oldest first.

        They run again at ``due``'s cut, when the mirrors hold those changes, inside ``due``'s
        run: recorded with it, retried with it, so each late change re-runs its windows once.
        A job over Paimon tables finds them in the reports between the snapshots its previous
        window read and the ones ``due`` reads, and re-runs them at ``due``'s snapshots.
        """
        spec = self._specs[due.task]
        if due.task.kind != TaskKind.JOB or not spec.rerun_late_windows:
            return []
        first = self._store.first_window(self.pipeline, due.task)
        if first is None or first.start >= due.window.start:
            return []  # nothing ran before this window
        windows: set[Window] = set()
        previous = None
        if spec.pins_snapshots:
            previous = self._store.window_run(self.pipeline, due.task, due.window.start)
        for table in spec.inputs:
            changelog = self._schedule.changelogs[table]
            if not spec.pins_snapshots:
                ranges = self._store.late_changes(
                    self.pipeline, changelog, mirror_task(table), due.window.start, due.window.end
                )
            elif previous is None or table not in previous.snapshots or table not in due.snapshots:
                ranges = []  # nothing to compare with: a window pinned before this version
            else:  # what this window reads of the table that the one before did not
                ranges = self._store.late_changes_in_snapshots(
                    changelog, previous.snapshots[table], due.snapshots[table]
                )
            for first_ms, last_ms in ranges:
                windows.update(
                    window
                    for window in windows_between(
                        Window.containing(from_epoch_ms(first_ms), spec.window).end,
                        Window.containing(from_epoch_ms(last_ms), spec.window).end,
                        spec.window,
                    )
                    if first.start <= window.start and window.end <= due.window.start
                )
        return sorted(windows)

    def _outage_behind(self, error: Exception) -> Outage | None:
        """The outage that made a window fail: seen in its error, or (a Spark job's errors
        are Java's) found by asking the lake now."""
        outage = lake_outage(error)
        if outage is not None:
            return outage
        try:
            return self._executor.outage()
        except Exception:  # the question failed, not the lake: the window's failure counts
            logger.exception("Could not ask whether the lake answers")
            return None

    def _wait_for(self, due: DueWindow, outage: Outage, error: Exception) -> None:
        self._outages.of(outage.dependency).down(
            outage.detail, "windows wait and retry, without counting attempts"
        )
        with self._lock:
            self._interrupted += 1
            delay = self._backoff.delay(self._interrupted)
        now = self._clock()
        text = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
        self._recorded(
            lambda: self._store.mark_interrupted(
                self.pipeline, due.task, due.window, text, now + timedelta(seconds=delay), now
            )
        )

    def _lake_answers(self) -> None:
        with self._lock:
            self._interrupted = 0
        self._outages.up()

    def _fail(self, spec: TaskSpec, due: DueWindow, attempt: int, error: Exception) -> None:
        text = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
        now = self._clock()
        retry_at = None
        if attempt <= spec.retries:
            retry_at = now + spec.retry_delay * 2 ** (attempt - 1)
            logger.warning(
                "%s window %s failed (attempt %d of %d), retrying at %s: %s",
                due.task,
                due.window,
                attempt,
                spec.retries + 1,
                retry_at.isoformat(timespec="seconds"),
                text,
            )
        else:
            logger.error(
                "ALERT: %s window %s failed %d time(s) and is held; later windows of %s wait "
                "until it is released. Last error: %s",
                due.task,
                due.window,
                attempt,
                due.task,
                text,
            )
        self.metrics.failed(str(due.task), held=retry_at is None)
        self._recorded(
            lambda: self._store.mark_failed(
                self.pipeline, due.task, due.window, text, retry_at, now
            )
        )
