"""YAML text to a tree of located nodes: every value keeps its line, and its text as written.

PyYAML composes the document; we never let it construct Python values, so YAML 1.1 quirks
(``yes`` -> true, ``0123`` -> 83) cannot happen: a scalar is its text, and the schema decides its
type, as Flink CDC's string-to-string configuration does. Duplicate keys, which upstream silently
resolves to the last value, are problems here. ``${VAR}`` references in values are substituted
while the tree is built.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import yaml

from tidemark.config.errors import Problems
from tidemark.config.secrets import is_secret_key
from tidemark.config.variables import substitute

_NULL_TAG = "tag:yaml.org,2002:null"


@dataclass(frozen=True)
class Mark:
    """A place in the file; both numbers start at 1."""

    line: int
    column: int

    @classmethod
    def of(cls, mark: yaml.Mark) -> Mark:
        return cls(mark.line + 1, mark.column + 1)


@dataclass(frozen=True)
class Scalar:
    """A scalar value: ``text`` after substitution (None for YAML null), ``raw`` as written."""

    text: str | None
    raw: str | None
    mark: Mark
    #: False when a ``${VAR}`` in it could not be resolved (already reported)
    resolved: bool = True
    #: True when a password-like variable contributed to the text
    secret: bool = False
    #: True when written without quotes
    plain: bool = False

    @property
    def kind(self) -> str:
        return "an empty value" if self.text is None else "a scalar"


@dataclass(frozen=True)
class Key:
    name: str
    mark: Mark


@dataclass(frozen=True)
class MapNode:
    entries: tuple[tuple[Key, Node], ...]
    mark: Mark
    end: Mark
    flow: bool = False

    @property
    def kind(self) -> str:
        return "a mapping"

    def get(self, name: str) -> Node | None:
        for key, value in reversed(self.entries):
            if key.name == name:
                return value
        return None

    def key(self, name: str) -> Key | None:
        for key, _ in self.entries:
            if key.name == name:
                return key
        return None

    def __iter__(self) -> Iterator[tuple[Key, Node]]:
        return iter(self.entries)


@dataclass(frozen=True)
class ListNode:
    items: tuple[Node, ...]
    mark: Mark

    @property
    def kind(self) -> str:
        return "a list"


Node = Scalar | MapNode | ListNode


def parse(text: str, problems: Problems, environ: Mapping[str, str]) -> MapNode | None:
    """The document's top-level mapping, or None when there is none (problems say why)."""
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as error:
        _syntax_problem(error, problems)
        return None
    except yaml.YAMLError as error:  # reader errors: control characters and the like
        problems.error(None, "", f"not a readable YAML file: {error}")
        return None
    documents = [d for d in documents if d is not None]
    if not documents:
        problems.error(
            1, "", "the file is empty: a pipeline needs at least a `source` and a `sink` block"
        )
        return None
    if len(documents) > 1:
        second = Mark.of(documents[1].start_mark)
        problems.error(
            second.line,
            "",
            "the file holds more than one YAML document (`---`): put one pipeline per file",
        )
        return None
    root = _Builder(problems, environ).node(documents[0], "", secret_key=False)
    if not isinstance(root, MapNode):
        problems.error(
            root.mark.line,
            "",
            f"the top level must be a mapping with `source`, `sink` and the other blocks, "
            f"got {root.kind}",
        )
        return None
    return root


def _syntax_problem(error: yaml.MarkedYAMLError, problems: Problems) -> None:
    # Only PyYAML's description and position: its snippet of the line could show a secret.
    mark = error.problem_mark or error.context_mark
    what = error.problem or error.context or "invalid YAML"
    context = f" ({error.context})" if error.context and error.problem else ""
    started = error.context_mark
    if context and started is not None and mark is not None and started.line != mark.line:
        context = f" ({error.context} that starts at line {started.line + 1})"
    fix = next((hint for start, hint in _SYNTAX_HINTS.items() if what.startswith(start)), "")
    problems.error(
        mark.line + 1 if mark else None,
        "",
        f"YAML syntax error: {what}{context}{fix}",
        column=mark.column + 1 if mark else None,
    )


_SYNTAX_HINTS = {
    "found character '\\t' that cannot start any token": "; indent with spaces, not tabs",
    "mapping values are not allowed here": (
        "; a value containing ': ' must be quoted, or the indentation is off"
    ),
    "could not find expected ':'": "; a key needs ': ' after it",
    "expected <block end>": "; check the indentation",
}


class _Builder:
    def __init__(self, problems: Problems, environ: Mapping[str, str]) -> None:
        self._problems = problems
        self._environ = environ

    def node(self, node: yaml.Node, path: str, *, secret_key: bool) -> Node:
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            items = tuple(
                self.node(item, f"{path}[{index}]", secret_key=secret_key)
                for index, item in enumerate(node.value)
            )
            return ListNode(items, Mark.of(node.start_mark))
        assert isinstance(node, yaml.ScalarNode)
        return self._scalar(node, path, secret_key=secret_key)

    def _mapping(self, node: yaml.MappingNode, path: str) -> MapNode:
        entries: list[tuple[Key, Node]] = []
        seen: dict[str, Mark] = {}
        for key_node, value_node in node.value:
            mark = Mark.of(key_node.start_mark)
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _NULL_TAG:
                self._problems.error(
                    mark.line, path, "a key must be a plain name, not a list, mapping or null"
                )
                continue
            name = str(key_node.value)
            child = f"{path}.{name}" if path else name
            if name in seen:
                self._problems.error(
                    mark.line,
                    child,
                    f"duplicate key (first at line {seen[name].line}); Flink CDC would silently "
                    "keep the last value: keep one",
                )
            seen.setdefault(name, mark)
            value = self.node(value_node, child, secret_key=is_secret_key(name))
            if isinstance(value, MapNode | ListNode) and not value.mark.line == mark.line:
                # a block starts where its key is: `source:` is the source block's line
                value = replace(value, mark=mark)
            entries.append((Key(name, mark), value))
        return MapNode(
            tuple(entries),
            Mark.of(node.start_mark),
            Mark.of(node.end_mark),
            flow=bool(node.flow_style),
        )

    def _scalar(self, node: yaml.ScalarNode, path: str, *, secret_key: bool) -> Scalar:
        mark = Mark.of(node.start_mark)
        if node.tag == _NULL_TAG and not node.style:
            return Scalar(None, None, mark)
        raw = str(node.value)
        result = substitute(raw, self._environ, secret=secret_key)
        for message in result.errors:
            self._problems.error(mark.line, path, message)
        if result.secret or secret_key:
            self._problems.redactor.add([result.value])
        return Scalar(
            result.value,
            raw,
            mark,
            resolved=not result.errors,
            secret=result.secret,
            plain=not node.style,
        )
