"""Which changelog rows a window merge applies: the order range ``(merged, bound]``.

``_tm_order`` counts the rows of one changelog table in commit order, and every Tidemark commit
records the last order in the table (``tidemark.order``) next to its watermark. A window ending
at E applies the rows up to the order of the **earliest** snapshot whose watermark reaches E and
that does not stop in the middle of a transaction (``partial_rows == 0``): the mirror then
equals the source at a transaction boundary at or just after E (a consistent cut).

Row ranges survive compaction (a ``replace`` snapshot has no Tidemark keys and is skipped) and
snapshot expiry (when the earliest qualifying snapshot is gone, the oldest later one that
remains is used: the mirror lands at a later consistent position, which is still correct).
Pure functions of the snapshot summaries; ``spark_jobs.merge.spark`` reads them from the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tidemark.contracts.progress import TableProgress
from tidemark.errors import TransientError


@dataclass(frozen=True)
class SnapshotInfo:
    """One snapshot of a changelog table, as its metadata lists it."""

    snapshot_id: int
    committed_at_ms: int
    summary: Mapping[str, str]


@dataclass(frozen=True)
class ChangelogBound:
    """The changelog snapshot a window merges up to, and what it records."""

    snapshot_id: int
    order: int
    watermark_ms: int


class WindowNotCompleteError(TransientError):
    """No changelog commit has reached the window's end yet: try again later."""


def find_bound(table: str, snapshots: Iterable[SnapshotInfo], window_end_ms: int) -> ChangelogBound:
    """The earliest complete snapshot of ``table`` whose watermark is at least ``window_end_ms``.

    Raises ``WindowNotCompleteError`` when there is none yet.
    """
    best: tuple[int, int, ChangelogBound] | None = None
    latest_watermark: int | None = None
    for snapshot in snapshots:
        progress = TableProgress.from_summary(snapshot.summary)
        if progress is None:
            continue  # compaction or a user's own commit: no Tidemark keys
        if latest_watermark is None or progress.watermark_ms > latest_watermark:
            latest_watermark = progress.watermark_ms
        if progress.watermark_ms < window_end_ms or progress.partial_rows:
            continue
        # orders and watermarks never go backwards, so the smallest order is the earliest cut;
        # among commits with equal orders (empty ones) the first committed is the earliest
        rank = (progress.last_order, snapshot.committed_at_ms)
        if best is None or rank < best[:2]:
            bound = ChangelogBound(snapshot.snapshot_id, progress.last_order, progress.watermark_ms)
            best = (*rank, bound)
    if best is None:
        reached = "no Tidemark commit yet" if latest_watermark is None else latest_watermark
        raise WindowNotCompleteError(
            f"{table} is not complete to the window end {window_end_ms} (epoch ms) yet: its "
            f"watermark is {reached}. Run the window again once ingest has passed its end "
            "(is `tidemark ingest` running for this pipeline?)"
        )
    return best[2]


def bound_at_order(table: str, snapshots: Iterable[SnapshotInfo], order: int) -> ChangelogBound:
    """The bound for a caller-given order (a commit report's ``last_order``): the earliest
    Tidemark snapshot that holds it, for the watermark and snapshot the mirror is stamped with.

    Raises ``WindowNotCompleteError`` when no snapshot holds that order yet.
    """
    holding = [
        (progress.last_order, snapshot.committed_at_ms, snapshot.snapshot_id, progress)
        for snapshot in snapshots
        if (progress := TableProgress.from_summary(snapshot.summary)) is not None
        and progress.last_order >= order
    ]
    if not holding:
        raise WindowNotCompleteError(
            f"{table} holds no rows up to _tm_order {order} yet: run the window again once "
            "ingest has committed them"
        )
    _, _, snapshot_id, progress = min(holding, key=lambda item: item[:3])
    return ChangelogBound(snapshot_id, order, progress.watermark_ms)
