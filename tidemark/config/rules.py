"""``route:`` and ``transform:`` lists: closed key sets, as upstream has since 3.6.

Their keys are declared on ``RouteRule`` and ``TransformRule`` and read from those declarations
(``tidemark.config.blocks``); this module adds what needs more than one key: patterns, capture
groups, table options split by their delimiter.
"""

from __future__ import annotations

import re
from typing import Any

from tidemark.config.blocks import read_options
from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode, Node
from tidemark.config.model import RouteRule, TransformRule
from tidemark.config.patterns import (
    PatternError,
    Selector,
    compile_route,
    parse_replacement,
    parse_selectors,
    split_table_id,
)

CONVERTERS = ("SOFT_DELETE",)


def read_routes(reader: Reader, node: Node | None) -> tuple[RouteRule, ...] | None:
    entries = _entries(reader, node, "route", "write `- source-table: ...` entries")
    if entries is None:
        return None
    rules = [_route(reader, entry, f"route[{index}]") for index, entry in enumerate(entries)]
    if any(rule is None for rule in rules):
        return None
    return tuple(rule for rule in rules if rule is not None)


def read_transforms(reader: Reader, node: Node | None) -> tuple[TransformRule, ...] | None:
    entries = _entries(reader, node, "transform", "write `- source-table: ...` entries")
    if entries is None:
        return None
    rules = [_transform(reader, entry, f"transform[{i}]") for i, entry in enumerate(entries)]
    if any(rule is None for rule in rules):
        return None
    return tuple(rule for rule in rules if rule is not None)


def _entries(reader: Reader, node: Node | None, path: str, example: str) -> list[MapNode] | None:
    if node is None:
        return []
    sequence = reader.sequence(node, path, example)
    if sequence is None:
        return None
    entries = [reader.mapping(item, f"{path}[{i}]") for i, item in enumerate(sequence.items)]
    if any(entry is None for entry in entries):
        return None
    return [entry for entry in entries if entry is not None]


def _route(reader: Reader, node: MapNode, path: str) -> RouteRule | None:
    values, failed = read_options(reader, node, path, RouteRule)
    if {"source_table", "sink_table"} & failed:
        return None
    source, sink = values["source_table"], values["sink_table"]
    symbol = values.get("replace_symbol")
    try:
        groups = compile_route(source).groups
    except PatternError as error:
        message = reader.problems.redact(str(error))
        reader.error(node.get("source-table"), child(path, "source-table"), message)
        return None
    sink_node, sink_path = node.get("sink-table"), child(path, "sink-table")
    if symbol:
        if symbol not in sink:
            reader.warning(
                sink_node,
                sink_path,
                f"does not contain replace-symbol {symbol!r}, so every matched table goes to "
                f"{sink!r}",
            )
        elif re.search(r"\$[0-9{]", sink):
            reader.warning(
                sink_node,
                sink_path,
                "uses $n groups together with replace-symbol; Flink CDC replaces only the "
                "symbol: use one or the other",
            )
    else:
        try:
            parse_replacement(sink, groups)
        except PatternError as error:
            reader.error(sink_node, sink_path, str(error))
            return None
        static = "$" not in sink and "\\" not in sink
        if static and split_table_id(sink) is None:
            reader.error(
                sink_node,
                sink_path,
                f"must be database.table (an Iceberg namespace and table name), got: {sink!r}",
            )
            return None
    return RouteRule(**values)


def _transform(reader: Reader, node: MapNode, path: str) -> TransformRule | None:
    # table-options is split by table-options.delimiter, so it is read as text first
    values, failed = read_options(
        reader, node, path, TransformRule, readers={"table_options": _text}
    )
    ok = not failed
    source = values.get("source_table")
    selectors: tuple[Selector, ...] = ()
    if source is not None:
        try:
            selectors = parse_selectors(source)
        except PatternError as error:
            message = reader.problems.redact(str(error))
            reader.error(node.get("source-table"), child(path, "source-table"), message)
            ok = False
    options = _table_options(reader, node, path, values)
    converter = values.get("converter_after_transform")
    if converter is not None and converter not in CONVERTERS:
        reader.error(
            node.get("converter-after-transform"),
            child(path, "converter-after-transform"),
            f"must be one of {', '.join(CONVERTERS)}, got: {converter!r}",
        )
        ok = False
    elif converter is not None:
        reader.warning(
            node.get("converter-after-transform"),
            child(path, "converter-after-transform"),
            "has no effect in Tidemark: the changelog keeps every delete; to keep deleted rows in "
            "the mirror, set `deletes: keep` under tidemark.tables.<table>.mirror",
        )
    if not ok or options is None:
        return None
    projection = values.get("projection")
    if projection:
        # upstream: a projection may start with `\*` (YAML cannot start with `*`)
        values["projection"] = projection.replace("\\*", "*")
    return TransformRule(**{**values, "table_options": options, "selectors": selectors})


def _text(reader: Reader, node: Node, path: str) -> str | None:
    return reader.text(node, path)


def _table_options(
    reader: Reader, node: MapNode, path: str, values: dict[str, Any]
) -> dict[str, str] | None:
    text = values.get("table_options")
    if not text or not text.strip():
        return {}
    given_delimiter = values.get("table_options_delimiter")
    delimiter = given_delimiter or ","
    result: dict[str, str] = {}
    for item in text.split(delimiter):
        key, equals, value = item.partition("=")
        if not equals:
            reader.error(
                node.get("table-options"),
                child(path, "table-options"),
                f"cannot parse {item.strip()!r}: write key1=value1{delimiter}key2=value2"
                + ("" if given_delimiter else ", or set table-options.delimiter"),
            )
            return None
        result[key.strip()] = value.strip()
    return result
