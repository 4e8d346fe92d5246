"""Flink CDC's table patterns, reproduced exactly (docs/architecture.md#pipeline-file-facts).

Two different syntaxes, as upstream has them:

- **Selectors** (``source.tables``, ``tables.exclude``, ``transform[].source-table``): patterns
  separated by commas (``\\,`` for a literal comma); in each, an unescaped ``.`` separates the
  database from the table and ``\\.`` is the regex "any character"; each part must match the whole
  name, case-insensitively (upstream ``Selectors`` and ``Predicates``).
- **Route source tables** (``route[].source-table``): commas become ``|``, ``\\.`` becomes the
  regex ``.`` and an unescaped ``.`` a literal dot; the result must match the whole ``db.table``,
  case-sensitively; ``$1`` in ``sink-table`` takes capture groups, or ``replace-symbol`` is
  replaced by the source table's name (upstream ``TableIdRouter``).

Patterns are Java regular expressions; we run them with Python's ``re``, translating the one
common difference (named groups ``(?<name>...)``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class PatternError(ValueError):
    """The message says what is wrong with a pattern, for a person."""


# --- Selectors -----------------------------------------------------------------------------


def split_unescaped(text: str, separator: str) -> list[str]:
    """Upstream's ``RegExSplitterBy{Comma,Dot}``: split on unescaped ``separator``, drop empty
    parts, trim each, and turn ``\\<separator>`` into ``<separator>``."""
    return [part.replace("\\" + separator, separator) for part in split_as_written(text, separator)]


def split_as_written(text: str, separator: str) -> list[str]:
    """``split_unescaped`` with each part's escapes kept, to show the user what they wrote."""
    parts: list[str] = []
    start = index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 >= len(text):
                raise PatternError("ends with a lone '\\': escape something, or remove it")
            index += 2
            continue
        if char == separator:
            parts.append(text[start:index])
            start = index + 1
        index += 1
    parts.append(text[start:])
    return [_java_trim(p) for p in parts if p]


def _java_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


_JAVA_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z])")


def java_to_python_regex(pattern: str) -> str:
    return _JAVA_NAMED_GROUP.sub("(?P<", pattern)


class InvalidRegex(PatternError):
    """``compile_regex``'s refusal: the regex as given, ``re``'s reason, and where in the regex
    as given (not in its Python translation) the problem is, for messages to place."""

    def __init__(self, regex: str, reason: str, position: int | None) -> None:
        where = f" at position {position}" if position is not None else ""
        # quoted by hand: repr() would double each backslash
        super().__init__(f"'{regex}' is not a valid regular expression: {reason}{where}")
        self.regex = regex
        self.reason = reason
        self.position = position


