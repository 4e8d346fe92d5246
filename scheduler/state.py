"""The scheduler's durable state in PostgreSQL: commit reports and window runs.

The only module of ``scheduler`` that imports ``psycopg2``. By default the state lives in a
schema ``tidemark_scheduler`` of the catalog's own database (``catalog.properties.uri``), so a
pipeline needs no second server. Every write is one transaction, and the inserts are idempotent:
a report recorded twice, or a window recorded pending twice, changes nothing.

Each thread keeps one connection; one that fails is dropped and the next operation opens a new
one, so a PostgreSQL restart costs the failing operation only (``StateUnavailableError``,
transient, and the tick tries again).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import psycopg2
import psycopg2.errors
import psycopg2.extensions
from psycopg2 import sql
from psycopg2.extras import Json, execute_values

from scheduler.errors import SchedulerError
from scheduler.gate import ReportRecord, RunState, TableState, TaskState, WindowRun
from tidemark.contracts.instance import Instance, LeaseHolders, Role, State, this_process
from tidemark.contracts.reports import CommitReport, WatermarkReport
from tidemark.errors import ConfigError, TerminalError, TransientError, first_line
from tidemark.freshness import FreshnessSample
from tidemark.windows import TaskKind, Window, WindowTask

logger = logging.getLogger(__name__)

#: the layout of the tables below; a store refuses a schema written by a newer Tidemark
STATE_VERSION = 1
DEFAULT_SCHEMA = "tidemark_scheduler"

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: how far a recorded report's table is complete: its own watermark, or a watermark report's
_REACHED = sql.SQL("GREATEST(watermark_ms, marked_ms)")

_DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE IF NOT EXISTS {schema}.reports (
    table_name text NOT NULL,
    snapshot_id bigint NOT NULL,
    watermark_ms bigint NOT NULL,
    last_order bigint,
    partial boolean NOT NULL,
    position text NOT NULL,
    rows_added bigint NOT NULL,
    committed_at_ms bigint NOT NULL,
    source text,
    version text NOT NULL,
    recorded_at timestamptz NOT NULL,
    PRIMARY KEY (table_name, snapshot_id)
);
CREATE INDEX IF NOT EXISTS reports_by_watermark ON {schema}.reports (table_name, watermark_ms);
-- added after version 1 was released: late changes' commit times (report 1.3)
ALTER TABLE {schema}.reports ADD COLUMN IF NOT EXISTS late_from_ms bigint;
ALTER TABLE {schema}.reports ADD COLUMN IF NOT EXISTS late_to_ms bigint;
-- added after version 1 was released: how far watermark reports took the commit, the newest
-- and the first (report 2.0)
ALTER TABLE {schema}.reports ADD COLUMN IF NOT EXISTS marked_ms bigint;
ALTER TABLE {schema}.reports ADD COLUMN IF NOT EXISTS first_marked_ms bigint;
CREATE TABLE IF NOT EXISTS {schema}.window_runs (
    pipeline text NOT NULL,
    task text NOT NULL,
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    state text NOT NULL CHECK (state IN ('pending', 'running', 'succeeded', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    up_to_order bigint,
    last_error text,
    retry_at timestamptz,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (pipeline, task, window_end)
);
-- added after version 1 was released: a job over Paimon tables, the snapshot id each input is
-- read at (sink table -> id), fixed when the window is recorded
ALTER TABLE {schema}.window_runs ADD COLUMN IF NOT EXISTS snapshots jsonb;
-- added after version 1 was released: per table and minute, the furthest watermark recorded
-- and when, for the status page's freshness charts (``freshness``)
CREATE TABLE IF NOT EXISTS {schema}.freshness (
    table_name text NOT NULL,
    minute timestamptz NOT NULL,
    watermark_ms bigint NOT NULL,
    seen_at timestamptz NOT NULL,
    PRIMARY KEY (table_name, minute)
);
-- what housekeeping prunes by, every minute
CREATE INDEX IF NOT EXISTS freshness_by_minute ON {schema}.freshness (minute);
"""


