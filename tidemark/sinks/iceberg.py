"""Iceberg's side of the seam: a table's commits are its snapshots.

A snapshot's summary holds Tidemark's keys beside Iceberg's own (``added-records``,
``total-records``), so a ``Commit`` is read from the snapshot alone. The writer, which also
needs ingest's fencing, is ``ingest.changelog.table.ChangelogTable``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pyiceberg.table import Table, TableMetadata
from pyiceberg.table.snapshots import Snapshot

from tidemark.sinks.commits import Commit

#: the summary keys Iceberg writers add to every snapshot
ADDED_RECORDS, TOTAL_RECORDS = "added-records", "total-records"


def commit_from_summary(commit_id: int, committed_at_ms: int, summary: Mapping[str, str]) -> Commit:
    """The commit an Iceberg snapshot made, from its id, time and summary (as PyIceberg reads
    them, or Spark's ``<table>.snapshots``)."""
    total = summary.get(TOTAL_RECORDS)
    return Commit(
        commit_id=commit_id,
        committed_at_ms=committed_at_ms,
        properties=summary,
        rows_added=int(summary.get(ADDED_RECORDS, 0)),
        total_rows=None if total is None else int(total),
    )


def commit_of(snapshot: Snapshot) -> Commit:
    """The commit ``snapshot`` made; its summary is shared, not copied (metadata is
    immutable)."""
    summary = snapshot.summary.additional_properties if snapshot.summary else {}
    return commit_from_summary(snapshot.snapshot_id, snapshot.timestamp_ms, summary)


def iceberg_commits(metadata: TableMetadata) -> Iterator[Commit]:
    """The commits of the main branch's history, newest first: the current snapshot and its
    ancestors that are still kept."""
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return
    yield commit_of(snapshot)  # often all a reader wants: before indexing every snapshot
    # PyIceberg's ``ancestors_of`` looks each parent up in the list: quadratic in snapshots
    by_id = {kept.snapshot_id: kept for kept in metadata.snapshots}
    parent = snapshot.parent_snapshot_id
    while parent is not None and (snapshot := by_id.get(parent)) is not None:
        yield commit_of(snapshot)
        parent = snapshot.parent_snapshot_id


class IcebergHistory:
    """``ChangelogHistory`` of an Iceberg table, as loaded: no read of the catalog."""

    def __init__(self, table: Table) -> None:
        self._table = table

    @property
    def identifier(self) -> str:
        return ".".join(self._table.name())

    def commits(self) -> Iterator[Commit]:
        return iceberg_commits(self._table.metadata)
