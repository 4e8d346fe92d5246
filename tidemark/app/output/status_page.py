"""The status page (``tidemark ui``): per pipeline, each table's freshness over the last hours,
each task's windows as a grid, and the newest error rows. Read-only HTML, no script: it reloads
itself every ``refresh`` seconds.

The page is laid out here, from what ``Pipeline.page`` returned, and drawn by the Jinja template
``templates/status_page.html``, which escapes every value (table names and error text come from
the source).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, select_autoescape

from scheduler.gate import RunState
from tidemark.app.output.freshness_chart import Chart, duration, freshness_chart
from tidemark.contracts.instance import Instance, LeaseHolders
from tidemark.freshness import lag_curve

if TYPE_CHECKING:
    from ingest.changelog.error_table import ErrorRow
    from ingest.changelog.status import TableStatus
    from scheduler.gate import WindowRun
    from scheduler.status import TaskStatus
    from tidemark.app.pipeline import PipelinePage
    from tidemark.windows import Window, WindowTask

_TEMPLATES = Environment(
    loader=PackageLoader("tidemark.app.output", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


@dataclass(frozen=True)
class TableView:
    sink: str
    #: "12 s", or why there is no watermark yet
    lag: str
    waiting: str | None
    chart: Chart | None


@dataclass(frozen=True)
class Cell:
    """One window of a task: done, running, due, waiting, failed (retrying) or held."""

    state: str
    label: str
    #: what the cell says on hover
    detail: str


@dataclass(frozen=True)
class TaskView:
    task: str
    cells: tuple[Cell, ...]
    condition: str
    reason: str

    @property
    def now(self) -> str:
        """``waiting for ...`` rather than ``waiting: waiting for ...``."""
        if self.reason.startswith(self.condition):
            return self.reason
        return f"{self.condition}: {self.reason}"


@dataclass(frozen=True)
class ProcessView:
    role: str
    state: str
    who: str


@dataclass(frozen=True)
class PipelineView:
    name: str
    tables: tuple[TableView, ...]
    #: None: why there are no windows to show
    tasks: tuple[TaskView, ...] | None
    no_tasks: str
    errors: tuple[ErrorRow, ...]
    error_rows: int
    processes: tuple[ProcessView, ...]
    hours: float


@dataclass(frozen=True)
class Unavailable:
    """A pipeline whose state could not be read this time, and why."""

    name: str
    problem: str


def status_page(
    pipelines: Sequence[PipelinePage | Unavailable], now: datetime, refresh_seconds: int
) -> str:
    views = [p if isinstance(p, Unavailable) else pipeline_view(p, now) for p in pipelines]
    return _TEMPLATES.get_template("status_page.html").render(
        pipelines=views,
        generated=f"{now.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC",
        refresh=refresh_seconds,
    )


def pipeline_view(page: PipelinePage, now: datetime) -> PipelineView:
    status = page.status
    tasks = None if status.windows is None else tuple(_tasks(status.windows, page.runs))
    if not status.scheduled:
        no_tasks = "This pipeline publishes no commit reports, so it has no windows."
    else:
        no_tasks = "No scheduler has run for this pipeline yet (tidemark schedule FILE)."
    return PipelineView(
        name=page.name,
        tables=tuple(_table(table, page, now) for table in status.tables),
        tasks=tasks,
        no_tasks=no_tasks,
        errors=tuple(page.errors),
        error_rows=sum(table.errors for table in status.tables),
        processes=(
            *_ingest(status.ingest, page.ingest_unknown),
            *_processes("scheduler", status.scheduler),
        ),
        hours=round((now - page.since).total_seconds() / 3600, 1),
    )


def _table(table: TableStatus, page: PipelinePage, now: datetime) -> TableView:
    waiting = table.state()
    if table.progress is None:
        waiting = "no changelog table yet" if not table.exists else "no commits yet"
    watermark = table.watermark_ms if waiting is None else None
    lag = table.watermark_lag_seconds(now) if watermark is not None else None
    curve = lag_curve(page.freshness.get(table.sink, ()), page.since, now, watermark)
    return TableView(
        sink=table.sink,
        lag="-" if lag is None else duration(max(0.0, lag)),
        waiting=waiting,
        chart=freshness_chart(curve, page.since, now) if curve else None,
    )


def _tasks(tasks: Sequence[TaskStatus], runs: Sequence[WindowRun]) -> list[TaskView]:
    by_task: dict[WindowTask, list[WindowRun]] = defaultdict(list)
    for run in runs:
        by_task[run.task].append(run)
    views = []
    for task in tasks:
        recorded = by_task.get(task.task, [])
        cells = [_run_cell(run) for run in recorded]
        upcoming = task.next_window
        if upcoming is not None and all(run.window != upcoming for run in recorded):
            cells.append(
                Cell(str(task.condition), _span(upcoming), f"{_span(upcoming)}: {task.reason}")
            )
        views.append(TaskView(str(task.task), tuple(cells), str(task.condition), task.reason))
    return views


def _run_cell(run: WindowRun) -> Cell:
    span = _span(run.window)
    tries = f"{run.attempts} attempt{'s' if run.attempts != 1 else ''}"
    if run.held:
        state, detail = "held", f"held after {tries}: {run.last_error or 'no error recorded'}"
    elif run.state is RunState.FAILED:
        retry = f"{run.retry_at.astimezone(UTC):%H:%M:%S} UTC" if run.retry_at else "later"
        state, detail = "failed", f"failed ({tries}), tried again at {retry}: {run.last_error}"
    elif run.state is RunState.SUCCEEDED:
        state, detail = "done", "done"
    elif run.state is RunState.PENDING:  # submitted, about to run: coloured as running
        state, detail = "running", "pending"
    else:
        state, detail = "running", f"running, {tries}"
    return Cell(state, span, f"{span}: {detail}")


def _span(window: Window) -> str:
    # PostgreSQL gives times in its session's zone: the page says UTC throughout
    start, end = window.start.astimezone(UTC), window.end.astimezone(UTC)
    return f"{start:%Y-%m-%d %H:%M}–{end:%H:%M} UTC"


def _ingest(holders: LeaseHolders | None, unknown: str | None) -> list[ProcessView]:
    if unknown is not None:
        return [ProcessView("ingest", "unknown", f"(the source could not be asked: {unknown})")]
    return _processes("ingest", holders)


def _processes(role: str, holders: LeaseHolders | None) -> list[ProcessView]:
    if holders is None:
        return []
    if holders.active is None:
        found = [ProcessView(role, "none active", "")]
    else:
        found = [_process(role, holders.active)]
    return found + [_process(role, standby) for standby in holders.standbys]


def _process(role: str, instance: Instance | str) -> ProcessView:
    if isinstance(instance, str):
        return ProcessView(role, "active", instance)
    since = f"since {instance.since:%Y-%m-%d %H:%M:%S} UTC"
    state = str(instance.state)
    if instance.waiting_for is not None:
        state = f"{state}, {instance.waiting_for}"
    return ProcessView(role, state, f"{instance.host} pid {instance.pid}, {since}")
