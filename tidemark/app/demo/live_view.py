"""The demo's terminal view: what the pipeline has reached, redrawn in place in a terminal, or
printed as a block every so often when the output is a log (``tidemark.app.output.live``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TextIO

from rich.console import Group, NewLine, RenderableType
from rich.table import Column
from rich.text import Text

from tidemark.app.demo.report_rows import LatestReport
from tidemark.app.demo.workload import ADDED_COLUMN, WorkloadCounts
from tidemark.app.output.live import LiveScreen
from tidemark.app.output.tables import column_table, indented


@dataclass(frozen=True)
class DemoFrame:
    """One picture of the demo."""

    elapsed: timedelta
    duration: timedelta
    #: what the demo is doing, for people
    phase: str
    workload: WorkloadCounts
    #: ``tidemark status``'s view: tables, then windows (``tidemark.app.output.status``)
    status: RenderableType
    report: LatestReport | None


def frame_view(frame: DemoFrame) -> RenderableType:
    counts = frame.workload
    altered = (
        f"ALTER TABLE orders ADD COLUMN {ADDED_COLUMN} ran at {_clock(counts.altered_after)}"
        if counts.altered_after is not None
        else f"ALTER TABLE orders ADD COLUMN {ADDED_COLUMN} still to come"
    )
    return Group(
        Text(
            f"Tidemark demo  {_clock(frame.elapsed.total_seconds())} "
            f"(the shoppers write for {_clock(frame.duration.total_seconds())})  {frame.phase}",
            style="bold",
        ),
        Text(
            f"workload: {counts.transactions:,} transactions ({counts.inserts:,} inserts, "
            f"{counts.updates:,} updates, {counts.deletes:,} deletes); {altered}"
        ),
        NewLine(),
        frame.status,
        NewLine(),
        _report(frame.report),
    )


def _report(report: LatestReport | None) -> RenderableType:
    if report is None:
        return Text("report demo_report.shop_per_window: no window yet")
    table = column_table(
        Column("country", min_width=8),
        Column("orders", min_width=7, justify="right"),
        Column("revenue", min_width=12, justify="right"),
    )
    for row in report.rows:
        table.add_row(row.country, str(row.orders), str(row.revenue))
    return Group(
        Text(
            f"report demo_report.shop_per_window, window [{report.window_start:%H:%M}, "
            f"{report.window_end:%H:%M}) (of {report.windows} windows):"
        ),
        indented(table, 2),
    )


def _clock(seconds: float | None) -> str:
    whole = int(seconds or 0)
    return f"{whole // 60}:{whole % 60:02d}"


class LiveView:
    """Shows frames on ``out``: every frame in place in a terminal, else one every
    ``log_every`` seconds of demo time (and the last one, ``final=True``). ``close`` (or the
    final frame) ends the redrawing; what is written to ``out`` next goes below."""

    def __init__(
        self, out: TextIO, interactive: bool, log_every: timedelta = timedelta(seconds=30)
    ) -> None:
        self._screen = LiveScreen(out, terminal=interactive)
        self._log_every = log_every
        self._last_logged: timedelta | None = None

    def show(self, frame: DemoFrame, final: bool = False) -> None:
        if self._screen.terminal:
            self._screen.show(frame_view(frame))
        else:
            due = self._last_logged is None or frame.elapsed - self._last_logged >= self._log_every
            if not (due or final):
                return
            self._last_logged = frame.elapsed
            self._screen.show(frame_view(frame))
        if final:
            self.close()

    def close(self) -> None:
        self._screen.close()
