"""Values of the ``tidemark:`` block that are more than one scalar: lists of columns and tables,
and mappings of properties, job variables and Spark settings.

Each reader reports what is wrong at the value's line and returns None; option declarations name
them as their ``read``.
"""

from __future__ import annotations

import re

from pydantic import SecretStr

from tidemark.config.fields import Reader, child
from tidemark.config.loader import MapNode, Node
from tidemark.config.patterns import split_table_id
from tidemark.config.secrets import is_secret_key
from tidemark.config.values import BadValue, parse_columns

Properties = dict[str, str | SecretStr]

#: variables Tidemark sets for every window run; user variables may not start with ``window_``
BUILT_IN_VARIABLES = (
    "window_start",
    "window_end",
    "window_start_ms",
    "window_end_ms",
    "dt",
    "hour",
    "job_name",
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_columns(reader: Reader, node: Node, path: str) -> tuple[str, ...] | None:
    """Column names: a list, or one comma-separated value (``unique-key: order_no, region``)."""
    items = reader.text_list(node, path, "write column names: unique-key: [id, region]")
    if items is None:
        return None
    try:
        return parse_columns(",".join(items))
    except BadValue as bad:
        reader.error(node, path, bad.message)
        return None


def read_tables(reader: Reader, node: Node, path: str) -> tuple[str, ...] | None:
    """Sink table names, at least one: a list, or one comma-separated value."""
    tables = reader.text_list(node, path, "[shop.orders]")
    for index, table in enumerate(tables or ()):
        if split_table_id(table) is None:
            reader.error(
                node,
                f"{path}[{index}]",
                f"must be a sink table's database.table name, got: {table!r}",
            )
            tables = None
    if tables == ():
        reader.error(node, path, "must name at least one table")
        return None
    return tables


def read_properties(reader: Reader, node: Node, path: str) -> Properties | None:
    """A mapping of names to single values; values of secret-like names become ``SecretStr``."""
    plain = reader.string_map(node, path)
    if plain is None:
        return None
    return {k: SecretStr(v) if is_secret_key(k) else v for k, v in plain.items()}


def read_variables(reader: Reader, node: Node, path: str) -> Properties | None:
    """A job's variables for its SQL: names that are not Tidemark's own."""
    values = read_properties(reader, node, path)
    if values is None:
        return None
    block = node if isinstance(node, MapNode) else None
    for name in values:
        key = block.key(name) if block else None
        line = key.mark.line if key else None
        if not _NAME.fullmatch(name):
            reader.problems.error(
                line, child(path, name), "a variable name holds only letters, digits and _"
            )
            return None
        if name.startswith("window_") or name in BUILT_IN_VARIABLES:
            reader.problems.error(
                line,
                child(path, name),
                f"is set by Tidemark for every window ({', '.join(BUILT_IN_VARIABLES)}): "
                "choose another name",
            )
            return None
    return values


def read_spark_settings(reader: Reader, node: Node, path: str) -> Properties | None:
    """A job's Spark settings: every name starts with ``spark.``."""
    values = read_properties(reader, node, path)
    if values is None:
        return None
    block = node if isinstance(node, MapNode) else None
    bad = [name for name in values if not name.startswith("spark.")]
    for name in bad:
        key = block.key(name) if block else None
        reader.problems.error(
            key.mark.line if key else None,
            child(path, name),
            "is not a Spark setting: Spark settings start with 'spark.'",
        )
    return None if bad else values
