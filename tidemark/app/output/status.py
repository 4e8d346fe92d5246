"""``tidemark status`` (and the demo's live view): per sink table its watermark, lag, rows, late
changes and errors; then, when the pipeline publishes reports, per mirror and job its windows.

Plain output keeps the columns it had as hand-formatted text (scripts and tests split its lines
on whitespace); a table that has no watermark yet says why where its watermark would be, in a
line of its own that widens no column of the others."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.console import Group, NewLine, RenderableType
from rich.table import Column, Table
from rich.text import Text

from tidemark.app.output.tables import column_table, indented
from tidemark.contracts.instance import State

if TYPE_CHECKING:
    from ingest.changelog.status import TableStatus
    from tidemark.app.pipeline import PipelineStatus

#: the position sits two spaces off the errors column, as it always has
_POSITION_GAP = 1


def status_view(status: PipelineStatus, now: datetime) -> RenderableType:
    parts: list[RenderableType] = [
        Text(f"Could not read {what}", style="red") for what in status.unreadable
    ]
    parts.append(_tables(status, now))
    nulled = _nulled(status)
    if nulled is not None:
        parts += [NewLine(), nulled]
    if status.scheduled:
        parts += [NewLine(), _windows(status)]
    if status.ingest is not None or status.scheduler is not None:
        parts += [NewLine(), _processes(status)]
    return Group(*parts)


def _nulled(status: PipelineStatus) -> Table | None:
    """Per sink table and column, the values stored as NULL because the lake could not hold
    them (each also a row of the error table); None when there are none."""
    counts = [
        (f"{row.sink}.{column}", count)
        for row in status.tables
        if row.progress is not None
        for column, count in row.progress.nulled
    ]
    if not counts:
        return None
    table = column_table(
        Column("stored as NULL (see the error table)", min_width=40),
        Column("values", justify="right"),
    )
    for column, count in counts:
        table.add_row(column, Text(str(count), style="yellow"))
    return table


def _processes(status: PipelineStatus) -> Table:
    """The active ingest and scheduler of the pipeline, and their standbys."""
    table = column_table(
        Column("process", min_width=10),
        Column("state", min_width=8),
        Column("host"),
        Column("pid", justify="right"),
        Column("since"),
    )
    for role, holders in (("ingest", status.ingest), ("scheduler", status.scheduler)):
        if holders is None:
            continue
        if holders.active is None:
            table.add_row(role, Text("none", style="red"), "", "", "")
        for instance in [holders.active, *holders.standbys]:
            if isinstance(instance, str):
                table.add_row(role, "active", instance, "", "")
            elif instance is not None:
                style = "green" if instance.state is State.ACTIVE else ""
                state = Text(instance.state, style=style)
                if instance.waiting_for is not None:
                    state = Text(f"{instance.state}, {instance.waiting_for}", style="red")
                since = f"{instance.since:%Y-%m-%d %H:%M:%S} UTC"
                table.add_row(role, state, instance.host, str(instance.pid), since)
    return table


def _tables(status: PipelineStatus, now: datetime) -> Table:
    table = column_table(
        Column("sink table", min_width=32),
        Column("watermark", min_width=29),
        Column("lag", min_width=9, justify="right"),
        Column("rows", min_width=10, justify="right"),
        Column("late", min_width=6, justify="right"),
        Column("errors", min_width=7, justify="right"),
        Column(indented("position", _POSITION_GAP)),
    )
    for row in status.tables:
        why = _no_watermark(row)
        if why is None:
            table.add_row(*_table_row(row, now))
        else:  # the other rows keep their columns, however long the reason
            table.add_spanning_row(row.sink, why)
    return table


def _no_watermark(table: TableStatus) -> Text | None:
    """Why ``table`` has no watermark to show, if it has none."""
    if table.progress is None:
        return Text("no changelog table yet" if not table.exists else "no commits yet")
    waiting = table.state()
    return None if waiting is None else Text(waiting, style="yellow")


def _table_row(table: TableStatus, now: datetime) -> list[RenderableType]:
    progress, watermark_ms = table.progress, table.watermark_ms
    assert progress is not None and watermark_ms is not None  # else _no_watermark says why
    watermark = datetime.fromtimestamp(watermark_ms / 1000, UTC)
    return [
        table.sink,
        watermark.isoformat(timespec="milliseconds"),
        _seconds(table.watermark_lag_seconds(now)),
        "-" if table.total_rows is None else str(table.total_rows),  # Paimon: not known
        Text(str(progress.late_rows), style="yellow" if progress.late_rows else ""),
        Text(str(table.errors), style="red" if table.errors else ""),
        indented(str(progress.position), _POSITION_GAP),
    ]


def _windows(status: PipelineStatus) -> RenderableType:
    """Per mirror and job: the last window done, the next one, and why it waits."""
    if status.windows is None:
        return Text("windows: no scheduler has run for this pipeline yet (tidemark schedule FILE)")
    table = column_table(
        Column("task", min_width=40),
        Column("last window done", min_width=22),
        Column("next window", min_width=22),
        Column("state"),
    )
    for row in status.windows:
        done = row.last_succeeded.end.strftime("%Y-%m-%d %H:%M") if row.last_succeeded else "-"
        upcoming = row.next_window.end.strftime("%Y-%m-%d %H:%M") if row.next_window else "-"
        table.add_row(str(row.task), done, upcoming, f"{row.condition}: {row.reason}")
    return table


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
