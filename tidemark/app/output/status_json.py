"""``tidemark status --json``: what ``tidemark status`` shows, as one JSON document for scripts.

The document's shape is these models (docs/operations.md#status-as-json names every field);
times are ISO 8601 in UTC, absent values ``null``. Fields are only ever added.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from tidemark.contracts.instance import Instance, LeaseHolders

if TYPE_CHECKING:
    from ingest.changelog.status import TableStatus
    from scheduler.status import TaskStatus
    from tidemark.app.pipeline import PipelineStatus
    from tidemark.source import BinlogPosition
    from tidemark.windows import Window


class _Document(BaseModel):
    model_config = ConfigDict(frozen=True)


class Position(_Document):
    file: str
    offset: int


class WindowBounds(_Document):
    start: datetime
    end: datetime


class TableEntry(_Document):
    sink: str
    changelog: str
    exists: bool
    #: how far the table is complete; null before its first commit or while it bootstraps
    watermark: datetime | None
    lag_seconds: float | None
    #: why there is no watermark yet ("bootstrapping: ...", "bootstrapped; streaming up to ...",
    #: "waiting for the stream's first binlog event")
    state: str | None
    position: Position | None
    rows: int | None
    late_rows: int
    error_rows: int
    #: values stored as NULL because the lake could not hold them, per column
    stored_as_null: dict[str, int]
    bootstrap_rows: int | None
    last_commit: datetime | None
    snapshot_id: int | None


class TaskEntry(_Document):
    task: str
    kind: str
    name: str
    condition: str
    reason: str
    last_succeeded: WindowBounds | None
    next_window: WindowBounds | None


class ProcessEntry(_Document):
    state: str
    #: null for an active process that does not say who it is
    host: str | None
    pid: int | None
    since: datetime | None
    description: str | None = None
    #: what an active process waits for: ``waiting for the catalog since ...``
    waiting_for: str | None = None


class ProcessesEntry(_Document):
    active: ProcessEntry | None
    standbys: list[ProcessEntry]


class StatusDocument(_Document):
    generated_at: datetime
    tables: list[TableEntry]
    #: whether the pipeline publishes commit reports (and so has windows)
    scheduled: bool
    #: per mirror and job; null when no scheduler has run for the pipeline
    tasks: list[TaskEntry] | None
    ingest: ProcessesEntry | None
    scheduler: ProcessesEntry | None
    #: what could not be read because a service is down ("the changelog tables: the catalog
    #: (...)"); ``tables`` is empty then
    unreadable: list[str] = []


def status_json(status: PipelineStatus, now: datetime) -> str:
    return status_document(status, now).model_dump_json(indent=2)


def status_document(status: PipelineStatus, now: datetime) -> StatusDocument:
    return StatusDocument(
        generated_at=now.astimezone(UTC),
        tables=[_table(table, now) for table in status.tables],
        scheduled=status.scheduled,
        tasks=None if status.windows is None else [_task(task) for task in status.windows],
        ingest=_processes(status.ingest),
        scheduler=_processes(status.scheduler),
        unreadable=list(status.unreadable),
    )


def _table(table: TableStatus, now: datetime) -> TableEntry:
    progress, state = table.progress, table.state()
    watermark_ms = table.watermark_ms if state is None else None
    watermark = (
        datetime.fromtimestamp(watermark_ms / 1000, UTC) if watermark_ms is not None else None
    )
    return TableEntry(
        sink=table.sink,
        changelog=table.changelog,
        exists=table.exists,
        watermark=watermark,
        lag_seconds=table.watermark_lag_seconds(now) if watermark is not None else None,
        state=state,
        position=_position(progress.position) if progress is not None else None,
        rows=table.total_rows,
        late_rows=progress.late_rows if progress is not None else 0,
        error_rows=table.errors,
        stored_as_null=dict(progress.nulled) if progress is not None else {},
        bootstrap_rows=table.bootstrap.rows if table.bootstrap is not None else None,
        last_commit=table.committed_at,
        snapshot_id=table.snapshot_id,
    )


def _position(position: BinlogPosition) -> Position:
    return Position(file=position.file, offset=position.offset)


def _task(task: TaskStatus) -> TaskEntry:
    return TaskEntry(
        task=str(task.task),
        kind=str(task.task.kind),
        name=task.task.name,
        condition=str(task.condition),
        reason=task.reason,
        last_succeeded=_bounds(task.last_succeeded),
        next_window=_bounds(task.next_window),
    )


def _bounds(window: Window | None) -> WindowBounds | None:
    return None if window is None else WindowBounds(start=window.start, end=window.end)


def _processes(holders: LeaseHolders | None) -> ProcessesEntry | None:
    if holders is None:
        return None
    return ProcessesEntry(
        active=_process(holders.active), standbys=[_process_of(i) for i in holders.standbys]
    )


def _process(instance: Instance | str | None) -> ProcessEntry | None:
    if instance is None:
        return None
    if isinstance(instance, str):
        return ProcessEntry(state="active", host=None, pid=None, since=None, description=instance)
    return _process_of(instance)


def _process_of(instance: Instance) -> ProcessEntry:
    return ProcessEntry(
        state=str(instance.state),
        host=instance.host,
        pid=instance.pid,
        since=instance.since,
        waiting_for=instance.waiting_for,
    )
