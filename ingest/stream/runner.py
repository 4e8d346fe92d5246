"""The ingest loop: binlog events in, changelog commits and reports out.

Owns reconnects (at transaction boundaries only), flush timing, the watermark reports and idle
commits that move idle tables' watermarks and positions, and the stop conditions. The
decisions about rows live in ``ingest.stream.assembler``; the commits in
``ingest.changelog.table``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import pymysql

from ingest.binlog.events import Heartbeat, RowsChanged, TransactionCommitted, Woken
from ingest.binlog.process import ProcessBinlogReader
from ingest.binlog.reader import BinlogReader, StreamInterruptedError
from ingest.bootstrap.background import BackgroundBootstrap
from ingest.changelog.error_table import is_errors_sink, sink_of
from ingest.changelog.reports import report_from_commit
from ingest.errors import SchemaChangeStopError
from ingest.gc_pacing import fewer_collections
from ingest.settings import IngestSettings
from ingest.stream.assembler import ChangeAssembler, Flush, TableFlush
from ingest.stream.background_commits import BackgroundCommits
from tidemark.contracts.reports import CommitReport, TableMark, WatermarkReport
from tidemark.metrics import IngestMetrics
from tidemark.sinks.commits import Commit
from tidemark.sinks.protocols import ChangelogWriter
from tidemark.source import BinlogPosition, SourceConnection

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

#: why a run stopped when its process lost the pipeline's lease
LEASE_LOST = "lost the lease"


class ReportSink(Protocol):
    """Where commit reports go after each commit (Kafka in production). Neither call may
    block the loop for long."""

    def publish(self, report: CommitReport) -> None: ...

    def publish_watermark(self, report: WatermarkReport) -> None:
        """Best effort: the next one says as much, and more."""

    def tick(self) -> None:
        """Called on every tick of the loop: a chance to retry what could not be sent."""


@dataclass(frozen=True)
class StopWhen:
    """When a run ends by itself; by default it runs until interrupted."""

    max_seconds: float | None = None
    until_position: BinlogPosition | None = None
    #: set by another thread to stop the run (seen within a heartbeat)
    requested: threading.Event | None = None
    #: set when this process lost the pipeline's lease (``ingest.lease``): the run stops
    #: without committing what it holds, which the new active process reads again
    lease: threading.Event | None = None


@dataclass
class RunSummary:
    rows: int = 0
    #: rows that went to error tables instead
    errors: int = 0
    commits: int = 0
    reconnects: int = 0
    position: BinlogPosition | None = None
    stopped_because: str = ""
    #: per sink table, the id of its last commit
    snapshots: dict[str, int] = field(default_factory=dict)


class _HandedOver(Exception):  # noqa: N818 - a signal, not an error
    """The stream must be read again from where the handed-over tables start."""


class IngestRunner:
    def __init__(
        self,
        *,
        source: SourceConnection,
        databases: list[str],
        tables: Mapping[str, ChangelogWriter],
        open_table: Callable[[str], ChangelogWriter] | None = None,
        assembler: ChangeAssembler,
        reports: ReportSink | None,
        settings: IngestSettings,
        server_clock: Callable[[], tuple[BinlogPosition, int]],
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        sleep: Callable[[float], None] = time.sleep,
        background: BackgroundBootstrap | None = None,
        metrics: IngestMetrics | None = None,
    ) -> None:
        self._source = source
        self._metrics = metrics or IngestMetrics("")
        self._metrics.stream()
        self._databases = databases
        self._tables = dict(tables)
        self._open_table = open_table
        self._assembler = assembler
        self._reports = reports
        self._settings = settings
        self._server_clock = server_clock
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        #: tables bootstrapping while the others stream, until they are handed over
        self._background = background
        self._summary = RunSummary()
        self._rows_at_last_log = 0
        self._events = 0
        self._last_flush = clock()
        self._last_watermark_report = clock()
        #: tables still to have their empty commit in the idle round under way, which began
        #: at ``_idle_round_started`` with ``_idle_round_size`` tables
        self._idle_round: deque[str] = deque()
        self._idle_round_started = clock()
        self._idle_round_size = 0
        self._last_progress_log = clock()
        #: the commits running in the background, while ``run`` runs
        self._commits: BackgroundCommits | None = None
        #: when each table's last commit was handed out (``_top_up``)
        self._commit_started: dict[str, float] = {}

    def consistent_from(self) -> BinlogPosition:
        """Where every table is consistent with the source: past the bootstraps' reads."""
        return self._assembler.held_until() or self._assembler.boundary

    def changelog_identifiers(self) -> list[str]:
        return sorted(
            table.identifier for sink, table in self._tables.items() if not is_errors_sink(sink)
        )

    def run(self, stop: StopWhen) -> RunSummary:
        if self._background is not None:
            self._background.start()
        try:
            with fewer_collections(), self._commit_pool():
                return self._run(stop)
        finally:
            if self._background is not None:
                # stopped before the hand-over: the bootstrap stops at its next chunk (the
                # next run resumes after what it committed); nothing runs behind a run
                self._background.stop()

    @contextlib.contextmanager
    def _commit_pool(self) -> Iterator[None]:
        threads = max(1, self._settings.commit_threads)
        with ThreadPoolExecutor(threads, thread_name_prefix="commit") as pool:
            # twice as many commits as threads: one waits while another runs
            self._commits = BackgroundCommits(pool, slots=2 * threads)
            try:
                yield
            finally:
                self._commits = None

    @property
    def _in_flight(self) -> BackgroundCommits:
        """The commits running in the background: they exist while ``run`` runs, and every
        commit happens inside it."""
        assert self._commits is not None, "commits happen only while run() runs"
        return self._commits

    def _run(self, stop: StopWhen) -> RunSummary:
        started = self._clock()
        failures = 0
        while True:
            events_before = self._events
            try:
                reason = self._stream(stop, started)
            except _HandedOver:
                continue  # read again from the new tables' positions
            except StreamInterruptedError as error:
                # interruptions in a row count; one after a stretch of streaming starts afresh
                failures = 1 if self._events > events_before else failures + 1
                if failures > self._settings.max_reconnects:
                    raise
                logger.warning(
                    "%s; committing what is complete and reconnecting at %s (attempt %d of %d)",
                    error,
                    self._assembler.boundary,
                    failures,
                    self._settings.max_reconnects,
                )
                self._commit(self._assembler.flush())
                self._assembler.abandon_transaction()
                self._summary.reconnects += 1
                self._metrics.reconnected()
                self._sleep(min(2.0**failures, 30.0))
                continue
            except SchemaChangeStopError:
                self._commit(self._assembler.flush(idle_tables=True))
                raise
            break
        if reason == LEASE_LOST:
            self._collect(wait=True)  # what was handed out before is reported
        else:
            self._commit(self._assembler.flush(idle_tables=True))
        self._summary.position = self._assembler.boundary
        self._summary.stopped_because = reason
        return self._summary

    def _stream(self, stop: StopWhen, started: float) -> str:
        start = self._assembler.boundary
        self._metrics.reading_from(start)
        logger.info(
            "Reading the binlog of %s:%d from %s", self._source.host, self._source.port, start
        )
        open_reader = ProcessBinlogReader if self._settings.decode_in_process else BinlogReader
        with (
            open_reader(
                self._source,
                start,
                follow=True,
                databases=self._databases,
                heartbeat_seconds=self._settings.heartbeat_seconds,
            ) as reader,
            self._in_flight.waking(getattr(reader, "wake", _no_wake)),
        ):
            for event in reader:
                if not isinstance(event, Woken):  # else a commit ended: its slot is free now
                    self._events += 1
                    if type(event) is TransactionCommitted:
                        self._metrics.read_transaction(event.event_time_ms, event.position)
                    elif type(event) is Heartbeat:
                        self._metrics.caught_up()
                    forced = self._assembler.on_event(event)
                    if forced is not None:
                        self._commit(forced)
                    elif type(event) is RowsChanged:
                        # a transaction's row events come together (the binlog has them at its
                        # commit): what follows waits for its end, or for its next part of
                        # max_transaction_rows in a large one
                        continue
                self._top_up()
                if isinstance(event, Heartbeat) or self._due():
                    self._tick()
                if self._background is not None and self._background.finished.is_set():
                    self._hand_over()
                if (
                    stop.until_position is not None
                    and self._background is None
                    and self._assembler.read_through >= stop.until_position
                ):
                    return f"reached {stop.until_position}"
                if stop.max_seconds is not None and self._clock() - started >= stop.max_seconds:
                    return f"ran {stop.max_seconds:g} s"
                if stop.requested is not None and stop.requested.is_set():
                    return "asked to stop"
                if stop.lease is not None and stop.lease.is_set():
                    return LEASE_LOST
        return "the binlog ended"

    def _hand_over(self) -> None:
        """The background bootstrap finished: at the next transaction boundary, commit what
        is buffered and read again from the new tables' positions (``_HandedOver``)."""
        assert self._background is not None
        if self._assembler.in_transaction:
            return
        self._commit(self._assembler.flush())
        progress = self._background.hand_over()
        self._background = None
        start = self._assembler.adopt(progress)
        logger.info(
            "Bootstrap of %s done; reading again from %s for them, the other tables skip what "
            "they hold",
            ", ".join(sorted(sink for sink in progress if not is_errors_sink(sink))),
            start,
        )
        raise _HandedOver

    def _due(self) -> bool:
        since_last = self._clock() - self._last_flush
        return (
            self._assembler.pending_rows >= self._settings.flush_rows
            or since_last >= self._settings.flush_interval_seconds
            # an idle round under way goes on after as long of reading as its last tick took
            or (bool(self._idle_round) and since_last >= self._settings.tick_budget_seconds)
        )

    def _tick(self) -> None:
        """What runs every ``flush_interval`` (and at heartbeats): commits that ended, all
        waiting rows at once if they reach ``flush_rows``, the watermark report, idle commits,
        the reports' retries and the progress log."""
        started = self._clock()
        self._collect()
        if self._assembler.pending_rows >= self._settings.flush_rows:
            self._commit(self._assembler.flush())  # memory stays bounded
        if started - self._last_watermark_report >= self._settings.watermark_report_seconds:
            self._report_watermark()
        self._commit_idle(started)
        # deadlines count from the end of the work: a tick longer than an interval must not
        # make the next event start another one
        self._last_flush = self._clock()
        if self._reports is not None:
            self._reports.tick()
        if started - self._last_progress_log >= self._settings.progress_log_seconds:
            self._log_progress(started)

    def _top_up(self) -> None:
        """Hand out tables with waiting rows to the free commit slots, those whose rows came
        first first, each at most once a ``flush_interval`` (its rows wait meanwhile), with
        everything it has up to the last transaction boundary and the watermark now: under
        a load that keeps every slot busy, a table waits one round of all the tables, not
        a flush of them all and the next."""
        commits = self._in_flight
        self._collect()
        if commits.free <= 0 or not self._assembler.pending_rows:
            return
        if self._assembler.in_transaction:
            return
        now = self._clock()
        interval = self._settings.flush_interval_seconds
        chosen: list[str] = []
        for sink in self._assembler.pending_sinks():
            if sink in commits:
                continue
            if self._commit_started.get(sink, -math.inf) + interval > now:
                # the ones after it got their rows later: most were committed later too, and
                # those that were not wait at most an interval (this stays a short scan)
                break
            chosen.append(sink)
            if len(chosen) == commits.free:
                break
        for table_flush in self._assembler.flush_only(chosen).tables:
            self._submit(table_flush)

    def _report_watermark(self) -> None:
        """Learn the source's clock, then tell the scheduler how far every table without
        pending changes is complete, in one message per ``watermark_report_tables`` tables: an
        idle table's watermark moves without a commit (``WatermarkReport``)."""
        self._last_watermark_report = self._clock()
        self._observe_server_clock()
        if self._reports is None:
            return
        marks: dict[str, TableMark] = {}
        marked: list[str] = []
        for sink, last_order in self._assembler.complete_tables().items():
            if sink in self._in_flight:
                continue  # its rows are not committed yet
            table = self._tables.get(sink)
            snapshot_id = None if table is None else table.last_commit_id()
            if table is not None and snapshot_id is not None and not is_errors_sink(sink):
                marks[table.identifier] = TableMark(snapshot_id=snapshot_id, last_order=last_order)
                marked.append(sink)
        if not marks:
            return
        watermark_ms = self._assembler.watermark_ms
        names = sorted(marks)
        size = self._settings.watermark_report_tables
        for first in range(0, len(names), size):
            self._reports.publish_watermark(
                WatermarkReport(
                    source=self._assembler.source,
                    watermark_ms=watermark_ms,
                    position=str(self._assembler.read_through),
                    published_at_ms=int(self._wall_clock() * 1000),
                    tables={name: marks[name] for name in names[first : first + size]},
                )
            )
        self._assembler.marked(marked, watermark_ms)

    def _commit_idle(self, now: float) -> None:
        """Empty commits that move idle tables' position (where a restart reads from) and the
        watermark in the table itself: each table once an ``idle_commit_seconds``, paced
        evenly over it, and at most one tick's time budget at a time, so a thousand tables
        cost a few commits a second and reading goes on between them. A round that takes
        longer than the interval is followed by the next at once."""
        interval = self._settings.idle_commit_seconds
        if not self._idle_round:
            if now - self._idle_round_started < interval:
                return
            # the watermark the round's commits carry (without reports, the one that moves)
            self._observe_server_clock()
            self._idle_round.extend(sorted(self._assembler.known_tables()))
            self._idle_round_started = now
            self._idle_round_size = len(self._idle_round)
        share = min(1.0, (now - self._idle_round_started) / interval)
        done = self._idle_round_size - len(self._idle_round)
        due = math.ceil(self._idle_round_size * share) - done
        while self._idle_round and due > 0:
            sink = self._idle_round.popleft()
            due -= 1
            if sink in self._in_flight:
                continue  # committing already
            for table_flush in self._assembler.flush_only([sink]).tables:
                self._submit(table_flush)
            if self._clock() - now >= self._settings.tick_budget_seconds:
                break

    def _observe_server_clock(self) -> None:
        try:
            position, server_time_ms = self._server_clock()
        except pymysql.MySQLError as error:
            # only the idle watermark waits; the stream itself reports a lost server
            logger.warning("Could not read the source's clock for the idle watermark: %s", error)
            return
        self._assembler.observe_caught_up(position, server_time_ms)

    def _commit(self, flush: Flush) -> None:
        """Commit ``flush`` and wait for it, after every commit in flight."""
        self._collect(wait=True)
        for table_flush in flush.tables:
            self._submit(table_flush)
        self._collect(wait=True)

    def _submit(self, table_flush: TableFlush) -> None:
        self._commit_started[table_flush.sink] = self._clock()
        self._in_flight.submit(table_flush, self._table(table_flush.sink))

    def _collect(self, wait: bool = False) -> None:
        """Count and report the commits that ended (with ``wait``, all of them, once they
        have). A failure is raised once every commit in flight has ended, after the ones that
        landed are reported: the scheduler hears of every commit that landed."""
        commits = self._in_flight
        failure: BaseException | None = None
        for ended in list(commits.wait_all() if wait else commits.ended()):
            if ended.error is not None:
                failure = failure or ended.error
            elif ended.commit is not None:
                self._committed(ended.table_flush, ended.table, ended.commit)
        if failure is None:
            return
        for ended in list(commits.wait_all()):
            if ended.commit is not None:
                self._committed(ended.table_flush, ended.table, ended.commit)
        raise failure

    def _committed(self, table_flush: TableFlush, table: ChangelogWriter, commit: Commit) -> None:
        changes = table_flush.changes
        sink, progress = table_flush.sink, table_flush.progress
        if is_errors_sink(sink):
            self._summary.errors += len(changes)
            self._metrics.error_rows(sink_of(sink), len(changes))
        else:
            self._summary.rows += len(changes)
            seconds = self._clock() - self._commit_started.get(sink, self._clock())
            self._metrics.committed(
                sink,
                len(changes),
                changes.row_events,
                seconds,
                progress.watermark_ms,
                progress.late_rows,
            )
        self._summary.commits += 1
        self._summary.snapshots[table_flush.sink] = commit.commit_id
        if is_errors_sink(table_flush.sink):
            return  # the scheduler waits for changelog tables only
        report = report_from_commit(table.identifier, commit)
        if self._reports is not None and report is not None:
            self._reports.publish(report)

    def _table(self, sink: str) -> ChangelogWriter:
        table = self._tables.get(sink)
        if table is None:
            if self._open_table is None:
                raise KeyError(f"no changelog table for {sink}")
            table = self._tables[sink] = self._open_table(sink)
        return table

    def _log_progress(self, now: float) -> None:
        """The progress line: how far the reading is (the newest watermark read) and how far
        the lake is (the table committed least far, and how many tables wait for a commit)."""
        elapsed = now - self._last_progress_log
        lag_s = self._wall_clock() - self._assembler.watermark_ms / 1000
        waiting = {*self._assembler.pending_sinks(), *self._in_flight.sinks_with_rows()}
        waiting = {sink for sink in waiting if not is_errors_sink(sink)}
        waiting_tables = len(waiting)
        self._metrics.waiting(waiting_tables)
        oldest = self._metrics.oldest(waiting)
        behind = "" if oldest is None else f"; oldest table {oldest[0]} {oldest[1]:.1f} s behind"
        logger.info(
            "%d rows in %d commits so far; %.0f rows/s lately; position %s; read up to %.1f s "
            "ago%s; %d table(s) waiting for a commit",
            self._summary.rows,
            self._summary.commits,
            (self._summary.rows - self._rows_at_last_log) / max(elapsed, 1e-9),
            self._assembler.boundary,
            lag_s,
            behind,
            waiting_tables,
        )
        self._rows_at_last_log = self._summary.rows
        self._last_progress_log = now


def _no_wake() -> None:
    """A reader that decodes in this process cannot be woken: heartbeats wake its loop."""
