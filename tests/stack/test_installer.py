"""The installer's steps that need no download."""

from __future__ import annotations

from pathlib import Path

from tidemark.stack.installer import _swap_in


def test_newly_resolved_jars_replace_the_old_set_whole(tmp_path: Path) -> None:
    jars, staging = tmp_path / "spark", tmp_path / "spark.resolving"
    jars.mkdir()
    (jars / "old-1.0.jar").write_text("old")
    staging.mkdir()
    (staging / "new-2.0.jar").write_text("new")

    _swap_in(staging, jars)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark"]
    assert [p.name for p in jars.iterdir()] == ["new-2.0.jar"]


def test_the_first_resolved_jars_are_put_in_place(tmp_path: Path) -> None:
    jars, staging = tmp_path / "spark", tmp_path / "spark.resolving"
    staging.mkdir()
    (staging / "new-2.0.jar").write_text("new")

    _swap_in(staging, jars)

    assert [p.name for p in jars.iterdir()] == ["new-2.0.jar"]