class StateUnavailableError(SchedulerError, TransientError):
    """PostgreSQL did not answer; the tick is tried again and nothing was half-written.
    ``reason`` is what the driver said, in one line (for the outage's log line)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or first_line(self)


class StateMissingError(SchedulerError, TerminalError):
    """The state schema does not exist: no scheduler has run against this database yet."""


class PipelineLockedError(SchedulerError, TerminalError):
    """Another scheduler already runs the pipeline against this state."""


class StateVersionError(SchedulerError, TerminalError):
    """The state schema was written by a newer Tidemark."""


@dataclass(frozen=True)
class StateSettings:
    """Where the state lives: libpq connection keywords and a schema name."""

    #: libpq keywords (host, port, dbname, user, password, ...)
    connection: Mapping[str, str]
    schema: str = DEFAULT_SCHEMA
    connect_timeout_seconds: int = 10

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.schema):
            raise ConfigError(
                f"the scheduler state schema must be a lower-case SQL name (letters, digits, _), "
                f"got: {self.schema!r}"
            )

    @classmethod
    def from_catalog(
        cls, properties: Mapping[str, str], schema: str = DEFAULT_SCHEMA
    ) -> StateSettings:
        """The catalog's own PostgreSQL database, from Java-style catalog properties."""
        uri = properties.get("uri", "")
        if not uri.startswith("jdbc:postgresql:"):
            raise ConfigError(
                "the scheduler keeps its state in the catalog's PostgreSQL database by default, "
                "but catalog.properties.uri is not a jdbc:postgresql: URL; give the state "
                "database as tidemark.state-dsn in the pipeline file, or with --state-dsn (a "
                "libpq connection string)"
            )
        parts = urlsplit(uri.removeprefix("jdbc:"))
        connection = {
            "host": parts.hostname or "localhost",
            "port": str(parts.port or 5432),
            "dbname": parts.path.lstrip("/"),
        }
        # JDBC query parameters named like libpq's (sslmode, ...) carry over
        for key, value in parse_qsl(parts.query):
            if key in {"sslmode", "sslrootcert", "sslcert", "sslkey", "application_name"}:
                connection[key] = value
        if properties.get("jdbc.user"):
            connection["user"] = properties["jdbc.user"]
        if properties.get("jdbc.password"):
            connection["password"] = properties["jdbc.password"]
        return cls(connection, schema)

    @classmethod
    def from_dsn(cls, dsn: str, schema: str = DEFAULT_SCHEMA) -> StateSettings:
        """A libpq connection string (``host=... dbname=...`` or ``postgresql://...``)."""
        try:
            parsed = psycopg2.extensions.parse_dsn(dsn)
        except psycopg2.ProgrammingError as error:
            raise ConfigError(
                f"the state database's DSN (tidemark.state-dsn or --state-dsn) is not a libpq "
                f"connection string: {error}"
            ) from None
        return cls(parsed, schema)


@dataclass(frozen=True)
class RecordedReport:
    """A report as the store holds it, with the scheduler's time of recording."""

    table: str
    snapshot_id: int
    watermark_ms: int
    recorded_at: datetime


