"""The demo's terminal view: what the pipeline has reached, redrawn in place in a terminal, or
printed as a block every so often when the output is a log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TextIO

from tidemark.demo.report_rows import LatestReport
from tidemark.demo.workload import ADDED_COLUMN, WorkloadCounts

#: move to the top left and clear the screen
_REDRAW = "\x1b[H\x1b[J"


@dataclass(frozen=True)
class DemoFrame:
    """One picture of the demo."""

    elapsed: timedelta
    duration: timedelta
    #: what the demo is doing, for people
    phase: str
    workload: WorkloadCounts
    #: ``tidemark status``'s lines: tables, then windows
    status: Sequence[str]
    report: LatestReport | None


def render(frame: DemoFrame) -> str:
    counts = frame.workload
    altered = (
        f"ALTER TABLE orders ADD COLUMN {ADDED_COLUMN} ran at {_clock(counts.altered_after)}"
        if counts.altered_after is not None
        else f"ALTER TABLE orders ADD COLUMN {ADDED_COLUMN} still to come"
    )
    lines = [
        f"Tidemark demo  {_clock(frame.elapsed.total_seconds())} "
        f"(the shoppers write for {_clock(frame.duration.total_seconds())})  {frame.phase}",
        f"workload: {counts.transactions:,} transactions ({counts.inserts:,} inserts, "
        f"{counts.updates:,} updates, {counts.deletes:,} deletes); {altered}",
        "",
        *frame.status,
        "",
        *_report_lines(frame.report),
    ]
    return "\n".join(lines) + "\n"


def _report_lines(report: LatestReport | None) -> list[str]:
    if report is None:
        return ["report demo_report.shop_per_window: no window yet"]
    lines = [
        f"report demo_report.shop_per_window, window [{report.window_start:%H:%M}, "
        f"{report.window_end:%H:%M}) (of {report.windows} windows):",
        f"  {'country':<8} {'orders':>7} {'revenue':>12}",
    ]
    lines += [f"  {row.country:<8} {row.orders:>7} {row.revenue:>12}" for row in report.rows]
    return lines


def _clock(seconds: float | None) -> str:
    whole = int(seconds or 0)
    return f"{whole // 60}:{whole % 60:02d}"


class LiveView:
    """Shows frames on ``out``: every frame in place in a terminal, else one every
    ``log_every`` seconds of demo time (and the last one, ``final=True``)."""

    def __init__(
        self, out: TextIO, interactive: bool, log_every: timedelta = timedelta(seconds=30)
    ) -> None:
        self._out = out
        self._interactive = interactive
        self._log_every = log_every
        self._last_logged: timedelta | None = None

    def show(self, frame: DemoFrame, final: bool = False) -> None:
        if self._interactive:
            self._write(_REDRAW + render(frame))
            return
        due = self._last_logged is None or frame.elapsed - self._last_logged >= self._log_every
        if due or final:
            self._last_logged = frame.elapsed
            self._write(render(frame) + "\n")

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


FrameSource = Callable[[], DemoFrame]