@functools.lru_cache(maxsize=4096)
def compile_regex(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    try:
        return re.compile(java_to_python_regex(pattern), re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        raise InvalidRegex(pattern, error.msg, _java_position(pattern, error.pos)) from None


def _java_position(pattern: str, position: int | None) -> int | None:
    """A position in ``java_to_python_regex(pattern)`` as a position in ``pattern``: each
    ``(?<name>`` before it gained a ``P``."""
    if position is None:
        return None
    added = 0
    for named in _JAVA_NAMED_GROUP.finditer(pattern):
        if named.start() + 2 + added >= position:  # the P goes after '(?'
            break
        added += 1
    return position - added


@dataclass(frozen=True)
class Selector:
    """One ``database.table`` pattern of a selector list: its two regular expressions, and the
    pattern as the user wrote it (``shop.orders_\\.*``), which is what messages show."""

    database: str
    table: str
    written: str

    def matches(self, database: str, table: str) -> bool:
        return bool(
            compile_regex(self.database, True).fullmatch(database)
            and compile_regex(self.table, True).fullmatch(table)
        )

    def __str__(self) -> str:
        return self.written


@dataclass(frozen=True)
class ChunkKeyColumn:
    """One entry of ``scan.incremental.snapshot.chunk.key-column``: the tables it names, and
    the column their chunks are cut by."""

    tables: tuple[Selector, ...]
    column: str


def parse_chunk_key_columns(text: str) -> tuple[ChunkKeyColumn, ...]:
    """Upstream's ``db.table:column`` entries separated by ``;``, the table part a pattern as in
    ``tables``; ``PatternError`` naming the entry that does not parse."""
    entries = []
    for written in text.split(";"):
        if not written.strip():
            continue
        tables, _, column = written.strip().rpartition(":")
        if not tables.strip() or not column.strip():
            raise PatternError(
                f"cannot parse {written.strip()!r}: write 'db.table:column' entries separated "
                "by ';'"
            )
        entries.append(ChunkKeyColumn(parse_selectors(tables.strip()), column.strip()))
    return tuple(entries)


def parse_selectors(expression: str) -> tuple[Selector, ...]:
    """``tables``-style text to selectors; ``PatternError`` for anything upstream would not
    match a MySQL table with (a pattern without a database part matches nothing upstream)."""
    if not expression.strip():
        raise PatternError("is empty: give at least one database.table pattern")
    selectors = []
    for written in split_as_written(expression, ","):
        parts = split_unescaped(written.replace("\\,", ","), ".")
        if not parts:
            raise PatternError("has an empty pattern between commas: remove the extra comma")
        # quoted by hand: repr() would double each backslash the user wrote
        if len(parts) == 1:
            raise PatternError(
                f"pattern '{written}' has no database part, so it matches no MySQL table: "
                f"write '<database>.{written}', or '\\.*.{written}' for every database"
            )
        if len(parts) != 2:
            raise PatternError(
                f"pattern '{written}' has {len(parts)} parts; MySQL tables are database.table "
                "(an unescaped '.' separates them; write '\\.' for the regex 'any character')"
            )
        for part, name in zip(parts, ("database", "table"), strict=True):
            try:
                compile_regex(part, True)
            except InvalidRegex as error:
                raise PatternError(
                    f"pattern '{written}' is not a valid regular expression: "
                    + _placed(error, written, name)
                ) from None
        selectors.append(Selector(parts[0], parts[1], written))
    return tuple(selectors)


def _placed(error: InvalidRegex, written: str, name: str) -> str:
    """``error``'s reason, placed in the ``name`` part of the selector ``written``, as the user
    wrote it (where ``\\.`` and ``\\,`` are one character of the regex)."""
    as_written = split_as_written(written, ".")
    part = as_written[("database", "table").index(name)] if len(as_written) == 2 else ""
    origins: list[int] = []  # for each character of the regex, where it is in `part`
    regex = ""
    index = 0
    while index < len(part):
        pair = part[index : index + 2] if part[index] == "\\" else part[index]
        unescaped = pair[1:] if pair in ("\\.", "\\,") else pair
        origins.extend(index + len(pair) - len(unescaped) + i for i in range(len(unescaped)))
        regex += unescaped
        index += len(pair)
    origins.append(len(part))  # the end of the regex
    if regex == error.regex:
        position = None if error.position is None else origins[error.position]
        shown = f"its {name} part '{part}'"
    else:  # not expected: then place it in the regex itself
        position = error.position
        shown = f"'{error.regex}', the regex its {name} part becomes"
    where = " in" if position is None else f" at position {position} of"
    return f"{error.reason}{where} {shown}"


def selectors_match(selectors: Sequence[Selector], database: str, table: str) -> bool:
    return any(selector.matches(database, table) for selector in selectors)


# --- Routes --------------------------------------------------------------------------------


class RouteMode(StrEnum):
    ALL_MATCH = "ALL_MATCH"
    FIRST_MATCH = "FIRST_MATCH"


_DOT_PLACEHOLDER = "_dot_placeholder_"


def route_regex(source_table: str) -> str:
    """Upstream's ``TableIdRouter.convertTableListToRegExpPattern``."""
    parts = source_table.split(",")
    while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
        parts.pop()
    joined = "|".join(_java_trim(part) for part in parts)
    return (
        joined.replace("\\.", _DOT_PLACEHOLDER).replace(".", "\\.").replace(_DOT_PLACEHOLDER, ".")
    )


def compile_route(source_table: str) -> re.Pattern[str]:
    """A route's ``source-table`` as one regular expression; an error shows it as written."""
    regex = route_regex(source_table)
    try:
        return compile_regex(regex, False)
    except InvalidRegex as error:  # told against what the user wrote; quoted by hand, as repr()
        # would double each backslash
        where = f" at position {error.position} of '{regex}', the regex it becomes"
        reason = f"{error.reason}{where if error.position is not None else ''}"
        raise PatternError(
            f"'{source_table}' is not a valid regular expression: {reason}; in a route, '.' "
            "separates database and table: write '\\.' for the regex 'any character'"
        ) from None


@dataclass(frozen=True)
class _Literal:
    text: str


@dataclass(frozen=True)
class _Group:
    ref: int | str


def parse_replacement(template: str, group_count: int) -> tuple[_Literal | _Group, ...]:
    """Java's ``Matcher.appendReplacement`` syntax: ``$1``, ``${name}``, ``\\$`` for a ``$``."""
    parts: list[_Literal | _Group] = []
    index = 0
    while index < len(template):
        char = template[index]
        if char == "\\":
            if index + 1 >= len(template):
                raise PatternError("ends with a lone '\\': write '\\\\' for a backslash")
            parts.append(_Literal(template[index + 1]))
            index += 2
        elif char == "$":
            index += 1
            if index < len(template) and template[index] == "{":
                end = template.find("}", index)
                if end < 0:
                    raise PatternError("has a '${' group name without its closing '}'")
                parts.append(_Group(template[index + 1 : end]))
                index = end + 1
                continue
            if index >= len(template) or not template[index].isdigit():
                raise PatternError(
                    "has a '$' that is not a group reference such as $1: write '\\$' for a '$'"
                )
            number = int(template[index])
            index += 1
            while index < len(template) and template[index].isdigit():
                longer = number * 10 + int(template[index])
                if longer > group_count:
                    break
                number, index = longer, index + 1
            if number > group_count:
                groups = (
                    "1 capturing group" if group_count == 1 else f"{group_count} capturing groups"
                )
                raise PatternError(f"refers to group ${number} but source-table has {groups}")
            parts.append(_Group(number))
        else:
            parts.append(_Literal(char))
            index += 1
    return tuple(parts)


def expand(parts: Sequence[_Literal | _Group], match: re.Match[str]) -> str:
    return "".join(
        part.text if isinstance(part, _Literal) else (match.group(part.ref) or "") for part in parts
    )


@dataclass(frozen=True)
class Route:
    """A compiled route rule; ``apply`` gives the sink table id, or None when it does not match."""

    source_table: str
    sink_table: str
    replace_symbol: str | None = None

    def matches(self, table_id: str) -> bool:
        return compile_route(self.source_table).fullmatch(table_id) is not None

    def apply(self, database: str, table: str) -> str | None:
        table_id = f"{database}.{table}"
        pattern = compile_route(self.source_table)
        if pattern.fullmatch(table_id) is None:
            return None
        if self.replace_symbol:
            return self.sink_table.replace(self.replace_symbol, table)
        parts = parse_replacement(self.sink_table, pattern.groups)
        # Java: find() then replaceAll(): every match in the id is replaced.
        return pattern.sub(lambda match: expand(parts, match), table_id)


def route_table(routes: Sequence[Route], mode: RouteMode, database: str, table: str) -> list[str]:
    """Where ``database.table`` goes; itself when no route matches (upstream semantics)."""
    targets: list[str] = []
    for route in routes:
        target = route.apply(database, table)
        if target is not None:
            targets.append(target)
            if mode is RouteMode.FIRST_MATCH:
                break
    return targets or [f"{database}.{table}"]


def split_table_id(table_id: str) -> tuple[str, str] | None:
    """``db.table`` -> ``("db", "table")``; None unless there are exactly two parts."""
    parts = table_id.split(".")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]
