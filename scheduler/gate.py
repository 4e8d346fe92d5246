"""The window gate: which windows may run now, as a pure function of recorded state and ``now``.

Tasks. Every sink table with a mirror is a task ``mirror:<sink>`` with the mirror's window and
that one input; every declared job is a task ``job:<name>`` with its inputs and window.

A window ``[end - length, end)`` of a task is *complete* when every input's watermark, taken
from non-partial commit reports only, is at least ``end``. Windows of one task run one at a
time, in order; after downtime the missed ones run one by one, one per tick. A task's first
window ends at the first boundary strictly after its inputs' first watermark, so a new
pipeline does not backfill history from 1970.

Consistent cut. A job's SQL for window ``W`` must read every input mirror exactly as merged to
``W.end``, even when several jobs share a table at different lengths (5 min and 1 h). Mirrors
are shared tables that users' SQL reads by name, so rather than pinning snapshots the gate
serializes per table, with two rules:

1. a job's window ending at ``E`` runs only when each input mirror's last succeeded window
   ends exactly at ``E`` and no later window of that mirror is open;
2. a mirror merge of table ``T`` to ``E`` (from ``E - m``) runs only when every job reading
   ``T`` has its next unfinished window ending at ``E`` or later, i.e. no job still needs the
   mirror as it stands at ``E - m``.

Coalescing. A job that says ``coalesce: true`` and is behind (after downtime, or a held window
released late) runs every complete window it missed as one run ``[first start, last end)``: its
next window stretches to the last boundary all its inputs are complete to, its mirrors merge
window by window up to that end (rule 2 lets them, since that is the end the job needs), and the
job runs once they stand there. Mirrors never coalesce: each merge is one window.

Job windows are multiples of their inputs' mirror windows and both divide a day
(``tidemark.config``), so every job boundary is a mirror boundary: the mirror advances until
it reaches the nearest job boundary, stops there until every job needing that cut has
succeeded, then goes on. The 5-minute job therefore holds the mirror for its own SQL every
five minutes, the hourly one on the hour; a job that is *held* after failing holds its input
mirrors too (and with them every other job on those tables): the cut it would need is gone
otherwise. A job with no windows yet starts at the first of its boundaries at or after
the furthest window any of its mirrors has recorded, so it never asks for a cut already passed.

Merges are exact: each mirror window carries ``up_to_order``, the ``last_order`` of the
earliest non-partial report whose watermark is at least the window's end, so the merge takes
the changelog rows up to that commit whatever Iceberg's snapshot history still holds. The
value is decided once, when the window is first recorded, and a re-run reuses it.

Paimon. A Paimon sink table is its own mirror (no merges, so neither rule applies): a job over
Paimon tables is due when its inputs' watermarks reach the window's end, and its window carries
``snapshots``, per input the snapshot id of that same earliest report (``TableState.snapshot_at``:
the first snapshot complete to the end, watermark reports included), which the job reads for
its whole run. Decided once, like a cut, so a re-run reads the same snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from tidemark.config.declaration import default_of
from tidemark.config.model import JobConfig
from tidemark.windows import EPOCH, TaskKind, Window, WindowTask, from_epoch_ms


class RunState(StrEnum):
    """Where a window is in its life; ``failed`` with no retry time is *held*."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class TaskSpec:
    """One schedulable task: what it reads, its window length and its retry policy."""

    task: WindowTask
    #: sink tables whose watermarks gate the task
    inputs: tuple[str, ...]
    window: timedelta
    # the defaults are a job's: what its options declare when the file leaves them out
    retries: int = default_of(JobConfig, "retries")
    retry_delay: timedelta = default_of(JobConfig, "retry_delay")
    #: a job that is behind runs every complete window it missed as one ``[start, end)``
    coalesce: bool = default_of(JobConfig, "coalesce")
    #: a job runs its earlier windows again when late changes for them reach its mirrors
    rerun_late_windows: bool = default_of(JobConfig, "rerun_late_windows")
    #: a job over Paimon tables: each window reads each input at a snapshot fixed when the
    #: window is recorded (``DueWindow.snapshots``), not at a mirror the scheduler merged
    pins_snapshots: bool = False


@dataclass(frozen=True)
class ReportRecord:
    """What the gate needs of one recorded commit report."""

    snapshot_id: int
    watermark_ms: int
    last_order: int | None
    partial: bool = False


