"""``tidemark release``: a window held after its retries runs again once a person says so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from scheduler.gate import RunState, job_task
from scheduler.state import StateStore
from tidemark.app.cli import main
from tidemark.windows import Window

FILE = str(Path(__file__).parents[2] / "configs" / "five_minute_jobs.yaml")
PIPELINE = "shop orders every five minutes"  # the file's pipeline.name
JOB = job_task("orders_per_minute")
WINDOW = Window(
    datetime(2026, 11, 24, 10, 0, tzinfo=UTC), datetime(2026, 11, 24, 10, 5, tzinfo=UTC)
)
NOW = datetime(2026, 11, 24, 10, 30, tzinfo=UTC)


def _held(store: StateStore) -> None:
    store.mark_pending(PIPELINE, JOB, WINDOW, None, NOW)
    store.mark_running(PIPELINE, JOB, WINDOW, 1, NOW)
    store.mark_failed(PIPELINE, JOB, WINDOW, "AnalysisException: no such table", None, NOW)


def test_release_lets_the_held_window_run_again_with_its_retries_afresh(
    store: StateStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _held(store)

    assert (
        main(["release", FILE, "--job", "orders_per_minute", "--state-schema", store.schema]) == 0
    )

    (run,) = store.runs(PIPELINE, JOB)
    assert (run.state, run.attempts, run.held) == (RunState.FAILED, 0, False)
    assert run.retry_at is not None
    assert capsys.readouterr().out == (
        "Released job:orders_per_minute's window [2026-11-24 10:00, 2026-11-24 10:05) of "
        "pipeline 'shop orders every five minutes': the scheduler runs it at its next tick, "
        "with its retries counted afresh\n"
    )


def test_release_of_a_task_with_nothing_held_changes_nothing_and_names_what_is_held(
    store: StateStore, capsys: pytest.CaptureFixture[str]
) -> None:
    _held(store)

    assert main(["release", FILE, "--mirror", "shop.orders", "--state-schema", store.schema]) == 1

    assert capsys.readouterr().err == (
        "tidemark release: error: mirror:shop.orders of pipeline 'shop orders every five "
        "minutes' has no held window, so nothing was released; held now: job:orders_per_minute "
        "(tidemark status FILE shows every task)\n"
    )
    (run,) = store.runs(PIPELINE, JOB)
    assert run.held


def test_release_of_a_job_the_file_does_not_have_lists_its_jobs(
    store: StateStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["release", FILE, "--job", "gmv", "--state-schema", store.schema]) == 2

    assert capsys.readouterr().err == (
        f"tidemark release: error: --job gmv is not a job of {FILE}; its jobs are: "
        "orders_per_minute, revenue_per_hour\n"
    )
