"""Which tables a statement from the binlog changes the shape of.

Until schema evolution exists (issue: schema changes), ingest stops at any such statement on an
onboarded table rather than decode rows with the wrong schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_NAME = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"({_NAME}(?:\s*\.\s*{_NAME})?)"
_COMMENTS = re.compile(r"/\*.*?\*/|(?:--|#)[^\n]*", re.DOTALL)
_SINGLE_TABLE = re.compile(
    rf"^\s*(?:(?P<alter>ALTER)\s+(?:ONLINE\s+|IGNORE\s+)*TABLE|(?P<truncate>TRUNCATE)(?:\s+TABLE)?"
    rf"|(?P<create>CREATE)\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE)"
    rf"(?:\s+IF\s+(?:NOT\s+)?EXISTS)?\s+{_QUALIFIED}",
    re.IGNORECASE,
)
_DROP = re.compile(
    r"^\s*DROP\s+(?:TEMPORARY\s+)?TABLES?(?:\s+IF\s+EXISTS)?\s+(.+?)(?:\s+(?:RESTRICT|CASCADE))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_RENAME = re.compile(r"^\s*RENAME\s+TABLES?\s+(.+)$", re.IGNORECASE | re.DOTALL)
_NAME_LIST_ITEM = re.compile(_QUALIFIED)


class TableChange(StrEnum):
    CREATE = "create"
    ALTER = "alter"
    TRUNCATE = "truncate"
    DROP = "drop"
    RENAME = "rename"


@dataclass(frozen=True)
class ChangedTable:
    change: TableChange
    database: str
    table: str


def changed_tables(statement: str, default_database: str) -> list[ChangedTable]:
    """The tables whose structure or existence ``statement`` changes; empty for others."""
    text = _COMMENTS.sub(" ", statement).strip()
    single = _SINGLE_TABLE.match(text)
    if single:
        change = next(
            TableChange(kind) for kind in ("alter", "truncate", "create") if single.group(kind)
        )
        return [ChangedTable(change, *_qualify(single.group(4), default_database))]
    drop = _DROP.match(text)
    if drop:
        names = _names(drop.group(1))
        return [ChangedTable(TableChange.DROP, *_qualify(n, default_database)) for n in names]
    rename = _RENAME.match(text)
    if rename:
        names = [
            name
            for pair in rename.group(1).split(",")
            for name in _names(re.sub(r"\s+TO\s+", ",", pair, flags=re.IGNORECASE))
        ]
        return [ChangedTable(TableChange.RENAME, *_qualify(n, default_database)) for n in names]
    return []


def _names(text: str) -> list[str]:
    return [match.group(1) for match in _NAME_LIST_ITEM.finditer(text)]


def _qualify(name: str, default_database: str) -> tuple[str, str]:
    parts = [_unquote(part.strip()) for part in re.split(r"\.(?=(?:[^`]*`[^`]*`)*[^`]*$)", name)]
    if len(parts) == 2:
        return parts[0], parts[1]
    return default_database, parts[0]


def _unquote(name: str) -> str:
    if name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name