@dataclass(frozen=True)
class TableState:
    """One sink table's recorded reports: its non-partial watermarks and the history needed
    to find merge cuts (at least the reports at or after the oldest unmerged window end)."""

    first_watermark_ms: int | None = None
    watermark_ms: int | None = None
    history: tuple[ReportRecord, ...] = ()

    @classmethod
    def from_reports(cls, reports: Iterable[ReportRecord]) -> TableState:
        # watermark 0 promises nothing: a table still bootstrapping, or not yet read
        complete = [r for r in reports if not r.partial and r.watermark_ms > 0]
        if not complete:
            return cls()
        watermarks = [r.watermark_ms for r in complete]
        return cls(min(watermarks), max(watermarks), tuple(complete))

    def cut(self, end: datetime) -> int | None:
        """``last_order`` of the first non-partial report, in commit order, that is complete to
        ``end``. A changelog commit holds everything an earlier one held, so it is complete to
        at least every earlier one's watermark: after a restart, a commit can carry a lower
        watermark than a watermark report gave the commit before it."""
        report = self._complete_to(end)
        return None if report is None else report.last_order

    def snapshot_at(self, end: datetime) -> int | None:
        """The snapshot id of that same report: for a Paimon table, the first snapshot holding
        every change up to ``end``. A watermark report may have taken an idle table's last
        snapshot past ``end`` while the snapshot's own Paimon watermark stays below it."""
        report = self._complete_to(end)
        return None if report is None else report.snapshot_id

    @property
    def newest_snapshot(self) -> int | None:
        """The snapshot id of the newest report, in commit order."""
        ordered = _in_commit_order(self.history)
        return ordered[-1].snapshot_id if ordered else None

    def _complete_to(self, end: datetime) -> ReportRecord | None:
        end_ms = _ms(end)
        complete_to = 0
        for report in _in_commit_order(self.history):
            if report.partial:
                continue
            complete_to = max(complete_to, report.watermark_ms)
            if complete_to >= end_ms:
                return report
        return None


def _in_commit_order(reports: Iterable[ReportRecord]) -> list[ReportRecord]:
    """``last_order`` only grows from one commit to the next; reports from before it existed
    (1.0) have none, and watermarks were the commit order then."""
    reports = list(reports)
    if any(r.last_order is None for r in reports):
        return sorted(reports, key=lambda r: (r.watermark_ms, r.snapshot_id))
    return sorted(reports, key=lambda r: (r.last_order, r.watermark_ms, r.snapshot_id))


@dataclass(frozen=True)
class WindowRun:
    """The record of one window of one task."""

    task: WindowTask
    window: Window
    state: RunState
    attempts: int = 0
    up_to_order: int | None = None
    last_error: str | None = None
    #: when a failed window may be tried again; None when failed for good (held)
    retry_at: datetime | None = None
    #: a job over Paimon tables: the snapshot id each input is read at, by sink table
    snapshots: Mapping[str, int] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        return self.state is RunState.FAILED and self.retry_at is None


@dataclass(frozen=True)
class TaskState:
    """A task's records: the end of its last succeeded window, the furthest end recorded, and
    the one window that is not succeeded yet, if any (windows run in order)."""

    done_end: datetime | None = None
    open: WindowRun | None = None

    @property
    def recorded_end(self) -> datetime | None:
        ends = [e for e in (self.done_end, self.open.window.end if self.open else None) if e]
        return max(ends) if ends else None


@dataclass(frozen=True)
class DueWindow:
    """A window to run now; ``attempt`` counts from 1."""

    task: WindowTask
    window: Window
    up_to_order: int | None
    attempt: int
    #: a job over Paimon tables: the snapshot id each input is read at, by sink table
    snapshots: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Waiting:
    """A task that cannot run now, its next window (if known) and why, for people to read."""

    task: WindowTask
    window: Window | None
    reason: str
    held: bool = False


@dataclass(frozen=True)
class Decision:
    due: tuple[DueWindow, ...] = ()
    waiting: tuple[Waiting, ...] = ()
    #: tasks whose window is executing in this process now
    running: tuple[WindowTask, ...] = ()


def mirror_task(sink: str) -> WindowTask:
    return WindowTask(TaskKind.MIRROR, sink)


def job_task(name: str) -> WindowTask:
    return WindowTask(TaskKind.JOB, name)


def cuts_since(specs: Sequence[TaskSpec], tasks: Mapping[WindowTask, TaskState]) -> int:
    """Epoch ms from which reports are needed to find merge cuts: the earliest end of a
    mirror's next window (or of a Paimon job's, whose snapshots are found the same way). The
    cut of a window ending at E is the first report, in commit order, whose own watermark is
    E or later (``TableState.cut``: none before it is complete to E), so earlier reports only
    served windows already recorded, with their cut. A tick then reads the reports since the
    last window's end at most, not since the oldest end any mirror merged to: under load that
    was every report of the window, at every tick."""
    ends = []
    for spec in specs:
        if spec.task.kind != TaskKind.MIRROR and not spec.pins_snapshots:
            continue
        done_end = tasks.get(spec.task, TaskState()).done_end
        if done_end is None:
            return 0  # its first window starts at its first watermark: all of them
        ends.append(_ms(Window.containing(done_end, spec.window).end))
    return min(ends, default=0)


