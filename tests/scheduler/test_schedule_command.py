"""``tidemark schedule`` says plainly that the Spark executor is not wired in yet."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.cli import main

CONFIGS = Path(__file__).parents[2] / "configs"


def test_schedule_refuses_until_the_spark_executor_is_wired(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schedule", str(CONFIGS / "five_minute_jobs.yaml"), "--max-seconds", "1"]) == 1

    err = capsys.readouterr().err
    assert err.startswith("tidemark schedule: error: the Spark window executor ")
    assert "scheduler.service.run(" in err


def test_schedule_refuses_two_files_with_the_same_pipeline_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = str(CONFIGS / "five_minute_jobs.yaml")

    assert main(["schedule", file, file]) == 2

    assert "is used by more than one file" in capsys.readouterr().err
