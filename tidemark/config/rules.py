"""``route:`` and ``transform:`` lists: closed key sets, as upstream has since 3.6."""

from __future__ import annotations

import re

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
from tidemark.config.values import parse_columns

ROUTE_KEYS = ("source-table", "sink-table", "replace-symbol", "description")
TRANSFORM_KEYS = (
    "source-table",
    "projection",
    "filter",
    "primary-keys",
    "partition-keys",
    "table-options",
    "table-options.delimiter",
    "description",
    "converter-after-transform",
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
    reader.check_keys(node, path, "a route", ROUTE_KEYS, required=("source-table", "sink-table"))
    source = reader.text(node.get("source-table"), child(path, "source-table"))
    sink = reader.text(node.get("sink-table"), child(path, "sink-table"))
    symbol = reader.text(node.get("replace-symbol"), child(path, "replace-symbol"))
    description = reader.text(node.get("description"), child(path, "description"))
    if source is None or sink is None:
        return None
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
    return RouteRule(
        source_table=source, sink_table=sink, replace_symbol=symbol, description=description
    )


def _transform(reader: Reader, node: MapNode, path: str) -> TransformRule | None:
    reader.check_keys(node, path, "a transform", TRANSFORM_KEYS, required=("source-table",))
    texts = {key: reader.text(node.get(key), child(path, key)) for key in TRANSFORM_KEYS}
    source = texts["source-table"]
    ok = source is not None
    selectors: tuple[Selector, ...] = ()
    if source is not None:
        try:
            selectors = parse_selectors(source)
        except PatternError as error:
            message = reader.problems.redact(str(error))
            reader.error(node.get("source-table"), child(path, "source-table"), message)
            ok = False
    columns: dict[str, tuple[str, ...]] = {}
    for key in ("primary-keys", "partition-keys"):
        parsed = reader.value(node.get(key), child(path, key), parse_columns)
        if node.get(key) is not None and parsed is None:
            ok = False
        columns[key] = parsed or ()
    options = _table_options(reader, node, path, texts)
    converter = texts["converter-after-transform"]
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
    projection = texts["projection"]
    return TransformRule(
        source_table=source or "",
        selectors=selectors,
        # upstream: a projection may start with `\*` (YAML cannot start with `*`)
        projection=projection.replace("\\*", "*") if projection else projection,
        filter=texts["filter"],
        primary_keys=columns["primary-keys"],
        partition_keys=columns["partition-keys"],
        table_options=options,
        description=texts["description"],
        converter_after_transform=converter,
    )


def _table_options(
    reader: Reader, node: MapNode, path: str, texts: dict[str, str | None]
) -> dict[str, str] | None:
    text = texts["table-options"]
    if not text or not text.strip():
        return {}
    delimiter = texts["table-options.delimiter"] or ","
    result: dict[str, str] = {}
    for item in text.split(delimiter):
        key, equals, value = item.partition("=")
        if not equals:
            reader.error(
                node.get("table-options"),
                child(path, "table-options"),
                f"cannot parse {item.strip()!r}: write key1=value1{delimiter}key2=value2"
                + ("" if texts["table-options.delimiter"] else ", or set table-options.delimiter"),
            )
            return None
        result[key.strip()] = value.strip()
    return result