def snapshots_in_use(
    specs: Sequence[TaskSpec],
    tables: Mapping[str, TableState],
    tasks: Mapping[WindowTask, TaskState],
) -> dict[str, int]:
    """Per table a Paimon job reads, the oldest snapshot id one of its windows may still read:
    a window recorded and not succeeded (pending, running, failed and waiting) reads the
    snapshots it was pinned to; the next window, not recorded yet, the first snapshot complete
    to its end, or (its end not reached yet) one at or after the newest reported; and each of
    these windows' changes (``db.`t$changes` ``) from the snapshot before the first complete
    to its start. What snapshot expiry must keep; ``tables`` must hold the reports from each
    job's last window end on (``scheduler.retention``)."""
    gate = _Gate(specs, tables, tasks)
    oldest: dict[str, int] = {}

    def keep(table: str, snapshot: int | None) -> None:
        if snapshot is not None:
            oldest[table] = min(snapshot, oldest.get(table, snapshot))

    def keep_start(table: str, start: datetime) -> None:
        # a window's changes start at the first snapshot complete to its start, which only the
        # snapshot before it proves (``tidemark.lake.paimon.changes_start``)
        first = gate.table(table).snapshot_at(start)
        if first is not None:
            keep(table, max(1, first - 1))

    for spec in specs:
        if not spec.pins_snapshots:
            continue
        run = tasks.get(spec.task, TaskState()).open
        if run is not None and run.state is not RunState.SUCCEEDED and run.snapshots:
            for table, snapshot in run.snapshots.items():
                keep(table, snapshot)
                keep_start(table, run.window.start)
            continue
        window = gate.next_window(spec)
        for table in spec.inputs:
            state = gate.table(table)
            pinned = None if window is None else state.snapshot_at(window.end)
            keep(table, pinned if pinned is not None else state.newest_snapshot)
            if window is not None:
                keep_start(table, window.start)
    return oldest


def decide(
    specs: Sequence[TaskSpec],
    tables: Mapping[str, TableState],
    tasks: Mapping[WindowTask, TaskState],
    now: datetime,
    in_flight: frozenset[WindowTask] = frozenset(),
) -> Decision:
    """The windows due now, mirrors first; for every other task, why it waits."""
    gate = _Gate(specs, tables, tasks)
    due: list[DueWindow] = []
    waiting: list[Waiting] = []
    running: list[WindowTask] = []
    for spec in sorted(specs, key=lambda s: (s.task.kind != TaskKind.MIRROR, s.task)):
        if spec.task in in_flight:
            running.append(spec.task)
            continue
        outcome = gate.evaluate(spec, now)
        if isinstance(outcome, DueWindow):
            due.append(outcome)
        else:
            waiting.append(outcome)
    return Decision(tuple(due), tuple(waiting), tuple(running))


