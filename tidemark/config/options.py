"""Flat blocks of dotted options (``source``, ``sink``, ``pipeline``), checked against a registry.

Upstream describes each connector's options as a list of ``ConfigOption``s plus prefixes passed
through (``jdbc.properties.``); an ``OptionSet`` does the same. The options Tidemark uses are
declared on the model fields that hold their values (``tidemark.config.model``), the ones it only
accepts (upstream's Flink tuning) in their block's ``OptionSet``: either way, adding an option is
one declaration. Values are read as Flink reads them: text, converted by the option's ``parse``
(a YAML list by ``yaml_list``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, SecretStr

from tidemark.config.declaration import Option, declared
from tidemark.config.fields import Reader, child, unknown_key_message
from tidemark.config.loader import ListNode, MapNode, Node, Scalar
from tidemark.config.secrets import is_secret_key
from tidemark.config.values import closest, text


@dataclass(frozen=True)
class Prefix:
    """Options passed through by prefix, such as ``catalog.properties.*``."""

    prefix: str
    doc: str = ""
    no_effect: str | None = None


@dataclass(frozen=True)
class OptionSet:
    what: str
    options: tuple[Option, ...]
    prefixes: tuple[Prefix, ...] = ()
    #: keys read elsewhere (``type``), skipped here
    handled_elsewhere: frozenset[str] = frozenset()

    def find(self, key: str) -> Option | None:
        return next((option for option in self.options if option.key == key), None)

    def prefix_of(self, key: str) -> Prefix | None:
        return next((p for p in self.prefixes if key.startswith(p.prefix)), None)

    @property
    def keys(self) -> list[str]:
        return sorted(self.handled_elsewhere) + [option.key for option in self.options]

    def candidates(self, key: str) -> list[str]:
        """Known keys, plus each prefix completed with the tail of ``key`` (for suggestions)."""
        names = self.keys
        parts = key.split(".")
        for prefix in self.prefixes:
            depth = prefix.prefix.count(".")
            if len(parts) > depth:
                names.append(prefix.prefix + ".".join(parts[depth:]))
        return names


@dataclass
class CheckedOptions:
    """The options of one block: typed values of known keys, and prefixed keys as text."""

    values: dict[str, Any] = field(default_factory=dict)
    prefixed: dict[str, dict[str, str | SecretStr]] = field(default_factory=dict)
    #: every option as text, secrets as SecretStr, in file order
    raw: dict[str, str | SecretStr] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def has(self, key: str) -> bool:
        return key in self.raw

    def given(self, model: type[BaseModel]) -> dict[str, Any]:
        """The values given for ``model``'s declared options, by attribute; the others keep
        the model's defaults."""
        return {
            item.attribute: self.values[item.key]
            for item in declared(model)
            if item.key in self.values
        }


def check_options(reader: Reader, node: MapNode, path: str, spec: OptionSet) -> CheckedOptions:
    result = CheckedOptions()
    warned_prefixes: set[str] = set()
    for key, value in node:
        name, key_path = key.name, child(path, key.name)
        if name in spec.handled_elsewhere:
            continue
        if name == "<<":
            message = unknown_key_message(name, spec.what, spec.keys, None)
            reader.problems.error(key.mark.line, key_path, message)
            continue
        if isinstance(value, MapNode):
            reader.problems.error(key.mark.line, key_path, _nested_message(name, value))
            continue
        option = spec.find(name)
        if option is not None:
            _check_known(reader, option, value, key_path, result)
            continue
        prefix = spec.prefix_of(name)
        if prefix is not None:
            text = reader.text(value, key_path)
            if text is not None:
                secret = is_secret_key(name)
                stored: str | SecretStr = SecretStr(text) if secret else text
                result.prefixed.setdefault(prefix.prefix, {})[name[len(prefix.prefix) :]] = stored
                result.raw[name] = stored
            if prefix.no_effect and prefix.prefix not in warned_prefixes:
                warned_prefixes.add(prefix.prefix)
                reader.problems.warning(
                    key.mark.line, key_path, f"{prefix.prefix}* {prefix.no_effect}"
                )
            continue
        guess = closest(name, spec.candidates(name))
        reader.problems.error(
            key.mark.line, key_path, unknown_key_message(name, spec.what, spec.keys, guess)
        )
    for option in spec.options:
        if option.required and node.get(option.key) is None:
            reader.error(node, path, f"{spec.what} is missing the required key '{option.key}'")
    return result


def _check_known(
    reader: Reader, option: Option, value: Node, key_path: str, result: CheckedOptions
) -> None:
    secret = is_secret_key(option.key)
    if option.read is not None:
        parsed: Any = option.read(reader, value, key_path)
    else:
        parsed = reader.value(value, key_path, option.parse or text, secret=secret)
    if parsed is None:
        return
    if option.no_effect:
        reader.warning(value, key_path, option.no_effect)
    if secret and isinstance(parsed, str):
        parsed = SecretStr(parsed)
    result.values[option.key] = parsed
    written = value.text if isinstance(value, Scalar) and value.text is not None else None
    as_written = written if written is not None else ",".join(parsed)
    result.raw[option.key] = SecretStr(as_written) if secret else as_written


def yaml_list(reader: Reader, value: Node, key_path: str) -> tuple[str, ...] | None:
    """A YAML list of single values: upstream ignores a single value where it wants a list."""
    if not isinstance(value, ListNode):
        reader.error(
            value,
            key_path,
            "must be a YAML list such as [add.column, drop.column], got a single value; "
            "Flink CDC ignores a single value here",
        )
        return None
    items = [reader.text(item, f"{key_path}[{i}]") for i, item in enumerate(value.items)]
    if any(item is None for item in items):
        return None
    return tuple(item for item in items if item is not None)


def _nested_message(name: str, node: MapNode) -> str:
    flat = _flatten(name, node)
    example = f"`{flat[0]}: ...`" if flat else f"`{name}.<key>: ...`"
    more = f" (and {len(flat) - 1} more)" if len(flat) > 1 else ""
    return (
        "nested mappings are not Flink CDC options: write dotted keys at this level, "
        f"as {example}{more}"
    )


def _flatten(prefix: str, node: MapNode) -> list[str]:
    keys: list[str] = []
    for key, value in node:
        name = f"{prefix}.{key.name}"
        keys.extend(_flatten(name, value) if isinstance(value, MapNode) else [name])
    return keys
