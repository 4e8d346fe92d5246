"""Table maintenance: compact changelog and mirror tables, expire the snapshots nobody needs.

Two parts. *Planning* is pure: from a table's snapshot history (and, for a changelog, the
newest window its mirror holds) it computes the instant before which snapshots may be expired,
and why. *Running* calls Iceberg's Spark procedures through one SparkSession and reports, per
table, what it rewrote and expired.

What must survive (docs/architecture.md#history-outside-the-table, docs/maintenance.md):

- the newest snapshot carrying ingest's progress (``tidemark.position``). Compaction commits
  (``replace``) carry no summary keys: Iceberg's procedures take no snapshot properties, and the
  session conf ``spark.sql.iceberg.snapshot-property.*`` does not reach them (tried on Iceberg
  1.11 / Spark 4.1). Ingest walks back from the current snapshot to the newest keyed one, so
  that one and every snapshot after it must stay, or the walk stops at an expired parent.
- the changelog snapshots that windows not yet run will look for: a window merge takes its
  upper bound from the earliest snapshot whose watermark reaches the window's end. We keep
  every snapshot from the last one below (newest mirror window end - one window) onwards, so
  the next windows, and a re-run of the last one, find the same snapshot as before expiry.
- the newest mirror snapshot stamped with ``tidemark.window-end``: the merge reads it to know
  which windows the mirror holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from spark_jobs.session import SparkSettings, build_session
from tidemark.config.plan import SinkTable
from tidemark.contracts.changelog import MetadataColumn, SummaryKey
from tidemark.contracts.mirror import MirrorKey
from tidemark.errors import TransientError
from tidemark.windows import from_epoch_ms

logger = logging.getLogger(__name__)


class TableKind(StrEnum):
    CHANGELOG = "changelog"
    MIRROR = "mirror"


@dataclass(frozen=True)
class MaintenanceSettings:
    """How hard to compact and how much history to keep; docs/maintenance.md has the YAML
    block these will come from."""

    #: snapshots younger than this always stay: a reader may have planned a scan on one. Not
    #: longer: at ingest's commit every 2 s, 10 min is already 300 snapshots, and commits slow
    #: down as they pile up (docs/maintenance.md has the figures)
    min_snapshot_age: timedelta = timedelta(minutes=10)
    #: Iceberg keeps at least this many of the newest snapshots whatever their age
    retain_last: int = 10
    target_file_size_bytes: int = 128 * 1024 * 1024
    #: a partition is compacted once it has this many files too small or too large
    min_input_files: int = 5
    #: a mirror data file with this many delete files is rewritten with its deletes applied
    delete_file_threshold: int = 3

    def __post_init__(self) -> None:
        for name in ("retain_last", "target_file_size_bytes", "min_input_files"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got: {getattr(self, name)}")
        if self.delete_file_threshold < 1:
            raise ValueError(
                f"delete_file_threshold must be at least 1, got: {self.delete_file_threshold}"
            )
        if self.min_snapshot_age < timedelta(0):
            raise ValueError(f"min_snapshot_age must not be negative, got: {self.min_snapshot_age}")


# --- planning: pure -------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotInfo:
    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    summary: Mapping[str, str] = field(default_factory=dict)

    @property
    def watermark_ms(self) -> int | None:
        value = self.summary.get(SummaryKey.WATERMARK)
        return int(value) if value is not None else None

    @property
    def window_end_ms(self) -> int | None:
        value = self.summary.get(MirrorKey.WINDOW_END)
        return int(value) if value is not None else None


def ancestry(snapshots: Sequence[SnapshotInfo], current_id: int | None) -> list[SnapshotInfo]:
    """The current snapshot and its ancestors still in the table, oldest first."""
    by_id = {s.snapshot_id: s for s in snapshots}
    chain: list[SnapshotInfo] = []
    snapshot_id = current_id
    while snapshot_id is not None and snapshot_id in by_id:
        chain.append(by_id[snapshot_id])
        snapshot_id = by_id[snapshot_id].parent_id
    return chain[::-1]


@dataclass(frozen=True)
class MirrorProgress:
    """What a sink's mirror holds: the end of its newest merged window (None: never merged)."""

    window_end_ms: int | None
    window: timedelta


