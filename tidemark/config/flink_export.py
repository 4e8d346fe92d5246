"""The pipeline file as Flink CDC 3.x takes it: without the ``tidemark:`` block.

By default the file's own text is kept, comments and ``${VAR}`` references included; only the
block's lines go. With ``resolve``, the file is rewritten with every non-secret reference replaced
by its value (Flink CDC has no substitution); references to secrets stay as written, so a secret
never reaches the output.

A Paimon sink without ``catalog.properties.metastore`` gets the one Tidemark uses
(``filesystem``) written in: Flink CDC 3.2 and later refuse a Paimon sink without it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tidemark.config.errors import Problems
from tidemark.config.extension import EXTENSION_KEY
from tidemark.config.loader import ListNode, MapNode, Node, Scalar, parse
from tidemark.config.model import DEFAULT_PAIMON_METASTORE
from tidemark.config.secrets import is_secret_key
from tidemark.config.variables import has_references
from tidemark.errors import ConfigError

SECRETS_LEFT = (
    "# Secrets are left as ${VAR} references: Flink CDC does not substitute them, so put\n"
    "# the values in before submitting this file.\n"
)
_PLAIN_INTEGER = re.compile(r"0|[1-9][0-9]*")


def export_flink_cdc(
    text: str, path: Path, environ: Mapping[str, str], *, resolve: bool = False
) -> str:
    """``text`` (a valid pipeline file) minus the ``tidemark:`` block."""
    problems = Problems(str(path))
    root = parse(text, problems, environ)
    problems.raise_if_errors()
    assert root is not None
    if resolve:
        return _rewrite(root)
    if root.flow:
        raise ConfigError(
            f"{path}: the top level is a flow mapping ({{...}}); export-flink-cdc keeps the "
            "file's text only for block-style files: use --resolve, or write it in block style"
        )
    return _cut(text, root)


#: ``PaimonDataSinkOptions.METASTORE``, required by Flink CDC 3.2+; Tidemark's default
_METASTORE = ("catalog.properties.metastore", DEFAULT_PAIMON_METASTORE)


def _paimon_without_metastore(root: MapNode) -> MapNode | None:
    """The ``sink:`` block when it is a Paimon sink that does not name its metastore."""
    sink = root.get("sink")
    if not isinstance(sink, MapNode) or sink.get(_METASTORE[0]) is not None:
        return None
    kind = sink.get("type")
    return sink if isinstance(kind, Scalar) and kind.text == "paimon" else None


def _cut(text: str, root: MapNode) -> str:
    lines = text.splitlines(keepends=True)
    start, end = len(lines), len(lines)  # nothing to cut
    key = root.key(EXTENSION_KEY)
    if key is not None:
        start = key.mark.line - 1
        while start > 0 and lines[start - 1].lstrip().startswith("#"):
            start -= 1  # the comment that introduces the block goes with it
        keys = [k for k, _ in root]
        following = [k for k in keys if k.mark.line > key.mark.line]
        end = min(k.mark.line for k in following) - 1 if following else len(lines)
        while end > key.mark.line and lines[end - 1].startswith("#"):
            end -= 1  # a comment directly above the next block belongs to it
    added = _metastore_line(root, lines)
    kept = []
    for number, line in enumerate(lines, start=1):
        if not start < number <= end:
            kept.append(line)
        if added is not None and number == added[0]:
            kept.append(added[1])
    return "".join(kept)


def _metastore_line(root: MapNode, lines: list[str]) -> tuple[int, str] | None:
    """The metastore line a Paimon sink without one gets, and the line it goes after (its
    ``type``'s); None when none is needed, or when the sink is a flow mapping (``{...}``),
    whose text is kept as it is (``validate`` warned)."""
    sink = _paimon_without_metastore(root)
    if sink is None or sink.flow:
        return None
    key, value = sink.key("type"), sink.get("type")
    assert key is not None and value is not None
    after = max(key.mark.line, value.mark.line)
    if not lines[after - 1].endswith("\n"):
        lines[after - 1] += "\n"
    name, metastore = _METASTORE
    indent = " " * (key.mark.column - 1)
    return after, f"{indent}{name}: {metastore}  # Flink CDC 3.2+ wants it written\n"


def _rewrite(root: MapNode) -> str:
    left: list[bool] = []
    document = {
        key.name: _plain(value, is_secret_key(key.name), left)
        for key, value in root
        if key.name != EXTENSION_KEY
    }
    if _paimon_without_metastore(root) is not None:
        sink = document["sink"]
        name, metastore = _METASTORE
        document["sink"] = {"type": sink.pop("type"), name: metastore, **sink}
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return (SECRETS_LEFT if any(left) else "") + body


def _plain(node: Node, secret_key: bool, left: list[bool]) -> Any:
    if isinstance(node, MapNode):
        return {key.name: _plain(value, is_secret_key(key.name), left) for key, value in node}
    if isinstance(node, ListNode):
        return [_plain(item, secret_key, left) for item in node.items]
    assert isinstance(node, Scalar)
    if node.raw is None:
        return None
    if has_references(node.raw) and (secret_key or node.secret):
        left.append(True)
        return node.raw
    text = node.text if has_references(node.raw) and node.text is not None else node.raw
    if node.plain and _PLAIN_INTEGER.fullmatch(text):
        return int(text)  # written as a plain number: keep it one, rather than quote it
    if node.plain and text in ("true", "false"):
        return text == "true"
    return text
