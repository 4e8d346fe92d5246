"""How a bootstrap shows its progress, per table: rows read, share of the estimate, rows/s and
ETA. On a terminal a bar per table, redrawn at most every 0.2 s; elsewhere a log line per table
at most every ``log_every`` seconds. Either way a log line when a table starts and finishes."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TextIO

from rich.progress import BarColumn, ProgressColumn, Task, TaskID

from tidemark.output.console import console_for, is_terminal
from tidemark.output.progress_bars import ProgressBars, TextOf

logger = logging.getLogger(__name__)

#: a terminal redraws faster than people read, and each redraw costs the reading thread
_TERMINAL_EVERY = 0.2


@dataclass
class _Table:
    """One table's count, and what follows from it; the rate is the mean since this run's
    start (rows a crashed run read before are no part of it)."""

    started: float
    rows_at_start: int
    rows: int
    estimated: int | None
    last_shown: float = 0.0
    bar: TaskID | None = None

    def rate(self, now: float) -> float:
        return (self.rows - self.rows_at_start) / max(now - self.started, 1e-9)

    def share(self) -> float | None:
        return min(100.0, 100.0 * self.rows / self.estimated) if self.estimated else None

    def eta_seconds(self, now: float) -> float | None:
        rate = self.rate(now)
        if self.estimated and rate > 0 and self.estimated > self.rows:
            return (self.estimated - self.rows) / rate
        return None


class BootstrapProgress:
    """Thread-safe: tables bootstrapped in parallel report to one display. Implements
    ``ingest.bootstrap.display.BootstrapDisplay``."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        terminal: bool | None = None,
        width: int | None = None,
        log_every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        log: logging.Logger = logger,
    ) -> None:
        stream = stream or sys.stderr
        self._terminal = is_terminal(stream) if terminal is None else terminal
        self._every = _TERMINAL_EVERY if self._terminal else log_every
        self._clock, self._log = clock, log
        self._tables: dict[str, _Table] = {}
        self._lock = threading.Lock()
        self._bars = (
            ProgressBars(console_for(stream, True, width), _columns(), clock, every=self._every)
            if self._terminal
            else None
        )

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        with self._lock:
            now = self._clock()
            state = _Table(now, rows_done, rows_done, estimated_rows, now)
            self._tables[table] = state
            if self._bars is not None:
                state.bar = self._bars.add(
                    table, total=estimated_rows, completed=rows_done, table=state
                )
        self._log.info(
            "Bootstrapping %s (about %s rows%s)",
            table,
            "?" if estimated_rows is None else f"{estimated_rows:,}",
            f", {rows_done:,} read before" if rows_done else "",
        )

    def advance(self, table: str, rows: int) -> None:
        with self._lock:
            state = self._tables[table]
            state.rows += rows
            if self._bars is not None and state.bar is not None:
                self._bars.update(state.bar, completed=state.rows)
                self._bars.draw()
                return
            now = self._clock()
            if now - state.last_shown < self._every:
                return
            state.last_shown = now
            self._log.info("Bootstrap %s", _line(table, state, now))

    def finish(self, table: str) -> None:
        with self._lock:
            state = self._tables.pop(table)
            now = self._clock()
            if self._bars is not None and state.bar is not None:
                self._bars.remove(state.bar)
                if self._bars.empty:
                    self._bars.close()  # the bars go; the log line below stays
        self._log.info(
            "Bootstrapped %s: %s rows in %.1f s (%s rows/s)",
            table,
            f"{state.rows:,}",
            now - state.started,
            f"{state.rate(now):,.0f}",
        )


def _line(table: str, state: _Table, now: float) -> str:
    """The log line: ``shop.orders: 2,000 rows (20%), 1,000 rows/s, ETA 8 s``."""
    share = state.share()
    eta = state.eta_seconds(now)
    return (
        f"{table}: {state.rows:,} rows{'' if share is None else f' ({share:.0f}%)'}, "
        f"{state.rate(now):,.0f} rows/s{'' if eta is None else f', ETA {eta:,.0f} s'}"
    )


def _columns() -> list[ProgressColumn]:
    """``shop.orders: 2,000 rows ━━━━━━━━━━━━━━━━━  20%  1,000 rows/s  ETA 0:00:08``; a table
    without an estimate has a bar that pulses, and no share or ETA."""

    def table_of(task: Task) -> _Table:
        state: _Table = task.fields["table"]
        return state

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
