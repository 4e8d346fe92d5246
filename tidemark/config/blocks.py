"""A block of the ``tidemark:`` extension read into its model, as the model's options declare.

Keys are checked against the declared ones (a typo gets the closest), each value is read as its
declaration says (a scalar by its ``parse``, a list or mapping by its ``read``, a nested block by
its own model), and every problem is reported with its line and key path. Values the file does
not give take the model's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from tidemark.config.declaration import Declared, Read, declared, what_of
from tidemark.config.fields import Reader, child
from tidemark.config.loader import Node, Scalar

M = TypeVar("M", bound=BaseModel)

#: readers the block's reader gives for options that need more than their node (the pipeline
#: file's folder, for SQL files) or are more than one model (tables by name), by attribute
Readers = Mapping[str, Read]


def read_block(reader: Reader, node: Node, path: str, model: type[M]) -> M | None:
    """The block at ``node`` as ``model``; None after reporting every problem in it."""
    values, failed = read_options(reader, node, path, model)
    return None if failed else model(**values)


def read_options(
    reader: Reader, node: Node, path: str, model: type[BaseModel], readers: Readers | None = None
) -> tuple[dict[str, Any], frozenset[str]]:
    """The values the block at ``node`` gives for ``model``'s options, by attribute, and the
    attributes of those that are wrong or missing (all of them when it is not a mapping), so a
    caller can go on checking what read well."""
    options = declared(model)
    block = reader.mapping(node, path)
    if block is None:
        return {}, frozenset(item.attribute for item in options)
    reader.check_keys(
        block,
        path,
        what_of(model),
        [item.key for item in options],
        required=[item.key for item in options if item.option.required],
    )
    values: dict[str, Any] = {}
    failed: set[str] = set()
    for item in options:
        value_node = block.get(item.key)
        if value_node is None:
            if item.option.required:
                failed.add(item.attribute)
            continue
        value = read_value(reader, value_node, child(path, item.key), item, readers or {})
        if value is None:
            failed.add(item.attribute)
        else:
            values[item.attribute] = value
    return values, frozenset(failed)


def read_value(
    reader: Reader, node: Node, path: str, item: Declared, readers: Readers | None = None
) -> Any:
    """One option's value; None after reporting what is wrong with it."""
    option = item.option
    if readers and item.attribute in readers:
        return readers[item.attribute](reader, node, path)
    if option.parse is not None:
        return reader.value(node, path, option.parse)
    if option.read is not None:
        return option.read(reader, node, path)
    model = item.block
    if model is None:
        raise TypeError(
            f"option {item.key!r} is no block and declares neither parse nor read, and its "
            "block's reader gives none"
        )
    if option.shorthand is not None and isinstance(node, Scalar):
        (inner,) = [o for o in declared(model) if o.attribute == option.shorthand]
        value = read_value(reader, node, path, inner)
        return None if value is None else model(**{option.shorthand: value})
    return read_block(reader, node, path, model)
