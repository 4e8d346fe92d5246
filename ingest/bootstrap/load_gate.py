"""The bootstrap holds its reads while the source is busy: gh-ost's ``--max-load``.

``tidemark.ingest.snapshot-max-threads-running``: before each chunk the bootstrap reads the
source's ``Threads_running`` (threads not idle at that instant, on every server; a reading is
used for a second), and while more than the limit run besides its own sampling query it waits,
reading again once a second. A source that is quiet gets the bootstrap at full speed; a busy
one gets none of it until its own work drops. The reads in flight when the gate closes (a chunk
being read, the readers' chunks ahead) finish, so the gate acts at most ``pipeline.parallelism``
chunks late.

It is a gate, not a rate: on a source that never falls under the limit the bootstrap waits for
ever, saying so in a log line once a minute. The limit is the operator's: gh-ost's and
pt-online-schema-change's usual ``Threads_running=25`` for a large server. Threads that are
never idle count too (replicas' and Tidemark's own binlog dump threads, MySQL's event
scheduler), so the limit must sit above what the quiet server reads; the benchmark's source on
one core reads 0 or 1 quiet and 3 to 5 under sysbench. Unlike a MySQL resource group
(``tidemark.bulk_reads``) it works on MariaDB and needs no privilege."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pymysql

from tidemark.source import SourceConnection

logger = logging.getLogger(__name__)

#: the statement that samples is itself running when it is counted
_OWN_SAMPLE = 1


class LoadReading(Protocol):
    """How many statements the source runs at this instant, the sampling one included."""

    def __call__(self) -> int: ...

    def close(self) -> None: ...


class ThreadsRunning:
    """``source``'s ``Threads_running``, on a connection of its own, opened on first use and
    opened again once when it fails (a server's ``wait_timeout`` closes an idle one)."""

    def __init__(self, source: SourceConnection) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._conn: Any = None

    def __call__(self) -> int:
        with self._lock:
            try:
                return self._read()
            except pymysql.OperationalError:
                self._close()
                return self._read()

    def close(self) -> None:
        with self._lock:
            self._close()

    def _read(self) -> int:
        if self._conn is None:
            self._conn = self._source.connect()
        with self._conn.cursor() as cursor:
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Threads_running'")
            row = cursor.fetchone()
        return int(row[1]) if row else 0

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


@dataclass
class LoadGate:
    """Waits while the source runs more than ``limit`` statements besides the sampling one;
    shared by every reader of a bootstrap. None: never waits. A reading is used for ``every``
    seconds: the statement sums every thread's status on MySQL, a cost to the source that one
    a second keeps small (gh-ost's rate)."""

    limit: int | None
    read_running: LoadReading
    stop: threading.Event
    clock: Callable[[], float] = time.monotonic
    #: seconds a reading is used for, and between two readings while held
    every: float = 1.0
    #: seconds between two log lines that the bootstrap is still held
    log_every: float = 60.0
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _last: tuple[float, int] | None = field(default=None, init=False, repr=False)

    def wait(self) -> bool:
        """Returns when the source is under the limit (True), or when ``stop`` is set (False)."""
        if self.limit is None:
            return not self.stop.is_set()
        with self._lock:  # one reader samples; the others wait for its verdict
            running = self._others()
            if running <= self.limit:
                return not self.stop.is_set()
            began = last_log = self.clock()
            logger.info(
                "Bootstrap held: the source runs %d statements (Threads_running), more than "
                "tidemark.ingest.snapshot-max-threads-running %d",
                running,
                self.limit,
            )
            while running > self.limit:
                if self.stop.wait(self.every):
                    return False
                running = self._others()
                if self.clock() - last_log >= self.log_every:
                    last_log = self.clock()
                    logger.info(
                        "Bootstrap still held after %.0f s: the source runs %d statements",
                        last_log - began,
                        running,
                    )
            logger.info("Bootstrap goes on after %.1f s held", self.clock() - began)
            return True

    def close(self) -> None:
        self.read_running.close()

    def _others(self) -> int:
        now = self.clock()
        if self._last is None or now - self._last[0] >= self.every:
            self._last = (now, self.read_running() - _OWN_SAMPLE)
        return self._last[1]
