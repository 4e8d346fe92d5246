"""What one commit of a table made, in any lake format, and what the stages read from them.

A Tidemark commit carries its progress in the commit's own properties (an Iceberg snapshot's
summary, a Paimon snapshot's properties): ``tidemark.contracts.progress`` and
``tidemark.contracts.bootstrap_state`` read them from ``Commit.properties``. A commit without
``tidemark.position`` (a compaction, a user's own commit) is not Tidemark's: ``progress()`` is
None and readers skip it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from tidemark.contracts.bootstrap_state import BootstrapState
from tidemark.contracts.progress import TableProgress
from tidemark.freshness import FreshnessSample, per_minute


@dataclass(frozen=True)
class Commit:
    """One commit of a table, as its format lists it."""

    #: the format's id of the commit (an Iceberg snapshot id); what commit reports carry
    commit_id: int
    #: when the commit was made, epoch ms, by the writer's clock
    committed_at_ms: int
    #: every property the commit carries: Tidemark's keys and the format's own
    properties: Mapping[str, str]
    #: rows the commit added; 0 when the format does not say
    rows_added: int = 0
    #: rows in the table after the commit; None when the format does not say
    total_rows: int | None = None

    def progress(self) -> TableProgress | None:
        """The progress Tidemark recorded in it; None for a commit Tidemark did not write."""
        return TableProgress.from_summary(self.properties)

    def bootstrap(self) -> BootstrapState | None:
        """The bootstrap's state, on a commit of a table's bootstrap."""
        return BootstrapState.from_summary(self.properties)

    @property
    def committed_at(self) -> datetime:
        return datetime.fromtimestamp(self.committed_at_ms / 1000, UTC)


def newest_tidemark_commit(newest_first: Iterable[Commit]) -> Commit | None:
    """The first commit carrying Tidemark's progress in ``newest_first``."""
    return next((commit for commit in newest_first if commit.progress() is not None), None)


def watermark_history(
    newest_first: Iterable[Commit], since: datetime
) -> tuple[FreshnessSample, ...]:
    """The watermark each commit since ``since`` reached, and the newest one before it (where
    a chart of ``since`` onwards starts), one a minute; commits while bootstrapping, and
    commits that are not Tidemark's, have none. Reads ``newest_first`` only as far as it must,
    so a long history costs only the hours asked for."""
    since_ms = since.timestamp() * 1000
    samples = []
    for commit in newest_first:
        progress = commit.progress()
        if progress is None or progress.hold_until is not None or progress.watermark_ms <= 0:
            continue
        bootstrap = commit.bootstrap()
        if bootstrap is not None and not bootstrap.done:
            continue
        samples.append(FreshnessSample(commit.committed_at, progress.watermark_ms))
        if commit.committed_at_ms < since_ms:  # where the chart starts: far enough
            break
    return per_minute(samples)