class StateStore:
    """Reports and window runs of any number of pipelines, in one PostgreSQL schema."""

    def __init__(self, settings: StateSettings) -> None:
        self._settings = settings
        self._schema = sql.Identifier(settings.schema)
        self._local = threading.local()
        #: how many times a connection of this store broke: a thread's connection opened before
        #: the last break is not used again (after a restart every idle connection is dead,
        #: and each thread's next operation would fail once more, long after the outage)
        self._failures = 0
        self._failures_lock = threading.Lock()
        #: a freshness sample was refused once: said, then not again
        self._sampling_refused = False

    @property
    def schema(self) -> str:
        return self._settings.schema

    def create(self) -> None:
        """Create the schema and its tables if needed; refuse state from a newer Tidemark."""
        with self._transaction() as cursor:
            # two schedulers starting at once must not race on CREATE ... IF NOT EXISTS
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            cursor.execute(sql.SQL(_DDL).format(schema=self._schema))
            cursor.execute(
                sql.SQL(
                    "INSERT INTO {}.meta (key, value) VALUES ('version', %s) "
                    "ON CONFLICT (key) DO NOTHING"
                ).format(self._schema),
                (str(STATE_VERSION),),
            )
            cursor.execute(
                sql.SQL("SELECT value FROM {}.meta WHERE key = 'version'").format(self._schema)
            )
            (version,) = cursor.fetchone() or ("0",)
        if int(version) > STATE_VERSION:
            raise StateVersionError(
                f"the scheduler state in schema {self.schema} has version {version}, newer than "
                f"this Tidemark understands ({STATE_VERSION}); upgrade Tidemark, or use another "
                "schema with --state-schema"
            )

    @contextmanager
    def pipeline_lock(self, pipeline: str) -> Iterator[PipelineLock]:
        """Hold the pipeline for this process while the block runs: two schedulers of one
        pipeline would run its windows twice and split its reports between them. The lock is
        PostgreSQL's (a session advisory lock), so it goes with the process, however it ends;
        a PostgreSQL restart frees it too, which ``PipelineLock.confirm`` notices."""
        lock = PipelineLock(self, pipeline)
        lock.acquire()
        try:
            yield lock
        finally:
            lock.release()

    def holders(self, pipeline: str) -> LeaseHolders:
        """The scheduler holding ``pipeline`` and the ones waiting for it, as their lock
        connections say (``PipelineLock``): only live processes have one."""
        with self._transaction() as cursor:
            cursor.execute(
                "SELECT l.granted, a.application_name FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE l.locktype = 'advisory' AND l.objsubid = 1 "
                "AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext(%s)::bigint",
                (f"{self.schema}/{pipeline}",),
            )
            rows = cursor.fetchall()
        active: Instance | str | None = None
        standbys = []
        for granted, name in rows:
            instance = _instance(pipeline, name)
            if granted:
                active = instance or f"connection {name!r}"
            elif instance is not None:
                standbys.append(instance)
        return LeaseHolders(active, sorted(standbys, key=lambda instance: instance.since))

    def drop(self) -> None:
        """Remove the schema and everything in it (tests, and starting over on purpose)."""
        with self._transaction() as cursor:
            cursor.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(self._schema))

    def forget(self, pipeline: str, tables: Iterable[str]) -> None:
        """Start ``pipeline`` over: drop its window runs, and the reports and freshness samples
        of its ``tables`` (changelog names), in one transaction. For a pipeline whose tables
        were recreated; the store creates nothing here, so a store that was never used stays
        untouched."""
        names = list(tables)
        with self._transaction() as cursor:
            if not self._has_table(cursor, "window_runs"):
                return
            cursor.execute(
                sql.SQL("DELETE FROM {}.window_runs WHERE pipeline = %s").format(self._schema),
                (pipeline,),
            )
            for table in ("reports", "freshness"):
                if self._has_table(cursor, table):  # freshness: a state of an older Tidemark
                    cursor.execute(
                        sql.SQL("DELETE FROM {}.{} WHERE table_name = ANY(%s)").format(
                            self._schema, sql.Identifier(table)
                        ),
                        (names,),
                    )

    def _has_table(self, cursor: psycopg2.extensions.cursor, table: str) -> bool:
        cursor.execute("SELECT to_regclass(%s)", (f"{self.schema}.{table}",))
        (exists,) = cursor.fetchone() or (None,)
        return exists is not None

    # -- reports -------------------------------------------------------------------------

    def record_reports(self, reports: Sequence[CommitReport], now: datetime) -> int:
        """Record ``reports`` in one transaction; returns how many were new (others are
        duplicates of the same table and snapshot id, and are ignored)."""
        if not reports:
            return 0
        rows = [
            (
                r.table,
                r.snapshot_id,
                r.watermark_ms,
                r.last_order,
                r.partial,
                r.position,
                r.rows_added,
                r.committed_at_ms,
                r.source,
                r.version,
                now,
                r.late_from_ms,
                r.late_to_ms,
            )
            for r in reports
        ]
        statement = sql.SQL(
            "INSERT INTO {}.reports (table_name, snapshot_id, watermark_ms, last_order, "
            "partial, position, rows_added, committed_at_ms, source, version, recorded_at, "
            "late_from_ms, late_to_ms) VALUES %s "
            "ON CONFLICT (table_name, snapshot_id) DO NOTHING "
            "RETURNING table_name, CASE WHEN partial THEN 0 ELSE watermark_ms END"
        ).format(self._schema)
        with self._transaction() as cursor:
            # one statement a page: a flush of a thousand tables is a thousand reports
            inserted = execute_values(cursor, statement.as_string(cursor), rows, fetch=True)
            self._sample_freshness(cursor, inserted, now)
        return len(inserted)

    def record_watermarks(self, reports: Sequence[WatermarkReport], now: datetime) -> int:
        """Raise the watermark of each recorded report a watermark report names (table and
        snapshot id) to the watermark report's; marks of snapshots not recorded yet wait for
        the next watermark report (``WatermarkReport``). Returns how many reports moved."""
        # per commit, the first and the newest watermark the reports give it
        marks: dict[tuple[str, int], tuple[int, int]] = {}
        for report in reports:
            for table, mark in report.tables.items():
                key, watermark = (table, mark.snapshot_id), report.watermark_ms
                first, newest = marks.get(key, (watermark, watermark))
                marks[key] = (min(first, watermark), max(newest, watermark))
        if not marks:
            return 0
        rows = [(table, snapshot, *span, now) for (table, snapshot), span in marks.items()]
        statement = sql.SQL(
            # recorded_at is when the watermark last moved (``watermark_reached_at``)
            "UPDATE {}.reports AS r SET marked_ms = m.newest, recorded_at = m.now, "
            "first_marked_ms = COALESCE(r.first_marked_ms, m.first) "
            "FROM (VALUES %s) AS m (table_name, snapshot_id, first, newest, now) "
            "WHERE r.table_name = m.table_name AND r.snapshot_id = m.snapshot_id "
            "AND NOT r.partial AND GREATEST(r.watermark_ms, r.marked_ms) < m.newest "
            "RETURNING r.table_name, m.newest"
        ).format(self._schema)
        with self._transaction() as cursor:
            moved = execute_values(
                cursor,
                statement.as_string(cursor),
                rows,
                template="(%s, %s::bigint, %s::bigint, %s::bigint, %s::timestamptz)",
                fetch=True,
            )
            self._sample_freshness(cursor, moved, now)
        return len(moved)

    def _sample_freshness(
        self, cursor: psycopg2.extensions.cursor, reached: Iterable[tuple[str, int]], now: datetime
    ) -> None:
        """Keep, per table and minute, the furthest watermark just recorded and when: one row a
        minute whatever the report rate."""
        furthest: dict[str, int] = {}
        for table, watermark_ms in reached:
            if watermark_ms > furthest.get(table, 0):
                furthest[table] = watermark_ms
        if not furthest:
            return
        minute = now.replace(second=0, microsecond=0)
        statement = sql.SQL(
            "INSERT INTO {}.freshness AS f (table_name, minute, watermark_ms, seen_at) VALUES %s "
            "ON CONFLICT (table_name, minute) DO UPDATE "
            "SET watermark_ms = EXCLUDED.watermark_ms, seen_at = EXCLUDED.seen_at "
            "WHERE f.watermark_ms < EXCLUDED.watermark_ms"
        ).format(self._schema)
        samples = [(table, minute, mark, now) for table, mark in sorted(furthest.items())]
        # the status page's charts must never cost the reports they ride with
        cursor.execute("SAVEPOINT freshness")
        try:
            execute_values(cursor, statement.as_string(cursor), samples)
        except (psycopg2.ProgrammingError, psycopg2.DataError, psycopg2.IntegrityError) as error:
            cursor.execute("ROLLBACK TO SAVEPOINT freshness")
            if not self._sampling_refused:
                self._sampling_refused = True
                logger.warning(
                    "Freshness samples for the status page cannot be written to %s.freshness "
                    "(%s); the reports are recorded, the page's charts have only the "
                    "changelogs' commits. Grant the scheduler's role INSERT and UPDATE on it.",
                    self.schema,
                    first_line(error),
                )
        else:
            cursor.execute("RELEASE SAVEPOINT freshness")

    def freshness(self, tables: Iterable[str], since: datetime) -> dict[str, list[FreshnessSample]]:
        """Per changelog table, the samples since ``since``, and the newest one before it
        (where a chart of ``since`` onwards starts); oldest first."""
        names = list(tables)
        with self._transaction() as cursor:
            if not self._has_table(cursor, "freshness"):  # no scheduler of this version yet
                return {}
            cursor.execute(
                sql.SQL(
                    "SELECT table_name, seen_at, watermark_ms FROM {schema}.freshness "
                    "WHERE table_name = ANY(%s) AND minute >= %s "
                    # the newest before, per table: one step down its primary key
                    "UNION ALL SELECT t.name, b.seen_at, b.watermark_ms "
                    "FROM unnest(%s::text[]) AS t (name) CROSS JOIN LATERAL ("
                    "SELECT seen_at, watermark_ms FROM {schema}.freshness "
                    "WHERE table_name = t.name AND minute < %s ORDER BY minute DESC LIMIT 1) AS b "
                    "ORDER BY 1, 2"
                ).format(schema=self._schema),
                (names, since, names, since),
            )
            history: dict[str, list[FreshnessSample]] = defaultdict(list)
            for table, seen_at, watermark_ms in cursor.fetchall():
                history[table].append(FreshnessSample(seen_at, int(watermark_ms)))
        return dict(history)

    def prune_freshness(self, before: datetime) -> int:
        """Delete the freshness samples from before ``before``, of every table: those of tables
        no pipeline has any more too."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL("DELETE FROM {}.freshness WHERE minute < %s").format(self._schema),
                (before,),
            )
            return int(cursor.rowcount)

    def late_changes(
        self, pipeline: str, changelog: str, mirror: WindowTask, after: datetime, upto: datetime
    ) -> list[tuple[int, int]]:
        """The commit-time ranges (epoch ms) of late changes in the reports of ``changelog``
        that ``mirror`` merged after its window ending at ``after`` and up to its window ending
        at ``upto`` (by their cuts); none when either window has no recorded cut."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT r.late_from_ms, r.late_to_ms FROM {schema}.reports r "
                    "JOIN {schema}.window_runs a ON a.pipeline = %s AND a.task = %s "
                    "AND a.window_end = %s "
                    "JOIN {schema}.window_runs b ON b.pipeline = a.pipeline AND b.task = a.task "
                    "AND b.window_end = %s "
                    "WHERE r.table_name = %s AND r.late_from_ms IS NOT NULL "
                    "AND r.last_order > a.up_to_order AND r.last_order <= b.up_to_order "
                    "ORDER BY r.late_from_ms"
                ).format(schema=self._schema),
                (pipeline, str(mirror), after, upto, changelog),
            )
            return [(int(first), int(last)) for first, last in cursor.fetchall()]

    def late_changes_in_snapshots(
        self, changelog: str, after: int, upto: int
    ) -> list[tuple[int, int]]:
        """The commit-time ranges (epoch ms) of late changes in the reports of ``changelog``
        (a Paimon table) with a snapshot id after ``after`` and up to ``upto``: what a job
        over it read at ``upto`` that it had not at ``after``."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT late_from_ms, late_to_ms FROM {}.reports WHERE table_name = %s "
                    "AND late_from_ms IS NOT NULL AND snapshot_id > %s AND snapshot_id <= %s "
                    "ORDER BY late_from_ms"
                ).format(self._schema),
                (changelog, after, upto),
            )
            return [(int(first), int(last)) for first, last in cursor.fetchall()]

    def window_run(self, pipeline: str, task: WindowTask, end: datetime) -> WindowRun | None:
        """The recorded window of ``task`` ending at ``end``."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT " + _RUN_COLUMNS + " FROM {}.window_runs "
                    "WHERE pipeline = %s AND task = %s AND window_end = %s"
                ).format(self._schema),
                (pipeline, str(task), end),
            )
            row = cursor.fetchone()
        return None if row is None else _run(row)

    def first_window(self, pipeline: str, task: WindowTask) -> Window | None:
        """The earliest window recorded for ``task``."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT window_start, window_end FROM {}.window_runs "
                    "WHERE pipeline = %s AND task = %s ORDER BY window_end LIMIT 1"
                ).format(self._schema),
                (pipeline, str(task)),
            )
            row = cursor.fetchone()
        return None if row is None else Window(row[0], row[1])

    def report_count(self, table: str) -> int:
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL("SELECT count(*) FROM {}.reports WHERE table_name = %s").format(
                    self._schema
                ),
                (table,),
            )
            (count,) = cursor.fetchone() or (0,)
        return int(count)

    def prune_reports(self, tables: Iterable[str], before_ms: int) -> int:
        """Delete the reports of ``tables`` (changelog names) with a watermark before
        ``before_ms``, but the newest of them per table, which still bounds the table's history
        from below; how many were deleted."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "DELETE FROM {schema}.reports WHERE table_name = ANY(%s) AND {reached} < %s "
                    "AND (table_name, snapshot_id) NOT IN ("
                    "SELECT DISTINCT ON (table_name) table_name, snapshot_id FROM {schema}.reports "
                    "WHERE table_name = ANY(%s) AND {reached} < %s AND NOT partial "
                    "ORDER BY table_name, {reached} DESC, snapshot_id DESC)"
                ).format(schema=self._schema, reached=_REACHED),
                (list(tables), before_ms, list(tables), before_ms),
            )
            return int(cursor.rowcount)

    def table_states(self, tables: Mapping[str, str], since_ms: int) -> dict[str, TableState]:
        """Per sink table (``tables`` maps sink to changelog name): its complete watermarks and
        the complete reports with a watermark at or after ``since_ms`` (where cuts are found)."""
        changelogs = list(tables.values())
        states: dict[str, TableState] = {}
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    # watermark 0 promises nothing (a table still bootstrapping): no bound;
                    # the first is the first a report gave, whatever marks did since
                    "SELECT table_name, min(COALESCE(NULLIF(watermark_ms, 0), first_marked_ms)), "
                    "max({reached}) FROM {schema}.reports "
                    "WHERE table_name = ANY(%s) AND NOT partial AND {reached} > 0 "
                    "GROUP BY table_name"
                ).format(schema=self._schema, reached=_REACHED),
                (changelogs,),
            )
            bounds = {row[0]: (int(row[1]), int(row[2])) for row in cursor.fetchall()}
            cursor.execute(
                sql.SQL(
                    "SELECT table_name, snapshot_id, {reached}, last_order FROM {schema}.reports "
                    "WHERE table_name = ANY(%s) AND NOT partial AND {reached} >= %s "
                    "ORDER BY table_name, {reached}, snapshot_id"
                ).format(schema=self._schema, reached=_REACHED),
                (changelogs, since_ms),
            )
            history: dict[str, list[ReportRecord]] = defaultdict(list)
            for table, snapshot_id, watermark_ms, last_order in cursor.fetchall():
                history[table].append(ReportRecord(snapshot_id, watermark_ms, last_order))
        for sink, changelog in tables.items():
            if changelog in bounds:
                first, last = bounds[changelog]
                states[sink] = TableState(first, last, tuple(history[changelog]))
        return states

    def watermarks(self, tables: Iterable[str]) -> dict[str, int]:
        """Per changelog table with a promise, the watermark its recorded reports reached
        (watermark reports included)."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT table_name, max({reached}) FROM {schema}.reports "
                    "WHERE table_name = ANY(%s) AND NOT partial AND {reached} > 0 "
                    "GROUP BY table_name"
                ).format(schema=self._schema, reached=_REACHED),
                (list(tables),),
            )
            return {row[0]: int(row[1]) for row in cursor.fetchall()}

    def watermark_reached_at(self, tables: Iterable[str]) -> dict[str, RecordedReport]:
        """Per changelog table, the first recorded report that carried its current watermark:
        when the watermark last moved, by the scheduler's clock."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT DISTINCT ON (table_name) table_name, snapshot_id, {reached}, "
                    "recorded_at FROM {schema}.reports WHERE table_name = ANY(%s) AND NOT partial "
                    "ORDER BY table_name, {reached} DESC, recorded_at ASC"
                ).format(schema=self._schema, reached=_REACHED),
                (list(tables),),
            )
            return {row[0]: RecordedReport(*row) for row in cursor.fetchall()}

    # -- window runs ---------------------------------------------------------------------

    def task_states(self, pipeline: str) -> dict[WindowTask, TaskState]:
        """Per task: its last succeeded window's end and its open (not succeeded) window."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT task, max(window_end) FROM {}.window_runs "
                    "WHERE pipeline = %s AND state = 'succeeded' GROUP BY task"
                ).format(self._schema),
                (pipeline,),
            )
            done = {_task(row[0]): row[1] for row in cursor.fetchall()}
            cursor.execute(
                sql.SQL(
                    "SELECT DISTINCT ON (task) " + _RUN_COLUMNS + " FROM {}.window_runs "
                    "WHERE pipeline = %s AND state <> 'succeeded' ORDER BY task, window_end"
                ).format(self._schema),
                (pipeline,),
            )
            open_runs = {run.task: run for run in map(_run, cursor.fetchall())}
        return {
            task: TaskState(done.get(task), open_runs.get(task))
            for task in done.keys() | open_runs.keys()
        }

    def runs(self, pipeline: str, task: WindowTask | None = None) -> list[WindowRun]:
        """Every recorded window of ``pipeline`` (of one task), oldest first."""
        condition = sql.SQL("pipeline = %s") + (sql.SQL(" AND task = %s") if task else sql.SQL(""))
        params: tuple[str, ...] = (pipeline, str(task)) if task else (pipeline,)
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT " + _RUN_COLUMNS + " FROM {}.window_runs WHERE {} "
                    "ORDER BY task, window_end"
                ).format(self._schema, condition),
                params,
            )
            return [_run(row) for row in cursor.fetchall()]

    def recent_runs(
        self, pipeline: str, tasks: Iterable[WindowTask], per_task: int
    ) -> list[WindowRun]:
        """The newest ``per_task`` recorded windows of each of ``tasks``, oldest first: each
        task's a few steps down the primary key, however long the history."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "SELECT r.* FROM unnest(%s::text[]) AS t (task) CROSS JOIN LATERAL ("
                    "SELECT " + _RUN_COLUMNS + " FROM {}.window_runs "
                    "WHERE pipeline = %s AND task = t.task ORDER BY window_end DESC LIMIT %s) AS r "
                    "ORDER BY r.task, r.window_end"
                ).format(self._schema),
                ([str(task) for task in tasks], pipeline, per_task),
            )
            return [_run(row) for row in cursor.fetchall()]

    def mark_pending(
        self,
        pipeline: str,
        task: WindowTask,
        window: Window,
        up_to_order: int | None,
        now: datetime,
        snapshots: Mapping[str, int] | None = None,
    ) -> None:
        """Record a window about to be submitted; its cut (and a Paimon job's ``snapshots``)
        is fixed from here on."""
        pinned = Json(dict(snapshots)) if snapshots else None
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "INSERT INTO {}.window_runs (pipeline, task, window_start, window_end, "
                    "state, up_to_order, snapshots, updated_at) "
                    "VALUES (%s, %s, %s, %s, 'pending', %s, %s, %s) "
                    "ON CONFLICT (pipeline, task, window_end) DO NOTHING"
                ).format(self._schema),
                (pipeline, str(task), window.start, window.end, up_to_order, pinned, now),
            )

    def mark_running(
        self, pipeline: str, task: WindowTask, window: Window, attempt: int, now: datetime
    ) -> None:
        """Record that the executor is being called for the ``attempt``-th time (the gate's
        ``DueWindow.attempt``). Sets the count rather than adding one: written again after a
        connection broke mid-commit, it counts the attempt once."""
        self._update(
            pipeline,
            task,
            window,
            "state = 'running', attempts = %s, retry_at = NULL, updated_at = %s",
            (attempt, now),
        )

    def mark_succeeded(
        self, pipeline: str, task: WindowTask, window: Window, now: datetime
    ) -> None:
        self._update(
            pipeline,
            task,
            window,
            "state = 'succeeded', last_error = NULL, retry_at = NULL, updated_at = %s",
            (now,),
        )

    def mark_failed(
        self,
        pipeline: str,
        task: WindowTask,
        window: Window,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> None:
        """Record a failure; ``retry_at`` None holds the window until someone releases it."""
        self._update(
            pipeline,
            task,
            window,
            "state = 'failed', last_error = %s, retry_at = %s, updated_at = %s",
            (error, retry_at, now),
        )

    def mark_interrupted(
        self,
        pipeline: str,
        task: WindowTask,
        window: Window,
        error: str,
        retry_at: datetime,
        now: datetime,
    ) -> None:
        """Record a failure because a service the window needs was down: retried at
        ``retry_at``, its attempt not counted (the outage was not the window's)."""
        self._update(
            pipeline,
            task,
            window,
            "state = 'failed', attempts = GREATEST(attempts - 1, 0), last_error = %s, "
            "retry_at = %s, updated_at = %s",
            (error, retry_at, now),
        )

    def release(self, pipeline: str, task: WindowTask, now: datetime) -> Window | None:
        """Let the held window of ``task`` be tried again at once, its retries counted afresh;
        that window, or None when none was held."""
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "UPDATE {}.window_runs SET retry_at = %s, attempts = 0, updated_at = %s "
                    "WHERE pipeline = %s AND task = %s AND state = 'failed' AND retry_at IS NULL "
                    "RETURNING window_start, window_end"
                ).format(self._schema),
                (now, now, pipeline, str(task)),
            )
            row = cursor.fetchone()
        return None if row is None else Window(row[0], row[1])

    def _update(
        self,
        pipeline: str,
        task: WindowTask,
        window: Window,
        assignments: str,
        params: tuple[Any, ...],
    ) -> int:
        with self._transaction() as cursor:
            cursor.execute(
                sql.SQL(
                    "UPDATE {}.window_runs SET "
                    + assignments
                    + " WHERE pipeline = %s AND task = %s AND window_end = %s RETURNING attempts"
                ).format(self._schema),
                (*params, pipeline, str(task), window.end),
            )
            row = cursor.fetchone()
        if row is None:
            raise SchedulerError(
                f"window {window} of {task} in pipeline {pipeline} is not recorded; it must be "
                "marked pending before it runs"
            )
        return int(row[0])

    # -- connections ---------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[psycopg2.extensions.cursor]:
        connection = self._thread_connection()
        try:
            with connection, connection.cursor() as cursor:  # commits, or rolls back on error
                yield cursor
        except psycopg2.errors.UndefinedTable:
            raise StateMissingError(
                f"the scheduler state schema {self.schema} does not exist at {self.where}: "
                "no scheduler has run against this database yet (`tidemark schedule` creates "
                "it), or --state-schema names another"
            ) from None
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as error:
            self._discard(connection)
            self._failed()
            raise StateUnavailableError(
                f"the scheduler state database at {self.where} failed mid-transaction: "
                f"{str(error).strip()}",
                first_line(_first_error(error)),
            ) from None

    def _thread_connection(self) -> psycopg2.extensions.connection:
        """This thread's connection, opened on first use and again after a failure: a tick
        makes a few transactions a second, and a connection costs ~15 ms to open."""
        connection: psycopg2.extensions.connection | None = getattr(self._local, "connection", None)
        if connection is not None and self._local.failures != self._failures:
            self._discard(connection)  # opened before the database failed: likely dead
            connection = None
        if connection is None or connection.closed:
            failures = self._failures
            connection = self._connect()
            self._local.connection, self._local.failures = connection, failures
        return connection

    def _failed(self) -> None:
        """A connection broke: the server restarted, or the network failed."""
        with self._failures_lock:
            self._failures += 1

    def _discard(self, connection: psycopg2.extensions.connection) -> None:
        self._local.connection = None
        connection.close()

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            self._discard(connection)

    def _connect(self) -> psycopg2.extensions.connection:
        params: dict[str, Any] = {
            "connect_timeout": str(self._settings.connect_timeout_seconds),
            "application_name": "tidemark-scheduler",  # for pg_stat_activity
            **self._settings.connection,
            # times come back in UTC, whatever the server's TimeZone
            "options": "-c TimeZone=UTC",
        }
        try:
            return psycopg2.connect(**params)
        except psycopg2.OperationalError as error:
            raise StateUnavailableError(
                f"the scheduler state database at {self.where} did not answer: "
                f"{str(error).strip()}",
                first_line(error),
            ) from None

    @property
    def where(self) -> str:
        """The state database's host and port, for messages."""
        connection = self._settings.connection
        return f"{connection.get('host', 'localhost')}:{connection.get('port', 5432)}"


