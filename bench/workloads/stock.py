"""A workload whose changes are known, and ingest processes to run against it: for the takeover
benchmark and the crash and standby tests (``tests/ingest/stock_workload.py`` holds their check
that the changelog has each change once, in order)."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from ingest.lease import lease_holders
from tidemark.contracts.instance import Instance
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import SourceEndpoint

Change = tuple[str, int | None]  # (operation, qty after the change; None for a delete)


class Workload:
    """Single-threaded, so the order of its commits is the binlog's: the ground truth."""

    def __init__(
        self,
        source: SourceConnection,
        database: str,
        seed: int,
        statements: tuple[int, int],
        pause: float,
    ) -> None:
        self._statements = statements
        self._pause = pause
        self._source = source
        self._database = database
        self._random = random.Random(seed)
        self.truth: dict[int, list[Change]] = defaultdict(list)
        self._live: dict[int, int] = {}  # id -> qty
        self._next_id = 1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.transactions = 0

    def start(self) -> None:
        """Write in a thread of its own until ``stop``; after a ``stop``, go on writing (on a
        new connection: the source may have restarted in between)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="workload")
        self._thread.start()

    def run(self) -> None:
        with self._source.connect() as conn, conn.cursor() as cursor:
            conn.select_db(self._database)
            conn.autocommit(False)
            while not self._stop.is_set():
                count = self._random.randint(*self._statements)
                changes = [self._statement(cursor) for _ in range(count)]
                conn.commit()
                for key, change in changes:
                    self.truth[key].append(change)
                self.transactions += 1
                self._stop.wait(self._pause)  # paces the load; returns at once when stopped

    def stop(self) -> None:
        """Stop writing; returns once the last transaction is committed and in ``truth``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _statement(self, cursor: object) -> tuple[int, Change]:
        choice = self._random.random()
        if not self._live or choice < 0.5:
            key, self._next_id = self._next_id, self._next_id + 1
            qty = self._random.randint(1, 1000)
            cursor.execute(f"INSERT INTO stock VALUES ({key}, {qty})")  # type: ignore[attr-defined]
            self._live[key] = qty
            return key, ("c", qty)
        key = self._random.choice(sorted(self._live))
        if choice < 0.85:
            # a different value: an UPDATE that changes nothing is not in the binlog
            qty = self._live[key] % 1000 + 1
            cursor.execute(f"UPDATE stock SET qty = {qty} WHERE id = {key}")  # type: ignore[attr-defined]
            self._live[key] = qty
            return key, ("u", qty)
        cursor.execute(f"DELETE FROM stock WHERE id = {key}")  # type: ignore[attr-defined]
        del self._live[key]
        return key, ("d", None)


def create_stock(source: SourceEndpoint, database: str) -> None:
    admin = source.admin_source()
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE TABLE `{database}`.stock (id INT PRIMARY KEY, qty INT)")


def ingest(pipeline: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tidemark.app.cli", "ingest", str(pipeline), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def active_ingest(
    source: SourceConnection, lease: str, among: Sequence[subprocess.Popen[str]]
) -> subprocess.Popen[str] | None:
    """The process of ``among`` that holds the pipeline's ``lease``, if one does: a killed
    holder's connection ends only when the server next writes to it."""
    active = lease_holders(source, lease).active
    if not isinstance(active, Instance):
        return None
    return next((process for process in among if process.pid == active.pid), None)
