"""How a bootstrap shows its progress: the display the bootstrapper reports to, and the one it
uses unless the application gives it another, log lines only (rows, rows/s, ETA).

Ingest draws nothing itself: ``tidemark ingest`` gives it bars on a terminal
(``tidemark.app.output.bootstrap_progress``), which log through this module too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tidemark.metrics import IngestMetrics

logger = logging.getLogger(__name__)


class BootstrapDisplay(Protocol):
    """Called from the bootstrap's threads: ``start``, ``advance`` and ``finish`` per source
    table, then ``close`` once, however the bootstrap ended (finished, failed or stopped)."""

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None: ...

    def advance(self, table: str, rows: int) -> None: ...

    def finish(self, table: str) -> None: ...

    def close(self) -> None:
        """The bootstrap is over: whatever the display put up goes (a table it did not
        finish included), and what it changed (a terminal's cursor, log handlers) is restored."""


@dataclass
class TableCount:
    """One table's rows read, and what follows from them; the rate is the mean since this
    run's start (rows a crashed run read before are no part of it)."""

    started: float
    rows_at_start: int
    rows: int
    estimated: int | None
    last_shown: float = 0.0

    def rate(self, now: float) -> float:
        return (self.rows - self.rows_at_start) / max(now - self.started, 1e-9)

    def share(self) -> float | None:
        return min(100.0, 100.0 * self.rows / self.estimated) if self.estimated else None

    def eta_seconds(self, now: float) -> float | None:
        rate = self.rate(now)
        if self.estimated and rate > 0 and self.estimated > self.rows:
            return (self.estimated - self.rows) / rate
        return None

    def line(self, table: str, now: float) -> str:
        """``shop.orders: 2,000 rows (20%), 1,000 rows/s, ETA 8 s``."""
        share = self.share()
        eta = self.eta_seconds(now)
        return (
            f"{table}: {self.rows:,} rows{'' if share is None else f' ({share:.0f}%)'}, "
            f"{self.rate(now):,.0f} rows/s{'' if eta is None else f', ETA {eta:,.0f} s'}"
        )


class LogDisplay:
    """Log lines from this module: one when a table starts and when it finishes, and between
    them its count at most every ``log_every`` seconds. Thread-safe: tables bootstrapped in
    parallel report to one display.

    A display that draws (bars on a terminal) extends it: its hooks run under the lock."""

    def __init__(
        self, *, log_every: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._every, self._clock = log_every, clock
        self._tables: dict[str, TableCount] = {}
        self._lock = threading.Lock()

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        with self._lock:
            now = self._clock()
            count = TableCount(now, rows_done, rows_done, estimated_rows, now)
            self._tables[table] = count
            self._started(table, count)
        logger.info(
            "Bootstrapping %s (about %s rows%s)",
            table,
            "?" if estimated_rows is None else f"{estimated_rows:,}",
            f", {rows_done:,} read before" if rows_done else "",
        )

    def advance(self, table: str, rows: int) -> None:
        with self._lock:
            count = self._tables[table]
            count.rows += rows
            self._advanced(table, count)

    def finish(self, table: str) -> None:
        with self._lock:
            count = self._tables.pop(table)
            now = self._clock()
            self._finished(table, count)
        logger.info(
            "Bootstrapped %s: %s rows in %.1f s (%s rows/s)",
            table,
            f"{count.rows:,}",
            now - count.started,
            f"{count.rate(now):,.0f}",
        )

    def close(self) -> None:
        with self._lock:
            self._tables.clear()
            self._closed()

    def _started(self, table: str, count: TableCount) -> None:
        pass

    def _advanced(self, table: str, count: TableCount) -> None:
        now = self._clock()
        if now - count.last_shown < self._every:
            return
        count.last_shown = now
        logger.info("Bootstrap %s", count.line(table, now))

    def _finished(self, table: str, count: TableCount) -> None:
        pass

    def _closed(self) -> None:
        pass


class MetricsDisplay:
    """Another display, and the bootstrap's rows in Prometheus metrics beside it
    (``tidemark_ingest_bootstrap_rows``, per source table)."""

    def __init__(self, inner: BootstrapDisplay, metrics: IngestMetrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None:
        self._metrics.bootstrap(table, rows_done, estimated_rows)
        self._inner.start(table, rows_done, estimated_rows)

    def advance(self, table: str, rows: int) -> None:
        self._metrics.bootstrap_read(table, rows)
        self._inner.advance(table, rows)

    def finish(self, table: str) -> None:
        self._inner.finish(table)

    def close(self) -> None:
        self._inner.close()
