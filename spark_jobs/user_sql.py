"""The users' SQL files: split into statements, with ``${name}`` variables substituted.

A file holds several statements separated by ``;``. A ``;`` inside a string literal ('...',
"..."), a quoted identifier (`...`) or a comment (``-- ...`` to the end of the line, ``/* ... */``)
does not end a statement. Comments are removed before substitution (a ``${name}`` in a comment is
not an error), keeping line breaks so errors point at the right line.

``${name}`` and Hive's ``${hivevar:name}`` are replaced everywhere else, string literals
included (a T+1 query's ``dt = '${dt}'``). An unknown name is an error naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from tidemark.errors import ConfigError

_REFERENCE = re.compile(r"\$\{(?:hivevar:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_QUOTES = "'\"`"


@dataclass(frozen=True)
class Statement:
    """One statement of a file, comments removed; ``line`` is where it starts (1-based)."""

    text: str
    line: int


def split_statements(text: str) -> list[Statement]:
    """The non-empty statements of ``text``, in order."""
    statements: list[Statement] = []
    current: list[str] = []
    start_line = line = 1  # the line the current statement's text starts on
    for kind, piece in _tokens(text):
        if kind == "end":
            _keep(statements, "".join(current), start_line)
            current = []
            start_line = line
            continue
        if kind == "comment":
            piece = "\n" * piece.count("\n") if "\n" in piece else " "
        current.append(piece)
        line += piece.count("\n")
    _keep(statements, "".join(current), start_line)
    return statements


def _keep(statements: list[Statement], text: str, line: int) -> None:
    stripped = text.strip()
    if stripped:
        statements.append(Statement(stripped, line + text[: text.index(stripped[0])].count("\n")))


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    """("text" | "comment" | "end", piece): the pieces of ``text`` in order."""
    index, size = 0, len(text)
    while index < size:
        char = text[index]
        if char == ";":
            yield "end", ";"
            index += 1
        elif text.startswith("--", index):
            stop = text.find("\n", index)
            stop = size if stop < 0 else stop
            yield "comment", text[index:stop]
            index = stop
        elif text.startswith("/*", index):
            stop = text.find("*/", index + 2)
            stop = size if stop < 0 else stop + 2
            yield "comment", text[index:stop]
            index = stop
        elif char in _QUOTES:
            stop = _closing_quote(text, index)
            yield "text", text[index:stop]
            index = stop
        else:
            stop = index
            while stop < size and text[stop] not in _QUOTES + ";-/":
                stop += 1
            stop = max(stop, index + 1)
            yield "text", text[index:stop]
            index = stop


def protected_spans(text: str) -> list[tuple[int, int]]:
    """[start, stop) of each string literal and comment of ``text``: what a rewrite of the
    statement's names must not touch (a `quoted identifier` is a name, so not protected)."""
    spans, index = [], 0
    for kind, piece in _tokens(text):
        if kind == "comment" or (kind == "text" and piece[0] in "'\""):
            spans.append((index, index + len(piece)))
        index += len(piece)
    return spans


def _closing_quote(text: str, start: int) -> int:
    """The index after the quote closing the literal opened at ``start``."""
    quote, index = text[start], start + 1
    while index < len(text):
        if text[index] == "\\" and quote != "`":
            index += 2  # Spark SQL literals take backslash escapes
        elif text[index] == quote:
            if text.startswith(quote * 2, index):
                index += 2  # a doubled quote stands for itself
            else:
                return index + 1
        else:
            index += 1
    return len(text)  # unclosed: Spark reports it with its own message


def substitute(statement: Statement, variables: Mapping[str, str], file: Path) -> str:
    """``statement`` with every ``${name}`` / ``${hivevar:name}`` replaced."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in variables:
            return variables[name]
        line = statement.line + statement.text[: match.start()].count("\n")
        known = ", ".join(sorted(variables))
        raise ConfigError(
            f"{file}:{line}: unknown variable ${{{name}}}: define it under the job's variables "
            f"in the pipeline file (known: {known})"
        )

    return _REFERENCE.sub(replace, statement.text)


def read_statements(file: Path, variables: Mapping[str, str]) -> list[str]:
    """The statements of ``file``, ready to run."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read the SQL file {file}: {error}") from error
    return [substitute(statement, variables, file) for statement in split_statements(text)]
