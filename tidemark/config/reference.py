"""The ``tidemark:`` block's reference table, rendered from the option declarations.

docs/configuration.md holds it between two markers; tests/config/test_option_docs.py fails
when it is not what the declarations render. After changing an option::

    .venv/bin/python -m tidemark.config.reference --write docs/configuration.md
"""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Iterator
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic_core import PydanticUndefined

from tidemark.config.declaration import Declared, declared
from tidemark.config.model import TidemarkSettings
from tidemark.config.values import format_duration

BEGIN = "<!-- begin: the tidemark block's options, from python -m tidemark.config.reference -->"
END = "<!-- end: the tidemark block's options -->"

_TYPES: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    str: "text",
    SecretStr: "text (secret)",
    timedelta: "duration",
}


def render() -> str:
    lines = ["| key | type | default | what it does |", "|---|---|---|---|"]
    for key, item in options():
        doc = item.option.doc.replace("|", "\\|")
        lines.append(f"| `{key}` | {_type(item)} | {_default(item)} | {doc} |")
    return "\n".join(lines) + "\n"


def options(
    model: type[BaseModel] = TidemarkSettings, prefix: str = ""
) -> Iterator[tuple[str, Declared]]:
    """Every option of the block and of the blocks in it, with its key path (``ingest.flush-rows``,
    ``tables.<table>.mirror.window``)."""
    for item in declared(model):
        key = prefix + item.key
        yield key, item
        if item.block is not None:
            yield from options(item.block, f"{key}.")
        elif item.entries is not None:
            yield from options(item.entries, f"{key}.<{item.option.entry}>.")


def _type(item: Declared) -> str:
    annotation = item.annotation
    if item.key.endswith(".*"):
        return "text"  # each of the keys the prefix stands for
    if item.block is not None:
        inner = [o for o in declared(item.block) if o.attribute == item.option.shorthand]
        return f"block, or {_type(inner[0])}" if inner else "block"
    if item.option.entry is not None:
        return f"blocks by {item.option.entry}"
    if typing.get_origin(annotation) is typing.Literal:
        return " or ".join(f"`{value}`" for value in typing.get_args(annotation))
    if typing.get_origin(annotation) is tuple:
        return "list"
    if typing.get_origin(annotation) is dict:
        return "mapping"
    if annotation in _TYPES:
        return _TYPES[annotation]
    raise TypeError(f"option {item.key!r}: no name for its type {annotation!r} in the reference")


def _default(item: Declared) -> str:
    if item.option.default_text is not None:
        return item.option.default_text
    value = item.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return ""  # each of its options has its own
    if value is None or value == {} or value == ():
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, timedelta):
        return f"`{format_duration(value)}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    return f"`{value}`"


def replace_in(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table``."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return f"{text[:start]}\n{table}{text[end:]}"


def written_in(text: str) -> str:
    """The table as ``text`` has it between the markers."""
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)].lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", type=Path, metavar="FILE", help="replace the table in FILE")
    args = parser.parse_args(argv)
    if args.write is None:
        sys.stdout.write(render())
        return 0
    args.write.write_text(replace_in(args.write.read_text(encoding="utf-8"), render()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
