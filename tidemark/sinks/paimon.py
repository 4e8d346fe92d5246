"""Paimon's side of the seam: a table's commits are its snapshots.

A Tidemark snapshot carries its progress in the snapshot's ``properties``; compactions
(maintenance's, through Paimon's Java code) carry none and are skipped by readers. The writer
is ``ingest.changelog.paimon_table.PaimonChangelog``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tidemark.contracts.progress import TableProgress
from tidemark.lake.paimon import PaimonSnapshot, PaimonTable
from tidemark.sinks.commits import Commit


def commit_of(snapshot: PaimonSnapshot, every_row_kept: bool = False) -> Commit:
    """The commit a snapshot made. Paimon counts the records of a table's files (each upsert
    and delete of a key until a compaction merges them), which is the table's rows only in a
    table that keeps ``every_row`` (an error table); otherwise its rows are not known."""
    return Commit(
        commit_id=snapshot.snapshot_id,
        committed_at_ms=snapshot.committed_at_ms,
        properties=snapshot.properties,
        rows_added=max(snapshot.delta_rows or 0, 0),
        total_rows=snapshot.total_rows if every_row_kept else None,
    )


def newest_progress(newest_first: Iterable[PaimonSnapshot]) -> PaimonSnapshot | None:
    """The first snapshot of ``newest_first`` carrying Tidemark's progress."""
    return next(
        (s for s in newest_first if TableProgress.from_summary(s.properties) is not None), None
    )


class PaimonHistory:
    """``ChangelogHistory`` of a Paimon table: its retained snapshots."""

    def __init__(self, table: PaimonTable) -> None:
        self._table = table

    @property
    def identifier(self) -> str:
        return self._table.identifier

    def commits(self) -> Iterator[Commit]:
        return (commit_of(snapshot) for snapshot in self._table.snapshots())