@dataclass(frozen=True)
class Limit:
    """Snapshots from ``keep_from_ms`` on stay (None: all stay), for ``reason``."""

    keep_from_ms: int | None
    reason: str


@dataclass(frozen=True)
class Retention:
    """Snapshots older than ``expire_before_ms`` may be expired; None keeps them all."""

    expire_before_ms: int | None
    limits: tuple[Limit, ...]

    @property
    def reason(self) -> str:
        """The limit that decided, for people."""
        if not self.limits:
            return "no limit"
        if self.expire_before_ms is None:
            return next(limit.reason for limit in self.limits if limit.keep_from_ms is None)
        return next(
            limit.reason for limit in self.limits if limit.keep_from_ms == self.expire_before_ms
        )

    def expirable(self, chain: Sequence[SnapshotInfo], retain_last: int) -> list[SnapshotInfo]:
        """The snapshots of ``chain`` (oldest first) that expiry would remove."""
        if self.expire_before_ms is None:
            return []
        candidates = chain[: max(len(chain) - retain_last, 0)]
        return [s for s in candidates if s.timestamp_ms < self.expire_before_ms]


def changelog_retention(
    chain: Sequence[SnapshotInfo],
    mirror: MirrorProgress | None,
    now_ms: int,
    settings: MaintenanceSettings,
) -> Retention:
    """What of a changelog's history (``chain``, oldest first) must stay.

    ``mirror`` is None when the sink has no mirror: then no window reads this changelog by
    watermark, and only age and ingest's progress hold snapshots back.
    """
    limits = [_age_limit(now_ms, settings), _progress_limit(chain)]
    if mirror is not None:
        limits.append(_window_limit(chain, mirror))
    return _retention(limits)


def mirror_retention(
    chain: Sequence[SnapshotInfo], now_ms: int, settings: MaintenanceSettings
) -> Retention:
    """What of a mirror's history must stay: its newest window stamp, and young snapshots."""
    stamped = _last_index(chain, lambda s: s.window_end_ms is not None)
    limits = [_age_limit(now_ms, settings)]
    if stamped is not None:
        limits.append(
            Limit(
                _suffix_start(chain, stamped),
                f"the newest window stamp (snapshot {chain[stamped].snapshot_id}): merges read "
                "it to know which windows the mirror holds",
            )
        )
    return _retention(limits)


def _retention(limits: Sequence[Limit]) -> Retention:
    keep = [limit.keep_from_ms for limit in limits]
    if any(value is None for value in keep):
        return Retention(None, tuple(limits))
    return Retention(min(value for value in keep if value is not None), tuple(limits))


def _age_limit(now_ms: int, settings: MaintenanceSettings) -> Limit:
    age_ms = settings.min_snapshot_age // timedelta(milliseconds=1)
    return Limit(now_ms - age_ms, f"snapshots younger than {settings.min_snapshot_age}")


def _progress_limit(chain: Sequence[SnapshotInfo]) -> Limit:
    newest = _last_index(chain, lambda s: SummaryKey.POSITION in s.summary)
    if newest is None:
        # Nothing to resume from yet: a table Tidemark has not committed to.
        return Limit(_suffix_start(chain, len(chain) - 1) if chain else 0, "the current snapshot")
    return Limit(
        _suffix_start(chain, newest),
        f"ingest's newest progress (snapshot {chain[newest].snapshot_id}): ingest resumes from it",
    )


def _window_limit(chain: Sequence[SnapshotInfo], mirror: MirrorProgress) -> Limit:
    if mirror.window_end_ms is None:
        return Limit(None, "the mirror has no merged window yet: its first window may need any")
    needed_from = mirror.window_end_ms - mirror.window // timedelta(milliseconds=1)
    below = _last_index(
        chain, lambda s: s.watermark_ms is not None and s.watermark_ms < needed_from
    )
    if below is None:
        return Limit(
            None,
            f"windows from {from_epoch_ms(needed_from).isoformat()} on need every snapshot: "
            "none has a watermark before",
        )
    return Limit(
        _suffix_start(chain, below),
        f"windows from {from_epoch_ms(needed_from).isoformat()} on (the mirror holds windows to "
        f"{from_epoch_ms(mirror.window_end_ms).isoformat()})",
    )