class _Gate:
    def __init__(
        self,
        specs: Sequence[TaskSpec],
        tables: Mapping[str, TableState],
        tasks: Mapping[WindowTask, TaskState],
    ) -> None:
        self._specs = {spec.task: spec for spec in specs}
        self._tables = tables
        self._tasks = tasks
        self._mirrors = {s.task.name for s in specs if s.task.kind == TaskKind.MIRROR}

    def evaluate(self, spec: TaskSpec, now: datetime) -> DueWindow | Waiting:
        state = self._tasks.get(spec.task, TaskState())
        if state.open is not None and state.open.state is not RunState.SUCCEEDED:
            return self._reopen(spec, state.open, now)
        window = self.next_window(spec)
        if window is None:
            missing = [t for t in spec.inputs if self.table(t).first_watermark_ms is None]
            return Waiting(spec.task, None, f"no commit report yet from {', '.join(missing)}")
        blocker = self._blocker(spec, window)
        if blocker is not None:
            return Waiting(spec.task, window, blocker)
        up_to_order = None
        if spec.task.kind == TaskKind.MIRROR:
            up_to_order = self.table(spec.task.name).cut(window.end)
        snapshots: dict[str, int] = {}
        if spec.pins_snapshots:
            for table in spec.inputs:
                snapshot = self.table(table).snapshot_at(window.end)
                if snapshot is None:  # a report the history no longer holds: wait for one
                    return Waiting(
                        spec.task,
                        window,
                        f"waiting for a report of {table}'s snapshot at {_clock(window.end)}",
                    )
                snapshots[table] = snapshot
        return DueWindow(spec.task, window, up_to_order, 1, snapshots)

    def next_window(self, spec: TaskSpec) -> Window | None:
        """The task's next window to record: after its last succeeded one, or its first; for
        a job that coalesces, the one after its last succeeded one stretched to the last
        boundary its inputs are complete to."""
        state = self._tasks.get(spec.task, TaskState())
        if state.open is not None and state.open.state is not RunState.SUCCEEDED:
            return state.open.window
        if state.done_end is None:
            # a first window is never stretched: it is where the job's mirrors first stop
            return self._first_window(spec)
        # the window after it, on the boundaries of today's length: after a change of window in
        # the file, windows line up with midnight again at once
        window = Window.containing(state.done_end, spec.window)
        return self._coalesced(spec, window) if spec.coalesce else window

    def _coalesced(self, spec: TaskSpec, window: Window) -> Window:
        """``window`` ending at the last boundary every input is complete to, if later."""
        watermarks = [self.table(t).watermark_ms for t in spec.inputs]
        if not watermarks or any(w is None for w in watermarks):
            return window
        complete = min(w for w in watermarks if w is not None)
        end = Window.containing(from_epoch_ms(complete), spec.window).start
        return Window(window.start, end) if end > window.end else window

    def _first_window(self, spec: TaskSpec) -> Window | None:
        firsts = [self.table(t).first_watermark_ms for t in spec.inputs]
        if not firsts or any(f is None for f in firsts):
            return None
        end = Window.containing(from_epoch_ms(max(f for f in firsts if f is not None)), spec.window)
        first_end = end.end
        if spec.task.kind == TaskKind.JOB:
            for table in spec.inputs:
                recorded = self._tasks.get(mirror_task(table), TaskState()).recorded_end
                if table in self._mirrors and recorded is not None:
                    first_end = max(first_end, _ceil(recorded, spec.window))
        return Window.ending_at(first_end, spec.window)

    def _reopen(self, spec: TaskSpec, run: WindowRun, now: datetime) -> DueWindow | Waiting:
        if run.state in (RunState.PENDING, RunState.RUNNING):
            # recorded by a scheduler that stopped before the end: run it again (idempotent)
            return DueWindow(
                spec.task, run.window, run.up_to_order, run.attempts + 1, run.snapshots
            )
        if run.retry_at is None:
            return Waiting(
                spec.task,
                run.window,
                f"held after {run.attempts} failed attempt(s): {run.last_error}",
                held=True,
            )
        if now < run.retry_at:
            return Waiting(
                spec.task,
                run.window,
                f"retry {run.attempts + 1} at {_clock(run.retry_at)} after: {run.last_error}",
            )
        return DueWindow(spec.task, run.window, run.up_to_order, run.attempts + 1, run.snapshots)

    def _blocker(self, spec: TaskSpec, window: Window) -> str | None:
        for table in spec.inputs:
            watermark = self.table(table).watermark_ms
            if watermark is None or watermark < window.end_ms:
                shown = "none" if watermark is None else _clock(from_epoch_ms(watermark))
                return f"waiting for {table} watermark {shown} < {_clock(window.end)}"
        if spec.task.kind == TaskKind.MIRROR:
            return self._jobs_needing_cut(spec.task.name, window)
        return self._mirrors_not_at(spec, window)

    def _jobs_needing_cut(self, table: str, window: Window) -> str | None:
        """Rule 2: no job reading ``table`` may still need the mirror as of ``window.start``."""
        for spec in self._specs.values():
            if spec.task.kind != TaskKind.JOB or table not in spec.inputs:
                continue
            needed = self.next_window(spec)
            if needed is not None and needed.end < window.end:
                return (
                    f"waiting for {spec.task} to finish {needed} before merging past "
                    f"{_clock(needed.end)}"
                )
        return None

    def _mirrors_not_at(self, spec: TaskSpec, window: Window) -> str | None:
        """Rule 1: every input mirror stands exactly at ``window.end``."""
        for table in spec.inputs:
            if table not in self._mirrors:
                continue
            state = self._tasks.get(mirror_task(table), TaskState())
            moving = state.open is not None and state.open.state is not RunState.SUCCEEDED
            if state.done_end != window.end or moving:
                if state.done_end is not None and state.done_end > window.end:
                    return (
                        f"mirror of {table} is already merged to {_clock(state.done_end)}, past "
                        f"this window's end: the cut is gone; re-run it with a backfill"
                    )
                shown = "nothing" if state.done_end is None else _clock(state.done_end)
                return (
                    f"waiting for mirror of {table} merged to {shown}, needs {_clock(window.end)}"
                )
        return None

    def table(self, sink: str) -> TableState:
        return self._tables.get(sink, TableState())


def _ceil(instant: datetime, length: timedelta) -> datetime:
    """The first boundary of ``length`` at or after ``instant``."""
    return EPOCH - ((EPOCH - instant) // length) * length


def _ms(instant: datetime) -> int:
    return (instant - EPOCH) // timedelta(milliseconds=1)


def _clock(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%d %H:%M:%S")
