"""Reading located nodes into typed values, reporting each mistake with its key path and line.

Every reader returns None after reporting a problem, so checking goes on and the user sees all
problems at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from tidemark.config.errors import Problems
from tidemark.config.loader import ListNode, MapNode, Node, Scalar
from tidemark.config.secrets import is_secret_key
from tidemark.config.values import BadValue, closest

T = TypeVar("T")

#: Lists of allowed keys longer than this are not spelled out in a message.
_MAX_LISTED = 12


def child(path: str, name: str, *, quote: bool = False) -> str:
    """The key path of ``name`` under ``path``; ``quote`` for names that contain dots."""
    shown = f'"{name}"' if quote and "." in name else name
    return f"{path}.{shown}" if path else shown


def unknown_key_message(name: str, what: str, allowed: Sequence[str], guess: str | None) -> str:
    if name == "<<":
        return "YAML merge keys (<<) are not supported by Flink CDC: write the keys out"
    if guess is not None:
        return f"unknown key in {what}; did you mean '{guess}'?"
    if len(allowed) <= _MAX_LISTED:
        return f"unknown key in {what}; the allowed keys are: {', '.join(allowed)}"
    return f"unknown key in {what}"


def shown(text: str, *, secret: bool) -> str:
    return "(a secret, not shown)" if secret else repr(text)


class Reader:
    """Typed access to nodes; every failure becomes a problem at the node's line."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems

    def error(self, node: Node | None, path: str, message: str) -> None:
        self.problems.error(node.mark.line if node else None, path, message)

    def warning(self, node: Node | None, path: str, message: str) -> None:
        self.problems.warning(node.mark.line if node else None, path, message)

    def mapping(self, node: Node, path: str) -> MapNode | None:
        if isinstance(node, MapNode):
            return node
        self.error(node, path, f"must be a mapping of keys to values, got {node.kind}")
        return None

    def sequence(self, node: Node, path: str, example: str) -> ListNode | None:
        if isinstance(node, ListNode):
            return node
        self.error(
            node,
            path,
            f"must be a list (each entry starting with '- '), got {node.kind}; {example}",
        )
        return None

    def check_keys(
        self,
        node: MapNode,
        path: str,
        what: str,
        allowed: Sequence[str],
        required: Sequence[str] = (),
    ) -> None:
        for key, _ in node:
            if key.name not in allowed:
                message = unknown_key_message(key.name, what, allowed, closest(key.name, allowed))
                self.problems.error(key.mark.line, child(path, key.name), message)
        for name in required:
            if node.get(name) is None:
                self.error(node, path, f"{what} is missing the required key '{name}'")

    def text(self, node: Node | None, path: str) -> str | None:
        """The text of a scalar; lists, mappings and empty values are problems."""
        if node is None:
            return None
        if isinstance(node, Scalar):
            if node.text is None:
                self.error(node, path, "has no value: give one, or remove the key")
                return None
            return node.text if node.resolved else None
        self.error(node, path, f"must be a single value, got {node.kind}")
        return None

    def value(
        self, node: Node | None, path: str, parse: Callable[[str], T], *, secret: bool = False
    ) -> T | None:
        """Parse a scalar; a ``BadValue`` becomes a problem that shows the value unless secret."""
        text = self.text(node, path)
        if text is None or node is None:
            return None
        try:
            return parse(text)
        except BadValue as bad:
            hidden = secret or is_secret_key(path) or (isinstance(node, Scalar) and node.secret)
            quoted = shown(self.problems.redact(text), secret=hidden)
            message = f"{bad.message}, got: {quoted}"
            self.error(node, path, f"{message}; {bad.hint}" if bad.hint else message)
            return None

    def text_list(self, node: Node | None, path: str, example: str) -> tuple[str, ...] | None:
        """A YAML list of values, or one comma-separated value (``a, b``)."""
        if node is None:
            return None
        if isinstance(node, Scalar):
            text = self.text(node, path)
            if text is None:
                return None
            return tuple(item.strip() for item in text.split(",") if item.strip())
        if isinstance(node, ListNode):
            items = [self.text(item, f"{path}[{i}]") for i, item in enumerate(node.items)]
            if any(item is None for item in items):
                return None
            return tuple(item for item in items if item is not None)
        self.error(
            node, path, f"must be a list or a comma-separated value, got a mapping; {example}"
        )
        return None

    def string_map(self, node: Node | None, path: str) -> dict[str, str] | None:
        """A mapping of names to single values (``variables:``, ``spark:``)."""
        if node is None:
            return None
        mapping = self.mapping(node, path)
        if mapping is None:
            return None
        result: dict[str, str] = {}
        for key, value in mapping:
            text = self.text(value, child(path, key.name))
            if text is not None:
                result[key.name] = text
        return result
