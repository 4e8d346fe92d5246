"""Prometheus metrics of a Tidemark process, with ``prometheus_client``: every metric is declared
here once, with its help text (docs/operations.md#metrics lists them), and served at
``http://HOST:PORT/metrics`` by ``serve``.

Names follow Prometheus' conventions: ``tidemark_<component>_<what>_<unit>``, counters end in
``_total``, times are seconds, instants are ``_timestamp_seconds``. Every metric has a
``pipeline`` label; per-table ones a ``table`` label (the sink table; for the bootstrap's, the
source table it reads), per-task ones ``task``.
One registry per process, not the library's global one, so that nothing else lands in it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from tidemark.source import BinlogPosition

REGISTRY = CollectorRegistry(auto_describe=True)

_TABLE = ("pipeline", "table")
_PROCESS = ("pipeline",)

#: seconds a changelog commit takes; Iceberg commits take from tens of milliseconds to seconds
_COMMIT_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

# --- ingest, per sink table -----------------------------------------------------------------

INGEST_ROWS = Counter(
    "tidemark_ingest_rows",
    "Changes streamed from the binlog and committed to the changelog table (the bootstrap's "
    "rows are tidemark_ingest_bootstrap_rows)",
    _TABLE,
    registry=REGISTRY,
)
INGEST_ROW_EVENTS = Counter(
    "tidemark_ingest_row_events",
    "Binlog row events (an insert, update or delete of one or more rows) whose rows were "
    "committed to the changelog table",
    _TABLE,
    registry=REGISTRY,
)
INGEST_COMMITS = Counter(
    "tidemark_ingest_commits",
    "Changelog commits of streamed changes that landed (empty ones, that move the watermark, too)",
    _TABLE,
    registry=REGISTRY,
)
INGEST_COMMIT_DURATION = Histogram(
    "tidemark_ingest_commit_duration_seconds",
    "From a changelog commit's start to its landing",
    _TABLE,
    buckets=_COMMIT_BUCKETS,
    registry=REGISTRY,
)
INGEST_ERROR_ROWS = Counter(
    "tidemark_ingest_error_rows",
    "Rows sent to the error table instead of the changelog",
    _TABLE,
    registry=REGISTRY,
)
INGEST_LATE_ROWS = Counter(
    "tidemark_ingest_late_rows",
    "Changes that came after the table's published watermark had passed their commit time",
    _TABLE,
    registry=REGISTRY,
)
INGEST_WATERMARK = Gauge(
    "tidemark_ingest_watermark_timestamp_seconds",
    "How far the changelog table is complete, as of its newest commit (Unix time)",
    _TABLE,
    registry=REGISTRY,
)
INGEST_WATERMARK_LAG = Gauge(
    "tidemark_ingest_watermark_lag_seconds",
    "Now minus the table's watermark, at scrape time",
    _TABLE,
    registry=REGISTRY,
)
INGEST_BOOTSTRAP_ROWS = Gauge(
    "tidemark_ingest_bootstrap_rows",
    "Rows the bootstrap of the table has read so far",
    _TABLE,
    registry=REGISTRY,
)
INGEST_BOOTSTRAP_ROWS_ESTIMATED = Gauge(
    "tidemark_ingest_bootstrap_rows_estimated",
    "Rows the bootstrap of the table expects to read (the server's estimate)",
    _TABLE,
    registry=REGISTRY,
)

# --- ingest, per process --------------------------------------------------------------------

INGEST_ACTIVE = Gauge(
    "tidemark_ingest_active",
    "1 while this process is the pipeline's active ingest, 0 while it waits as a standby",
    _PROCESS,
    registry=REGISTRY,
)
INGEST_BEHIND = Gauge(
    "tidemark_ingest_seconds_behind_source",
    "Now minus the commit time of the newest transaction read from the binlog; 0 once the "
    "stream has caught up (Debezium's MilliSecondsBehindSource, in seconds)",
    _PROCESS,
    registry=REGISTRY,
)
INGEST_TABLES_WAITING = Gauge(
    "tidemark_ingest_tables_waiting",
    "Tables with changes read but not committed yet (waiting for a commit slot or in one), "
    "as of the last progress check",
    _PROCESS,
    registry=REGISTRY,
)
INGEST_BINLOG_BYTES = Counter(
    "tidemark_ingest_binlog_bytes",
    "Bytes of binlog read, as the positions of the transactions read advance (events of "
    "tables not captured included: the server sends them all)",
    _PROCESS,
    registry=REGISTRY,
)
INGEST_RECONNECTS = Counter(
    "tidemark_ingest_reconnects",
    "Times the binlog stream was lost and read again from the last transaction",
    _PROCESS,
    registry=REGISTRY,
)


# --- every process, per service it depends on (tidemark.outages) -----------------------------

_DEPENDENCY = ("pipeline", "dependency")

DEPENDENCY_UP = Gauge(
    "tidemark_dependency_up",
    "1 while the process reaches the service (source, catalog, object_store, warehouse_disk, "
    "kafka, state_database), 0 while it waits for it to come back",
    _DEPENDENCY,
    registry=REGISTRY,
)
DEPENDENCY_DOWN_SINCE = Gauge(
    "tidemark_dependency_down_since_timestamp_seconds",
    "When the service's current outage began (Unix time; time() minus it is the seconds "
    "down); 0 while it answers",
    _DEPENDENCY,
    registry=REGISTRY,
)
DEPENDENCY_OUTAGES = Counter(
    "tidemark_dependency_outages",
    "Outages of the service this process waited out",
    _DEPENDENCY,
    registry=REGISTRY,
)


# --- the scheduler, per task or table ---------------------------------------------------------

_TASK = ("pipeline", "task")

#: seconds a window takes, from a mirror merge of seconds to a job of many minutes
_WINDOW_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)

SCHEDULER_WINDOWS = Counter(
    "tidemark_scheduler_windows",
    "Window attempts that ended, by outcome: succeeded, failed (retried later) or held",
    (*_TASK, "outcome"),
    registry=REGISTRY,
)
SCHEDULER_HELD = Gauge(
    "tidemark_scheduler_windows_held",
    "1 while a window of the task is held (failed past its retries), until released",
    _TASK,
    registry=REGISTRY,
)
SCHEDULER_LAST_WINDOW_END = Gauge(
    "tidemark_scheduler_last_window_end_timestamp_seconds",
    "The end of the task's newest window done (Unix time)",
    _TASK,
    registry=REGISTRY,
)
SCHEDULER_WINDOW_DURATION = Histogram(
    "tidemark_scheduler_window_duration_seconds",
    "How long a window's merge or job ran, when it succeeded",
    _TASK,
    buckets=_WINDOW_BUCKETS,
    registry=REGISTRY,
)
SCHEDULER_WINDOW_DELAY = Histogram(
    "tidemark_scheduler_window_delay_seconds",
    "From a window's end to it being done: how fresh the task's output is when it lands",
    _TASK,
    buckets=_WINDOW_BUCKETS,
    registry=REGISTRY,
)
SCHEDULER_RERUNS = Counter(
    "tidemark_scheduler_window_reruns",
    "Earlier windows a job with rerun-late-windows ran again for late changes",
    _TASK,
    registry=REGISTRY,
)
SCHEDULER_WATERMARK_LAG = Gauge(
    "tidemark_scheduler_watermark_lag_seconds",
    "The scheduler's clock minus the table's recorded watermark, at its last tick",
    _TABLE,
    registry=REGISTRY,
)
SCHEDULER_LATE_ROWS = Gauge(
    "tidemark_scheduler_late_rows",
    "Late changes the table's commit reports have counted, in all",
    _TABLE,
    registry=REGISTRY,
)


class SchedulerMetrics:
    """What one pipeline's scheduler tells the registry (``scheduler.engine``)."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline

    def held(self, task: str, is_held: bool) -> None:
        SCHEDULER_HELD.labels(self.pipeline, task).set(1 if is_held else 0)

    def succeeded(self, task: str, window_end_s: float, delay_s: float, ran_s: float) -> None:
        SCHEDULER_WINDOWS.labels(self.pipeline, task, "succeeded").inc()
        SCHEDULER_LAST_WINDOW_END.labels(self.pipeline, task).set(window_end_s)
        SCHEDULER_WINDOW_DELAY.labels(self.pipeline, task).observe(delay_s)
        SCHEDULER_WINDOW_DURATION.labels(self.pipeline, task).observe(ran_s)

    def failed(self, task: str, *, held: bool) -> None:
        SCHEDULER_WINDOWS.labels(self.pipeline, task, "held" if held else "failed").inc()

    def rerun(self, task: str) -> None:
        SCHEDULER_RERUNS.labels(self.pipeline, task).inc()

    def watermark_lag(self, table: str, seconds: float) -> None:
        SCHEDULER_WATERMARK_LAG.labels(self.pipeline, table).set(seconds)

    def late_rows(self, table: str, rows: int) -> None:
        SCHEDULER_LATE_ROWS.labels(self.pipeline, table).set(rows)