def _last_index(
    chain: Sequence[SnapshotInfo], predicate: Callable[[SnapshotInfo], bool]
) -> int | None:
    return next((i for i in range(len(chain) - 1, -1, -1) if predicate(chain[i])), None)


def _suffix_start(chain: Sequence[SnapshotInfo], index: int) -> int:
    # The oldest timestamp from ``index`` on, not chain[index]'s own: clocks of the hosts that
    # commit (ingest, Spark) can disagree, and a snapshot after the kept one must not go.
    return min(s.timestamp_ms for s in chain[index:])


# --- running: Spark -------------------------------------------------------------------------


@dataclass(frozen=True)
class FileCounts:
    data_files: int
    delete_files: int


@dataclass(frozen=True)
class TableResult:
    table: str
    kind: TableKind
    dry_run: bool
    exists: bool = True
    retention: Retention | None = None
    files_before: FileCounts | None = None
    files_after: FileCounts | None = None
    rewritten_data_files: int = 0
    added_data_files: int = 0
    rewritten_delete_files: int = 0
    snapshots_before: int = 0
    #: expired by this run; in a dry run, the snapshots it would expire
    snapshots_expired: int = 0
    compact_seconds: float = 0.0
    expire_seconds: float = 0.0
    error: str | None = None


class TableMaintainer:
    """Maintains the changelog and mirror tables of sink tables through one SparkSession."""

    def __init__(
        self,
        spark: SparkSession,
        catalog_name: str,
        settings: MaintenanceSettings | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._spark = spark
        self._catalog = catalog_name
        self._settings = settings or MaintenanceSettings()
        self._now = now

    def maintain(
        self,
        sink: SinkTable,
        *,
        dry_run: bool = False,
        only: str | None = None,
        on_result: Callable[[TableResult], None] | None = None,
    ) -> list[TableResult]:
        """The changelog then the mirror of ``sink`` (or just the table named ``only``,
        ``tables_of``); ``on_result`` has each table's result as soon as that table is done."""
        try:
            mirror = self._mirror_progress(sink)
        except (Py4JJavaError, PySparkException) as error:
            raise TransientError(
                f"reading the window stamps of mirror {sink.mirror} failed: "
                f"{_first_line(error)}; without them its changelog's history cannot be trimmed "
                "safely: check the catalog, then run again"
            ) from error
        results = []
        for table, kind in tables_of(sink, only):
            # a changelog's history is kept for the windows its mirror has still to merge
            needs = mirror if kind is TableKind.CHANGELOG else None
            result = self._run(table, kind, needs, dry_run)
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    def _mirror_progress(self, sink: SinkTable) -> MirrorProgress | None:
        if sink.mirror is None:
            return None
        if not self._exists(sink.mirror):
            return MirrorProgress(None, sink.mirror_window)
        ends = [s.window_end_ms for s in self._chain(sink.mirror) if s.window_end_ms is not None]
        return MirrorProgress(max(ends) if ends else None, sink.mirror_window)

    def _run(
        self, table: str, kind: TableKind, mirror: MirrorProgress | None, dry_run: bool
    ) -> TableResult:
        try:
            if not self._exists(table):
                return TableResult(table, kind, dry_run, exists=False)
            if dry_run:
                return self._plan_only(table, kind, mirror)
            return self._compact_and_expire(table, kind, mirror)
        except (Py4JJavaError, PySparkException) as error:
            # One table's failure (most often a commit race lost to ingest) must not stop the
            # others; the result carries it and the CLI exits non-zero.
            message = _first_line(error)
            logger.error("Maintenance of %s failed: %s", table, message)
            return TableResult(table, kind, dry_run, error=message)

    def _plan_only(self, table: str, kind: TableKind, mirror: MirrorProgress | None) -> TableResult:
        files = self._files(table)
        retention = self._retention(table, kind, mirror)
        chain = self._chain(table)
        return TableResult(
            table,
            kind,
            dry_run=True,
            retention=retention,
            files_before=files,
            files_after=files,
            snapshots_before=len(self._snapshot_ids(table)),
            snapshots_expired=len(retention.expirable(chain, self._settings.retain_last)),
        )

    def _compact_and_expire(
        self, table: str, kind: TableKind, mirror: MirrorProgress | None
    ) -> TableResult:
        files_before = self._files(table)
        snapshots_before = self._snapshot_ids(table)
        with _timed() as compact_seconds:
            counts = self._compact(table, kind)
        # planned after the compaction, on the history as it is now (ingest kept committing)
        retention = self._retention(table, kind, mirror)
        with _timed() as expire_seconds:
            self._expire(table, retention)
        return TableResult(
            table,
            kind,
            dry_run=False,
            retention=retention,
            files_before=files_before,
            files_after=self._files(table),
            rewritten_data_files=counts.rewritten_data_files,
            added_data_files=counts.added_data_files,
            rewritten_delete_files=counts.rewritten_delete_files,
            snapshots_before=len(snapshots_before),
            snapshots_expired=len(snapshots_before - self._snapshot_ids(table)),
            compact_seconds=compact_seconds(),
            expire_seconds=expire_seconds(),
        )

    def _retention(self, table: str, kind: TableKind, mirror: MirrorProgress | None) -> Retention:
        now_ms = int(self._now().timestamp() * 1000)
        chain = self._chain(table)
        if kind is TableKind.CHANGELOG:
            return changelog_retention(chain, mirror, now_ms, self._settings)
        return mirror_retention(chain, now_ms, self._settings)

    def _compact(self, table: str, kind: TableKind) -> _Rewritten:
        settings = self._settings
        options = {
            "target-file-size-bytes": settings.target_file_size_bytes,
            "min-input-files": settings.min_input_files,
        }
        if kind is TableKind.CHANGELOG:
            # Sorted by the order key, so each file covers a narrow _tm_order range and a
            # window merge's range filter skips most files by their min/max statistics.
            row = self._call(
                "rewrite_data_files",
                table,
                f"strategy => 'sort', sort_order => '{MetadataColumn.ORDER_KEY}', "
                f"options => {_map(options)}",
            )
            return _Rewritten(row["rewritten_data_files_count"], row["added_data_files_count"], 0)
        options["delete-file-threshold"] = settings.delete_file_threshold
        row = self._call("rewrite_data_files", table, f"options => {_map(options)}")
        deletes = self._call(
            "rewrite_position_delete_files",
            table,
            f"options => {_map({'min-input-files': settings.min_input_files})}",
        )
        return _Rewritten(
            row["rewritten_data_files_count"],
            row["added_data_files_count"],
            deletes["rewritten_delete_files_count"],
        )

    def _expire(self, table: str, retention: Retention) -> None:
        if retention.expire_before_ms is None:
            logger.info("Keeping every snapshot of %s: %s", table, retention.reason)
            return
        cutoff = from_epoch_ms(retention.expire_before_ms)
        logger.info("Expiring snapshots of %s older than %s (%s)", table, cutoff, retention.reason)
        self._call(
            "expire_snapshots",
            table,
            f"older_than => TIMESTAMP '{_sql_timestamp(cutoff)}', "
            f"retain_last => {self._settings.retain_last}",
        )

    def _call(self, procedure: str, table: str, arguments: str) -> dict[str, int]:
        self._refresh(table)
        rows = self._spark.sql(
            f"CALL {self._catalog}.system.{procedure}("
            f"table => '{self._catalog}.{table}', {arguments})"
        ).collect()
        logger.info("%s %s: %s", procedure, table, rows)
        return rows[0].asDict() if rows else {}

    def _exists(self, table: str) -> bool:
        return bool(self._spark.catalog.tableExists(f"{self._catalog}.{table}"))

    def _refresh(self, table: str) -> None:
        # Spark's catalog caches table metadata; ingest commits from another process.
        self._spark.sql(f"REFRESH TABLE {self._name(table)}")

    def _files(self, table: str) -> FileCounts:
        self._refresh(table)
        rows = self._spark.sql(
            f"SELECT content, count(*) AS files FROM {self._name(table)}.files GROUP BY content"
        ).collect()
        by_content = {row["content"]: row["files"] for row in rows}
        return FileCounts(by_content.get(0, 0), by_content.get(1, 0) + by_content.get(2, 0))

    def _snapshot_ids(self, table: str) -> set[int]:
        self._refresh(table)
        rows = self._spark.sql(f"SELECT snapshot_id FROM {self._name(table)}.snapshots").collect()
        return {row["snapshot_id"] for row in rows}

    def _chain(self, table: str) -> list[SnapshotInfo]:
        self._refresh(table)
        name = self._name(table)
        rows = self._spark.sql(
            "SELECT snapshot_id, parent_id, unix_millis(committed_at) AS timestamp_ms, summary "
            f"FROM {name}.snapshots"
        ).collect()
        current = self._spark.sql(
            f"SELECT snapshot_id FROM {name}.refs WHERE name = 'main'"
        ).collect()
        snapshots = [
            SnapshotInfo(
                row["snapshot_id"], row["parent_id"], row["timestamp_ms"], dict(row["summary"])
            )
            for row in rows
        ]
        return ancestry(snapshots, current[0]["snapshot_id"] if current else None)

    def _name(self, table: str) -> str:
        return ".".join(f"`{part}`" for part in (self._catalog, *table.split(".")))


def tables_of(sink: SinkTable, only: str | None = None) -> list[tuple[str, TableKind]]:
    """The tables of ``sink`` that maintenance runs on, in its order: the changelog, then the
    mirror if there is one; with ``only``, just the table of that name (both for the sink
    table's own name)."""
    tables = []
    if only in (None, sink.name, sink.changelog):
        tables.append((sink.changelog, TableKind.CHANGELOG))
    if sink.mirror is not None and only in (None, sink.name, sink.mirror):
        tables.append((sink.mirror, TableKind.MIRROR))
    return tables


def maintain_tables(
    sinks: Sequence[SinkTable],
    catalog_name: str,
    catalog_properties: Mapping[str, str],
    jars: Sequence[Path],
    *,
    dry_run: bool = False,
    only: str | None = None,
    settings: MaintenanceSettings | None = None,
    on_result: Callable[[TableResult], None] | None = None,
) -> list[TableResult]:
    """Maintain every table of ``sinks`` in one local Spark session (``tidemark maintain``),
    one after another as ``tables_of`` lists them; ``on_result`` has each table's result as
    soon as that table is done, the return value all of them at the end."""
    spark = build_session(
        SparkSettings(app_name="tidemark-maintain", jars=jars), catalog_name, catalog_properties
    )
    maintainer = TableMaintainer(spark, catalog_name, settings)
    return [
        result
        for sink in sinks
        for result in maintainer.maintain(sink, dry_run=dry_run, only=only, on_result=on_result)
    ]


@dataclass(frozen=True)
class _Rewritten:
    rewritten_data_files: int
    added_data_files: int
    rewritten_delete_files: int


@contextmanager
def _timed() -> Iterator[Callable[[], float]]:
    started = time.monotonic()
    finished: list[float] = []
    yield lambda: (finished[0] if finished else time.monotonic()) - started
    finished.append(time.monotonic())


def _map(options: Mapping[str, object]) -> str:
    pairs = ", ".join(f"'{key}', '{value}'" for key, value in options.items())
    return f"map({pairs})"


def _sql_timestamp(instant: datetime) -> str:
    # An explicit offset, so the literal means the same instant whatever the session time zone.
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f") + "+00:00"


def _first_line(error: Exception) -> str:
    if isinstance(error, Py4JJavaError):
        return str(error.java_exception.toString()).splitlines()[0]
    return (str(error).splitlines() or [type(error).__name__])[0]
