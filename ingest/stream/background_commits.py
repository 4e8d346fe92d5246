"""Changelog commits running on a thread pool while the ingest loop reads on.

At most one commit per table is in flight, so a table's commits land in the order they were
made; the loop hands out a table's rows when it has a free slot (``IngestRunner._top_up``) and
collects what ended on its own thread, where counts and reports are kept; a commit that ends
wakes the loop (``waking``), so that waiting rows take its slot at once rather than at the next
binlog event, which may be a heartbeat a second away, or none at all. A commit spends
about half its time waiting for the catalog's database and the files, which the other threads
use; the rest holds Python's lock, so more threads than a few add nothing on one core.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ingest.stream.assembler import TableFlush
from tidemark.sinks.commits import Commit
from tidemark.sinks.protocols import ChangelogWriter


@dataclass(frozen=True)
class Ended:
    """A commit that ended: what it made, or why it failed."""

    table_flush: TableFlush
    table: ChangelogWriter
    commit: Commit | None
    error: BaseException | None


class BackgroundCommits:
    """Commits in flight on ``pool``, at most ``slots`` of them and one per table."""

    def __init__(self, pool: ThreadPoolExecutor, slots: int) -> None:
        self._pool = pool
        self.slots = slots
        self._in_flight: dict[str, tuple[TableFlush, ChangelogWriter, Future[Commit]]] = {}
        #: commits that ended, appended by the pool's threads (deque appends are atomic)
        self._ended: deque[tuple[str, Future[Commit]]] = deque()
        #: called on a pool thread after each commit ends (``waking``)
        self._wake: Callable[[], None] = _nothing

    @contextlib.contextmanager
    def waking(self, wake: Callable[[], None]) -> Iterator[None]:
        """Call ``wake`` (from the pool's threads) after each commit that ends in the block."""
        self._wake = wake
        try:
            yield
        finally:
            self._wake = _nothing

    def _ended_one(self, sink: str, done: Future[Commit]) -> None:
        self._ended.append((sink, done))
        self._wake()

    def __contains__(self, sink: object) -> bool:
        return sink in self._in_flight

    def sinks_with_rows(self) -> list[str]:
        """The tables with a commit of rows in flight (not an idle table's empty one)."""
        return [sink for sink, (flush, _, _) in self._in_flight.items() if len(flush.changes)]

    @property
    def free(self) -> int:
        return self.slots - len(self._in_flight)

    def submit(self, table_flush: TableFlush, table: ChangelogWriter) -> None:
        sink = table_flush.sink
        assert sink not in self._in_flight  # one commit per table at a time: they stay in order
        future = self._pool.submit(_commit_rows, table_flush, table)
        self._in_flight[sink] = (table_flush, table, future)
        future.add_done_callback(lambda done: self._ended_one(sink, done))

    def ended(self) -> Iterator[Ended]:
        """The commits that have ended since the last call, without waiting."""
        while self._ended:
            sink, future = self._ended.popleft()
            in_flight = self._in_flight.get(sink)
            if in_flight is not None and in_flight[2] is future:  # not collected by wait_all
                yield self._pop(sink)

    def wait_all(self) -> Iterator[Ended]:
        """Every commit in flight, once it has ended."""
        futures = [future for _, _, future in self._in_flight.values()]
        concurrent.futures.wait(futures)
        for sink in list(self._in_flight):
            yield self._pop(sink)

    def _pop(self, sink: str) -> Ended:
        table_flush, table, future = self._in_flight.pop(sink)
        error = future.exception()
        return Ended(table_flush, table, None if error else future.result(), error)


def _nothing() -> None:
    pass


def _commit_rows(table_flush: TableFlush, table: ChangelogWriter) -> Commit:
    """One table's rows and progress, in one commit, converted to the table's schema as it is
    then (the schema tracker may have evolved it since the rows were read)."""
    with table.writing:
        return table.commit(table_flush.changes.to_arrow(table.schema), table_flush.progress)
