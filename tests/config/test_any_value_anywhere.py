"""Whatever a user puts wherever, the answer is a valid config or problems, never a crash."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.config.examples import EXAMPLES
from tidemark.config import PipelineConfigError, load_pipeline

WriteFile = Callable[..., Path]


REPLACEMENTS: list[Any] = [None, "", "x", 0, -1, True, [], ["a", ["b"]], {}, {"k": {"v": 1}}]


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path and list index in a plain YAML document."""
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        yield (*prefix, key)
        yield from paths(value, (*prefix, key))


def replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = yaml.safe_load(yaml.safe_dump(document))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_value_replaced_by_anything_gives_problems_not_crashes(
    example: Path, write_file: WriteFile
) -> None:
    document = yaml.safe_load(example.read_text())
    for name in ("sql/orders_per_minute.sql", "sql/revenue_per_hour.sql"):
        write_file("SELECT 1", name)
    checked = 0
    for path in paths(document):
        for value in REPLACEMENTS:
            file = write_file(yaml.safe_dump(replaced(document, path, value)), "p.yaml")
            try:
                load_pipeline(file, {})
            except PipelineConfigError as error:
                assert error.problems, (path, value)
                assert all(p.message for p in error.problems), (path, value)
            checked += 1
    assert checked > 100
