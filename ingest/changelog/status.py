"""What each changelog table of a pipeline has reached, for ``tidemark status``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ingest.changelog.catalogs import SinkCatalog
from ingest.changelog.error_table import ErrorTables, load_error_table
from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.contracts.progress import TableProgress
from tidemark.freshness import FreshnessSample
from tidemark.sinks.commits import watermark_history


@dataclass(frozen=True)
class TableStatus:
    sink: str
    changelog: str
    exists: bool
    progress: TableProgress | None = None
    snapshot_id: int | None = None
    committed_at: datetime | None = None
    total_rows: int | None = None
    #: the bootstrap's state while it runs; None once it is done (or there was none)
    bootstrap: BootstrapState | None = None
    #: rows in the error table (``ingest.changelog.error_table``)
    errors: int = 0
    #: the watermark the scheduler recorded, from commit and watermark reports: ahead of the
    #: table's own while it has no changes (``tidemark.contracts.reports.WatermarkReport``)
    recorded_watermark_ms: int | None = None
    #: the watermark the changelog's commits reached, one a minute (``table_status``'s
    #: ``history_since``); the scheduler samples what its reports reach on its own
    history: tuple[FreshnessSample, ...] = ()

    @property
    def watermark_ms(self) -> int | None:
        """How far the table is complete: its newest commit's watermark, or what a watermark
        report has promised since, whichever is later."""
        if self.progress is None:
            return None
        return max(self.progress.watermark_ms, self.recorded_watermark_ms or 0)

    def state(self) -> str | None:
        """Why the table has no watermark yet, if that is the case."""
        if self.bootstrap is not None:
            return f"bootstrapping: {self.bootstrap.rows:,} rows read"
        progress = self.progress
        if progress is None:
            return None
        # a watermark report marks a table only once the stream has passed its hold
        # (``Assembler.complete_tables``): a quiet table has no newer commit to say so
        reported = (self.recorded_watermark_ms or 0) > progress.watermark_ms
        if progress.hold_until is not None and not reported:
            return f"bootstrapped; streaming up to {progress.hold_until} to be consistent"
        if (self.watermark_ms or 0) <= 0:
            return "waiting for the stream's first binlog event"
        return None

    def watermark_lag_seconds(self, now: datetime) -> float | None:
        watermark_ms = self.watermark_ms
        if watermark_ms is None or watermark_ms <= 0:
            return None
        return now.timestamp() - watermark_ms / 1000


def table_status(
    catalog: SinkCatalog,
    sink: str,
    changelog: str,
    history_since: datetime | None = None,
    error_tables: ErrorTables | None = None,
) -> TableStatus:
    """``sink``'s changelog as it stands; with ``history_since``, its watermark since then;
    ``error_tables``, listed once for many sink tables, spares a failed load of each one that
    has none."""
    changelog_table = catalog.load_changelog(changelog)
    if changelog_table is None:
        return TableStatus(sink, changelog, exists=False)
    newest = next(changelog_table.commits(), None)
    if newest is None:
        return TableStatus(sink, changelog, exists=True)
    bootstrap = changelog_table.bootstrap()
    history = (
        () if history_since is None else watermark_history(changelog_table.commits(), history_since)
    )
    return TableStatus(
        sink,
        changelog,
        exists=True,
        progress=changelog_table.progress(),
        snapshot_id=newest.commit_id,
        committed_at=newest.committed_at,
        total_rows=newest.total_rows,
        bootstrap=None if bootstrap is None or bootstrap.done else bootstrap,
        errors=_error_rows(catalog, sink, error_tables),
        history=history,
    )


def _error_rows(catalog: SinkCatalog, sink: str, listed: ErrorTables | None) -> int:
    table = load_error_table(catalog, sink) if listed is None else listed.find(sink)
    newest = next(table.commits(), None) if table is not None else None
    return 0 if newest is None else newest.total_rows or 0
