"""``tidemark schedule`` refuses what it cannot schedule, before connecting to anything.

Windows run on Spark from real commit reports in tests/test_pipeline_end_to_end.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tidemark.app.cli import main

CONFIGS = Path(__file__).parents[2] / "configs"


def test_schedule_refuses_two_files_with_the_same_pipeline_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = str(CONFIGS / "five_minute_jobs.yaml")

    assert main(["schedule", file, file]) == 2

    assert "is used by more than one file" in capsys.readouterr().err
