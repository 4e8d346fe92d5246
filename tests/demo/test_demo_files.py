"""The demo's pipeline on S3 is the demo's pipeline: only the lake differs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tidemark.app.demo.runner import DEMO_PIPELINES


def test_the_s3_demo_differs_from_the_local_one_only_in_its_lake_and_name() -> None:
    """Its own name and report topic: the local demo's scheduler stays in its consumer group
    for 45 s after it stops (a static member), which would hold up an S3 demo right after."""
    local, s3 = (_without_the_lake(DEMO_PIPELINES[storage]) for storage in ("local", "s3"))

    assert s3 == local


def _without_the_lake(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    document.pop("sink")
    document["pipeline"].pop("name")
    document["tidemark"].pop("state-dsn", None)
    document["tidemark"]["reports"].pop("topic")
    return document