#: a standby asks for the lock again this often (and sees then whether it was asked to stop)
_WAIT_SECONDS = 2
_INSTANCE_NAME = re.compile(r"^tidemark scheduler (active|standby) (\d+) (\d+)@(.*)$")


def _first_error(error: BaseException) -> BaseException:
    """The driver's error that began a failure: the rollback after a broken connection fails
    too ("connection already closed"), hiding why it broke."""
    context = error.__context__
    if isinstance(error, psycopg2.InterfaceError) and isinstance(context, psycopg2.Error):
        return context
    return error


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _instance_name(state: State, since: datetime) -> str:
    """This process as its lock connection's ``application_name`` (63 bytes at most)."""
    me = this_process(Role.SCHEDULER, "", state, since)
    return f"tidemark scheduler {state} {int(since.timestamp())} {me.pid}@{me.host}"[:63]


def _instance(pipeline: str, application_name: str | None) -> Instance | None:
    found = _INSTANCE_NAME.match(application_name or "")
    if found is None:
        return None
    state, since, pid, host = found.groups()
    return Instance(
        role=Role.SCHEDULER,
        pipeline=pipeline,
        state=State(state),
        host=host,
        pid=int(pid),
        since=datetime.fromtimestamp(int(since), UTC),
    )


class PipelineLock:
    """A pipeline's session advisory lock, on a connection of its own: the scheduler that
    holds it is the pipeline's active one, the others wait for it as standbys (``wait``).

    Each says who it is in its connection's ``application_name`` (``_instance_name``), so a
    standby, and ``tidemark status``, can name the active scheduler and the waiting ones
    (``scheduler_holders``). A PostgreSQL restart ends the session and so frees the lock
    without telling its holder, and another scheduler could then take the pipeline. The
    holder confirms the lock before each tick: it takes it again after a restart, or stops if
    another scheduler was quicker.
    """

    def __init__(self, store: StateStore, pipeline: str) -> None:
        self._store = store
        self.pipeline = pipeline
        self._connection: psycopg2.extensions.connection | None = None

    @property
    def key(self) -> str:
        return f"{self._store.schema}/{self.pipeline}"

    def wait(
        self,
        stop: threading.Event,
        deadline: float | None = None,
        now: Callable[[], datetime] = _utc_now,
    ) -> bool:
        """Wait as a standby until this process holds the pipeline (True), or until ``stop``
        is set or the monotonic ``deadline`` passes (False). Logs for whom it waits. Asks once
        at least, whatever the deadline, but never once ``stop`` is set: a lock granted while
        the stop came is given back at once."""
        if stop.is_set():
            return False
        connection = self._store._connect()
        waiting_for: Instance | None = None
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT set_config('application_name', %s, false), "
                    "set_config('lock_timeout', %s, false)",
                    (_instance_name(State.STANDBY, now()), f"{_WAIT_SECONDS}s"),
                )
                while True:
                    if stop.is_set():
                        connection.close()
                        return False
                    try:
                        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", (self.key,))
                        break
                    except psycopg2.errors.LockNotAvailable:
                        pass
                    if deadline is not None and time.monotonic() >= deadline:
                        connection.close()
                        return False
                    active = self._store.holders(self.pipeline).active
                    if isinstance(active, Instance) and active != waiting_for:
                        logger.warning(
                            "Waiting as a standby: the scheduler of pipeline %r is active %s; "
                            "this process takes over when that one ends",
                            self.pipeline,
                            active.describe(),
                        )
                        waiting_for = active
                if stop.is_set():  # granted while the stop came
                    connection.close()
                    return False
                cursor.execute(
                    "SELECT set_config('application_name', %s, false), "
                    "set_config('lock_timeout', '0', false)",
                    (_instance_name(State.ACTIVE, now()),),
                )
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as error:
            connection.close()
            raise StateUnavailableError(
                f"the scheduler state database at {self._store.where} failed while waiting "
                f"for pipeline {self.pipeline!r}'s lock: {str(error).strip()}",
                first_line(error),
            ) from None
        self._connection = connection
        logger.info("Active: this process schedules pipeline %r", self.pipeline)
        return True

    def acquire(self, *, after_restart: bool = False) -> None:
        """Take the lock now, or raise ``PipelineLockedError``."""
        connection = self._store._connect()
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_try_advisory_lock(hashtext(%s)), "
                    "set_config('application_name', %s, false)",
                    (self.key, _instance_name(State.ACTIVE, _utc_now())),
                )
                (locked, _) = cursor.fetchone() or (False, None)
        except (psycopg2.OperationalError, psycopg2.InterfaceError) as error:
            connection.close()
            raise StateUnavailableError(
                f"the scheduler state database at {self._store.where} failed while taking "
                f"pipeline {self.pipeline!r}'s lock: {str(error).strip()}",
                first_line(error),
            ) from None
        if not locked:
            connection.close()
            where = f"schema {self._store.schema} at {self._store.where}"
            if after_restart:
                raise PipelineLockedError(
                    f"pipeline {self.pipeline!r}'s lock was lost when the state database "
                    f"({where}) restarted, and another scheduler took it: this one stops so "
                    "that no window runs twice"
                )
            raise PipelineLockedError(
                f"another scheduler already runs pipeline {self.pipeline!r} with the state in "
                f"{where}; stop it first (or give this file its own pipeline.name)"
            )
        self._connection = connection

    def confirm(self) -> None:
        """Return while this process holds the lock; take it again if a restart of the state
        database freed it. ``StateUnavailableError`` while the database is down,
        ``PipelineLockedError`` if another scheduler took the pipeline meanwhile."""
        connection = self._connection
        if connection is not None and not connection.closed:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT 1")  # the same session still holds its lock
                return
            except (psycopg2.OperationalError, psycopg2.InterfaceError):
                connection.close()
                self._store._failed()  # the store's other connections are likely broken too
            logger.warning(
                "The scheduler state database lost pipeline %r's lock (a restart?); taking it "
                "again",
                self.pipeline,
            )
        self.acquire(after_restart=True)

    def release(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


_RUN_COLUMNS = (
    "task, window_start, window_end, state, attempts, up_to_order, last_error, retry_at, snapshots"
)


def _run(row: tuple[Any, ...]) -> WindowRun:
    task, start, end, state, attempts, up_to_order, last_error, retry_at, snapshots = row
    return WindowRun(
        _task(task),
        Window(start, end),
        RunState(state),
        attempts,
        up_to_order,
        last_error,
        retry_at,
        {str(table): int(snapshot) for table, snapshot in (snapshots or {}).items()},
    )


def _task(text: str) -> WindowTask:
    kind, name = text.split(":", 1)
    return WindowTask(TaskKind(kind), name)
