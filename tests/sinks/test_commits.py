"""Commits as the stages read them, whatever the format: what a commit says of itself."""

from __future__ import annotations

from datetime import UTC, datetime

from tidemark.contracts.bootstrap_state import BootstrapState, SourceTableBootstrap
from tidemark.contracts.progress import TableProgress
from tidemark.sinks.commits import Commit, newest_tidemark_commit
from tidemark.sinks.iceberg import commit_from_summary
from tidemark.source import BinlogPosition

PROGRESS = TableProgress(BinlogPosition("binlog.000001", 4), 1_000, 7, "127.0.0.1:3306")


def test_a_commit_reads_tidemarks_progress_and_bootstrap_state_from_its_properties() -> None:
    state = BootstrapState({"shop.orders": SourceTableBootstrap(after=(3,), rows=3)})

    commit = Commit(1, 1_767_225_600_000, {**PROGRESS.summary(), **state.summary()})

    assert commit.progress() == PROGRESS
    assert commit.bootstrap() == state
    assert commit.committed_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_a_commit_tidemark_did_not_make_has_no_progress_and_is_passed_over() -> None:
    compaction = Commit(3, 30, {"operation": "replace"})
    ours = Commit(2, 20, PROGRESS.summary())

    assert (compaction.progress(), compaction.bootstrap()) == (None, None)
    assert newest_tidemark_commit([compaction, ours]) == ours
    assert newest_tidemark_commit([compaction]) is None


def test_an_iceberg_snapshot_summary_gives_the_rows_a_commit_added_and_holds() -> None:
    summary = {**PROGRESS.summary(), "added-records": "5", "total-records": "12"}

    commit = commit_from_summary(9, 90, summary)

    assert (commit.commit_id, commit.rows_added, commit.total_rows) == (9, 5, 12)
    assert commit.progress() == PROGRESS
    assert commit_from_summary(9, 90, {}).total_rows is None
