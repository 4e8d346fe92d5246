"""How a bootstrap shows its progress: a live line per table in a terminal, throttled logs
otherwise (rows, rows/s, ETA)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TextIO

logger = logging.getLogger(__name__)


class BootstrapDisplay(Protocol):
    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None: ...

    def advance(self, table: str, rows: int) -> None: ...

    def finish(self, table: str) -> None: ...


@dataclass
class _Table:
    started: float
    rows_at_start: int
    rows: int
    estimated: int | None
    last_shown: float = 0.0


class ProgressDisplay:
    """Thread-safe: tables bootstrapped in parallel report to one display."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interactive: bool | None = None,
        log_every_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream or sys.stderr
        self._interactive = self._stream.isatty() if interactive is None else interactive
        self._every = 0.2 if self._interactive else log_every_seconds
        self._clock = clock
        self._tables: dict[str, _Table] = {}
        self._lock = threading.Lock()

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        with self._lock:
            now = self._clock()
            self._tables[table] = _Table(now, rows_done, rows_done, estimated_rows, now)
        logger.info(
            "Bootstrapping %s (about %s rows%s)",
            table,
            "?" if estimated_rows is None else f"{estimated_rows:,}",
            f", {rows_done:,} read before" if rows_done else "",
        )

    def advance(self, table: str, rows: int) -> None:
        with self._lock:
            state = self._tables[table]
            state.rows += rows
            now = self._clock()
            if now - state.last_shown < self._every:
                return
            state.last_shown = now
            self._show(table, state, now)

    def finish(self, table: str) -> None:
        with self._lock:
            state = self._tables.pop(table)
            now = self._clock()
            if self._interactive:
                self._stream.write("\r\033[K")
        logger.info(
            "Bootstrapped %s: %s rows in %.1f s (%s rows/s)",
            table,
            f"{state.rows:,}",
            now - state.started,
            f"{_rate(state, now):,.0f}",
        )

    def _show(self, table: str, state: _Table, now: float) -> None:
        rate = _rate(state, now)
        eta = ""
        if state.estimated and rate > 0 and state.estimated > state.rows:
            eta = f", ETA {(state.estimated - state.rows) / rate:,.0f} s"
        share = ""
        if state.estimated:
            share = f" ({min(100.0, 100.0 * state.rows / state.estimated):.0f}%)"
        line = f"{table}: {state.rows:,} rows{share}, {rate:,.0f} rows/s{eta}"
        if self._interactive:
            self._stream.write(f"\r\033[K{line}")
            self._stream.flush()
        else:
            logger.info("Bootstrap %s", line)


def _rate(state: _Table, now: float) -> float:
    return (state.rows - state.rows_at_start) / max(now - state.started, 1e-9)