def sample(name: str, **labels: str) -> float | None:
    """The value of one sample of the registry (tests and the status page read them)."""
    return REGISTRY.get_sample_value(name, labels)


class IngestMetrics:
    """What one pipeline's ingest tells the registry; the runner, the bootstrap and the lease
    call it. ``clock`` is Unix time, for the lag computed at each scrape."""

    def __init__(self, pipeline: str, clock: Callable[[], float] = time.time) -> None:
        self.pipeline = pipeline
        self._clock = clock
        self._lock = threading.Lock()
        #: per table, its watermark (Unix seconds) and the late rows counted so far
        self._watermarks: dict[str, float] = {}
        self._late: dict[str, int] = {}
        #: the commit time of the newest transaction read (Unix seconds); None: caught up
        self._read_until: float | None = None
        #: where the newest transaction read ended
        self._position: BinlogPosition | None = None

    def stream(self) -> None:
        """This instance measures the pipeline's stream from now on."""
        INGEST_BEHIND.labels(self.pipeline).set_function(self._behind)

    def reading_from(self, position: BinlogPosition) -> None:
        """The stream (re)starts at ``position``: binlog bytes count from there."""
        self._position = position

    def read_transaction(self, event_time_ms: int, position: BinlogPosition) -> None:
        """A transaction read, committed at ``event_time_ms``, ending at ``position``."""
        self._read_until = event_time_ms / 1000
        last, self._position = self._position, position
        if last is None:
            return  # no start was told: bytes count from here
        # a new file starts at 4, after its magic number; the old one's tail is not known here
        read = position.offset - (last.offset if position.file == last.file else 4)
        if read > 0:
            INGEST_BINLOG_BYTES.labels(self.pipeline).inc(read)

    def caught_up(self) -> None:
        """The server has nothing newer to send (a heartbeat came)."""
        self._read_until = None

    def _behind(self) -> float:
        read_until = self._read_until
        return 0.0 if read_until is None else max(0.0, self._clock() - read_until)

    def starts_from(self, table: str, late_rows: int) -> None:
        """``table``'s late changes counted before this process, from its progress: only
        later ones count in ``tidemark_ingest_late_rows_total``."""
        with self._lock:
            self._late[table] = late_rows

    def committed(
        self,
        table: str,
        rows: int,
        row_events: int,
        seconds: float,
        watermark_ms: int,
        late_rows: int,
    ) -> None:
        """A changelog commit of ``rows`` rows, from ``row_events`` binlog row events, landed
        after ``seconds``; ``late_rows`` is the table's count of late changes so far (its
        progress keeps it)."""
        labels = (self.pipeline, table)
        INGEST_ROWS.labels(*labels).inc(rows)
        INGEST_ROW_EVENTS.labels(*labels).inc(row_events)
        INGEST_COMMITS.labels(*labels).inc()
        INGEST_COMMIT_DURATION.labels(*labels).observe(seconds)
        with self._lock:
            # a table without a count to start from (``starts_from``) counts from here
            previous = self._late.get(table, late_rows)
            late = max(0, late_rows - previous)
            self._late[table] = late_rows
            first = table not in self._watermarks
            if watermark_ms > 0:
                self._watermarks[table] = watermark_ms / 1000
        if late:
            INGEST_LATE_ROWS.labels(*labels).inc(late)
        if watermark_ms > 0:
            INGEST_WATERMARK.labels(*labels).set(watermark_ms / 1000)
            if first:
                INGEST_WATERMARK_LAG.labels(*labels).set_function(lambda: self._lag(table))
                with _streams_lock:
                    _streamed_tables.setdefault(self.pipeline, set()).add(table)

    def error_rows(self, table: str, rows: int) -> None:
        INGEST_ERROR_ROWS.labels(self.pipeline, table).inc(rows)

    def bootstrap(self, table: str, rows_done: int, estimated_rows: int | None = None) -> None:
        INGEST_BOOTSTRAP_ROWS.labels(self.pipeline, table).set(rows_done)
        if estimated_rows is not None:
            INGEST_BOOTSTRAP_ROWS_ESTIMATED.labels(self.pipeline, table).set(estimated_rows)

    def bootstrap_read(self, table: str, rows: int) -> None:
        INGEST_BOOTSTRAP_ROWS.labels(self.pipeline, table).inc(rows)

    def active(self, is_active: bool) -> None:
        INGEST_ACTIVE.labels(self.pipeline).set(1 if is_active else 0)

    def reconnected(self) -> None:
        INGEST_RECONNECTS.labels(self.pipeline).inc()

    def waiting(self, tables: int) -> None:
        """``tables`` tables have changes read and not committed yet."""
        INGEST_TABLES_WAITING.labels(self.pipeline).set(tables)

    def oldest(self, tables: Collection[str]) -> tuple[str, float] | None:
        """Of ``tables`` (those with changes waiting for a commit), the one whose committed
        watermark is the oldest, and its lag in seconds: how far behind the lake is (the
        newest watermark read says only how far the reading is; a table with nothing waiting
        is complete up to it, whatever its last commit's watermark)."""
        with self._lock:
            known = [table for table in tables if table in self._watermarks]
            if not known:
                return None
            table = min(known, key=self._watermarks.__getitem__)
        return table, self._lag(table)

    def _lag(self, table: str) -> float:
        with self._lock:
            watermark = self._watermarks.get(table)
        return 0.0 if watermark is None else max(0.0, self._clock() - watermark)


#: per pipeline, the tables whose lag this process computes at each scrape
_streamed_tables: dict[str, set[str]] = {}
_streams_lock = threading.Lock()


def forget_stream(pipeline: str) -> None:
    """This process no longer streams ``pipeline`` (its term ended; it may wait as a standby):
    its lag and seconds behind the source go, rather than grow beside the active process's."""
    with _streams_lock:
        tables = _streamed_tables.pop(pipeline, set())
    for table in tables:
        for metric in (INGEST_WATERMARK_LAG, INGEST_WATERMARK):
            with contextlib.suppress(KeyError):
                metric.remove(pipeline, table)
    for process_metric in (INGEST_BEHIND, INGEST_TABLES_WAITING):
        with contextlib.suppress(KeyError):
            process_metric.remove(pipeline)


@dataclass(frozen=True)
class MetricsServer:
    server: WSGIServer
    thread: Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve(port: int, host: str = "127.0.0.1") -> MetricsServer:
    """Serve the registry at ``http://host:port/metrics`` (0: any free port) in a thread."""
    server, thread = start_http_server(port, addr=host, registry=REGISTRY)
    return MetricsServer(server, thread)
