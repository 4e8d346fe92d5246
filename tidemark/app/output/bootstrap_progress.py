"""How a bootstrap shows its progress on a terminal: a bar per table with rows read, share of
the estimate, rows/s and ETA, redrawn at most every 0.2 s. Elsewhere what ingest shows without
it: a log line per table at most every ``log_every`` seconds (``ingest.bootstrap.display``).
Either way a log line when a table starts and finishes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TextIO

from rich.progress import BarColumn, ProgressColumn, Task, TaskID

from ingest.bootstrap.display import LogDisplay, TableCount
from tidemark.app.output.console import console_for, is_terminal
from tidemark.app.output.progress_bars import ProgressBars, TextOf

#: a terminal redraws faster than people read, and each redraw costs the reading thread
_TERMINAL_EVERY = 0.2


class BootstrapProgress(LogDisplay):
    """The display ``tidemark ingest`` gives the bootstrap (``ingest.bootstrap.display``'s
    ``BootstrapDisplay``): bars on ``stream`` (stderr) when it is a terminal, or as
    ``terminal`` says. Thread-safe, as ``LogDisplay`` is."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        terminal: bool | None = None,
        width: int | None = None,
        log_every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(log_every=log_every, clock=clock)
        stream = stream or sys.stderr
        terminal = is_terminal(stream) if terminal is None else terminal
        self._bars = (
            ProgressBars(console_for(stream, True, width), _columns(), clock, every=_TERMINAL_EVERY)
            if terminal
            else None
        )
        self._bar_of: dict[str, TaskID] = {}

    def _started(self, table: str, count: TableCount) -> None:
        if self._bars is not None:
            self._bar_of[table] = self._bars.add(
                table, total=count.estimated, completed=count.rows, table=count
            )

    def _advanced(self, table: str, count: TableCount) -> None:
        if self._bars is None:
            super()._advanced(table, count)
            return
        self._bars.update(self._bar_of[table], completed=count.rows)
        self._bars.draw()

    def _finished(self, table: str, count: TableCount) -> None:
        if self._bars is not None:
            self._bars.remove(self._bar_of.pop(table))
            if self._bars.empty:
                self._bars.close()  # the bars go; the log line that follows stays

    def _closed(self) -> None:
        if self._bars is not None:
            self._bars.close()  # cleared, the cursor shown, log handlers given back
            self._bar_of.clear()


def _columns() -> list[ProgressColumn]:
    """``shop.orders: 2,000 rows ━━━━━━━━━━━━━━━━━  20%  1,000 rows/s  ETA 0:00:08``; a table
    without an estimate has a bar that pulses, and no share or ETA."""

    def table_of(task: Task) -> TableCount:
        count: TableCount = task.fields["table"]
        return count

    def share(task: Task) -> str:
        value = table_of(task).share()
        return "" if value is None else f"{value:.0f}%"

    def eta(task: Task) -> str:
        seconds = table_of(task).eta_seconds(task.get_time())
        return "" if seconds is None else f"ETA {timedelta(seconds=round(seconds))}"

    def rate(task: Task) -> str:
        return f"{table_of(task).rate(task.get_time()):,.0f} rows/s"

    return [
        TextOf(lambda task: f"{task.description}: {table_of(task).rows:,} rows"),
        BarColumn(),
        TextOf(share, justify="right"),
        TextOf(rate, justify="right", wraps=True),
        TextOf(eta, wraps=True),
    ]
