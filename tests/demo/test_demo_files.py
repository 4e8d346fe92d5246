"""The demo's pipeline on S3 is the demo's pipeline: only the lake differs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tidemark.app.demo.runner import DEMO_PIPELINES


def test_the_s3_demo_differs_from_the_local_one_only_in_its_sink_and_state_database() -> None:
    local, s3 = (_without_the_lake(DEMO_PIPELINES[storage]) for storage in ("local", "s3"))

    assert s3 == local


def _without_the_lake(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    document.pop("sink")
    document["tidemark"].pop("state-dsn", None)
    return document
