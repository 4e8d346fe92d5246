"""Which changelog rows a window merge applies: the order range ``(merged, bound]``.

``_tm_order`` counts the rows of one changelog table in commit order, and every Tidemark commit
records the last order in the table (``tidemark.order``) next to its watermark. A window ending
at E applies the rows up to the order of the **earliest** commit whose watermark reaches E and
that does not stop in the middle of a transaction (``partial_rows == 0``): the mirror then
equals the source at a transaction boundary at or just after E (a consistent cut).

Row ranges survive compaction (a compaction's commit has no Tidemark keys and is skipped) and
expiry (when the earliest qualifying commit is gone, the oldest later one that remains is used:
the mirror lands at a later consistent position, which is still correct). Pure functions of a
changelog's commits in any lake format (``tidemark.sinks.commits.Commit``), in any order;
``spark_jobs.merge.lake`` reads them through ``tidemark.sinks``: the table's main history (the
current commit and its ancestors that are kept), so a rolled-back commit's rows never count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tidemark.errors import TransientError
from tidemark.sinks.commits import Commit


@dataclass(frozen=True)
class ChangelogBound:
    """The changelog commit a window merges up to, and what it records."""

    commit_id: int
    order: int
    watermark_ms: int


class WindowNotCompleteError(TransientError):
    """No changelog commit has reached the window's end yet: try again later."""


def find_bound(table: str, commits: Iterable[Commit], window_end_ms: int) -> ChangelogBound:
    """The earliest complete commit of ``table`` whose watermark is at least ``window_end_ms``.

    Raises ``WindowNotCompleteError`` when there is none yet.
    """
    best: tuple[int, int, ChangelogBound] | None = None
    latest_watermark: int | None = None
    for commit in commits:
        progress = commit.progress()
        if progress is None:
            continue  # compaction or a user's own commit: no Tidemark keys
        if latest_watermark is None or progress.watermark_ms > latest_watermark:
            latest_watermark = progress.watermark_ms
        if progress.watermark_ms < window_end_ms or progress.partial_rows:
            continue
        # orders and watermarks never go backwards, so the smallest order is the earliest cut;
        # among commits with equal orders (empty ones) the first committed is the earliest
        rank = (progress.last_order, commit.committed_at_ms)
        if best is None or rank < best[:2]:
            bound = ChangelogBound(commit.commit_id, progress.last_order, progress.watermark_ms)
            best = (*rank, bound)
    if best is None:
        reached = "no Tidemark commit yet" if latest_watermark is None else latest_watermark
        raise WindowNotCompleteError(
            f"{table} is not complete to the window end {window_end_ms} (epoch ms) yet: its "
            f"watermark is {reached}. Run the window again once ingest has passed its end "
            "(is `tidemark ingest` running for this pipeline?)"
        )
    return best[2]


def bound_at_order(table: str, commits: Iterable[Commit], order: int) -> ChangelogBound:
    """The bound for a caller-given order (a commit report's ``last_order``): the earliest
    Tidemark commit that holds it, for the watermark and commit the mirror is stamped with.

    Raises ``WindowNotCompleteError`` when no commit holds that order yet.
    """
    holding = [
        (progress.last_order, commit.committed_at_ms, commit.commit_id, progress)
        for commit in commits
        if (progress := commit.progress()) is not None and progress.last_order >= order
    ]
    if not holding:
        raise WindowNotCompleteError(
            f"{table} holds no rows up to _tm_order {order} yet: run the window again once "
            "ingest has committed them"
        )
    _, _, commit_id, progress = min(holding, key=lambda item: item[:3])
    return ChangelogBound(commit_id, order, progress.watermark_ms)
