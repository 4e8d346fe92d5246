"""Helpers for the pipeline-file tests: write a file, load it, and read problems as text."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

WriteFile = Callable[..., Path]


@pytest.fixture
def write_file(tmp_path: Path) -> WriteFile:
    """``write_file(text, name="pipeline.yaml")``: dedented ``text`` into a fresh folder."""

    def write(text: str, name: str = "pipeline.yaml") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write
