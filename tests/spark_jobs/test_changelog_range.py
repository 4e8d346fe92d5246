"""Finding the order a window merges up to, from a changelog's commits."""

from __future__ import annotations

import json

import pytest

from spark_jobs.merge.bound import (
    ChangelogBound,
    WindowNotCompleteError,
    bound_at_order,
    find_bound,
)
from tidemark.errors import TransientError
from tidemark.sinks.commits import Commit


def tidemark_commit(snapshot_id: int, watermark: int, order: int, partial_rows: int = 0) -> Commit:
    position = {"v": 1, "file": "bin.000001", "pos": 4, "gtid": None, "partial_rows": partial_rows}
    summary = {
        "tidemark.watermark": str(watermark),
        "tidemark.position": json.dumps(position),
        "tidemark.source": "127.0.0.1:3306",
        "tidemark.order": str(order),
    }
    return Commit(snapshot_id, committed_at_ms=snapshot_id * 10, properties=summary)


def compaction(snapshot_id: int) -> Commit:
    return Commit(snapshot_id, snapshot_id * 10, {"operation": "replace"})


HISTORY = [
    tidemark_commit(1, watermark=0, order=0),
    tidemark_commit(2, watermark=900, order=10),
    tidemark_commit(3, watermark=1_000, order=25),
    tidemark_commit(4, watermark=1_000, order=25),
    tidemark_commit(5, watermark=1_999, order=40),
    tidemark_commit(6, watermark=2_500, order=60),
]


def test_the_bound_is_the_earliest_commit_whose_watermark_reaches_the_window_end() -> None:
    assert find_bound("t", HISTORY, 1_000) == ChangelogBound(3, 25, 1_000)
    assert find_bound("t", HISTORY, 1_001) == ChangelogBound(5, 40, 1_999)
    assert find_bound("t", HISTORY, 2_000) == ChangelogBound(6, 60, 2_500)
    assert find_bound("t", HISTORY, 500) == ChangelogBound(2, 10, 900)


def test_the_order_of_the_listing_does_not_matter() -> None:
    assert find_bound("t", reversed(HISTORY), 1_000) == ChangelogBound(3, 25, 1_000)


def test_compaction_commits_are_skipped() -> None:
    history = [*HISTORY[:2], compaction(7), *HISTORY[2:]]

    assert find_bound("t", history, 1_000) == ChangelogBound(3, 25, 1_000)


def test_a_commit_holding_half_a_transaction_is_never_a_bound() -> None:
    history = [
        tidemark_commit(1, watermark=900, order=10),
        tidemark_commit(2, watermark=1_500, order=30, partial_rows=20),
        tidemark_commit(3, watermark=1_500, order=45),
    ]

    assert find_bound("t", history, 1_000) == ChangelogBound(3, 45, 1_500)


def test_when_the_bound_was_expired_the_oldest_later_commit_is_used() -> None:
    expired = [c for c in HISTORY if c.commit_id not in (3, 4)]

    assert find_bound("t", expired, 1_000) == ChangelogBound(5, 40, 1_999)


def test_a_window_the_changelog_has_not_reached_is_transient() -> None:
    with pytest.raises(WindowNotCompleteError, match="watermark is 2500") as raised:
        find_bound("db.t_changelog", HISTORY, 3_000)
    assert isinstance(raised.value, TransientError)
    with pytest.raises(WindowNotCompleteError, match="no Tidemark commit yet"):
        find_bound("db.t_changelog", [compaction(1)], 3_000)


def test_a_given_order_is_stamped_with_the_earliest_commit_holding_it() -> None:
    assert bound_at_order("t", HISTORY, 25) == ChangelogBound(3, 25, 1_000)
    assert bound_at_order("t", HISTORY, 30) == ChangelogBound(5, 30, 1_999)
    with pytest.raises(WindowNotCompleteError):
        bound_at_order("t", HISTORY, 61)
