"""Which tables a statement from the binlog changes the shape of, and online schema changes.

Column changes are followed from the row images themselves (``ingest.schema.tracker``); these
statements tell ingest which tables to watch, and which were created, dropped or swapped.

gh-ost and pt-online-schema-change copy a table into a helper (``_t_gho``, ``_t_new``) that has
the new structure, then swap it in with one ``RENAME TABLE t TO _t_del, _t_gho TO t`` (pt-osc:
``_t_old``, ``_t_new``). ``online_swap`` recognises that cut-over.
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


_HELPER = re.compile(r"_(?P<base>.+)_(?P<kind>gho|ghc|del|new|old)")
#: helper suffixes that hold the new structure and are renamed to the table at the cut-over
_SWAPPED_IN = ("gho", "new")


def online_ddl_base(table: str) -> str | None:
    """The table a gh-ost or pt-osc helper table belongs to (``_orders_gho`` -> ``orders``)."""
    match = _HELPER.fullmatch(table)
    return match.group("base") if match else None


def renamed_pairs(statement: str, default_database: str) -> list[tuple[ChangedTable, ChangedTable]]:
    """(from, to) of each rename in a RENAME TABLE statement; empty for other statements."""
    text = _COMMENTS.sub(" ", statement).strip()
    rename = _RENAME.match(text)
    if not rename:
        return []
    pairs = []
    for pair in rename.group(1).split(","):
        names = _names(re.sub(r"\s+TO\s+", ",", pair, flags=re.IGNORECASE))
        if len(names) == 2:
            old, new = (_qualify(name, default_database) for name in names)
            pairs.append(
                (ChangedTable(TableChange.RENAME, *old), ChangedTable(TableChange.RENAME, *new))
            )
    return pairs


def online_swap(statement: str, default_database: str) -> ChangedTable | None:
    """The table an online schema change's cut-over swaps a new structure into, or None."""
    for old, new in renamed_pairs(statement, default_database):
        match = _HELPER.fullmatch(old.table)
        if match and match.group("kind") in _SWAPPED_IN and match.group("base") == new.table:
            return ChangedTable(TableChange.ALTER, new.database, new.table)
    return None


_ALTER_BODY = re.compile(
    rf"^\s*ALTER\s+(?:ONLINE\s+|IGNORE\s+)*TABLE(?:\s+IF\s+EXISTS)?\s+{_QUALIFIED}\s+(?P<body>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_RENAME_COLUMN = re.compile(
    rf"^RENAME\s+COLUMN\s+(?:IF\s+EXISTS\s+)?(?P<old>{_NAME})\s+TO\s+(?P<new>{_NAME})\s*$",
    re.IGNORECASE,
)
_CHANGE_COLUMN = re.compile(
    rf"^CHANGE\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?(?P<old>{_NAME})\s+(?P<new>{_NAME})\s",
    re.IGNORECASE,
)


def renamed_columns(statement: str) -> dict[str, str]:
    """old name -> new name of each column an ALTER TABLE renames (``RENAME COLUMN a TO b``,
    ``CHANGE [COLUMN] a b <definition>``); empty for other statements. Row images show a rename
    only as a column gone and one new, so this is what tells the two apart."""
    text = _COMMENTS.sub(" ", statement).strip()
    alter = _ALTER_BODY.match(text)
    if not alter:
        return {}
    renamed = {}
    for clause in _top_level_clauses(alter.group("body")):
        match = _RENAME_COLUMN.match(clause) or _CHANGE_COLUMN.match(clause + " ")
        if match:
            old, new = _unquote(match.group("old")), _unquote(match.group("new"))
            if old.lower() != new.lower():
                renamed[old] = new
    return renamed


_TABLE_COMMENT = re.compile(
    r"(?:^|\s)COMMENT\s*(?:=\s*)?'((?:[^'\\]|''|\\.)*)'", re.IGNORECASE | re.DOTALL
)
#: clauses of an ALTER TABLE that change columns or indexes: a COMMENT in them is theirs
_COLUMN_CLAUSES = frozenset(("ADD", "MODIFY", "CHANGE", "ALTER", "DROP", "RENAME", "CONVERT"))


def table_comment(statement: str) -> str | None:
    """The comment an ALTER TABLE gives the table (``COMMENT = 'text'``, a table option, not a
    column's), or None."""
    text = _COMMENTS.sub(" ", statement).strip()
    alter = _ALTER_BODY.match(text)
    if not alter:
        return None
    for clause in _top_level_clauses(alter.group("body")):
        if clause.split(None, 1)[0].upper() in _COLUMN_CLAUSES:
            continue
        match = _TABLE_COMMENT.search(clause)
        if match:
            return re.sub(
                r"''|\\(.)", lambda m: "'" if m.group(0) == "''" else m.group(1), match.group(1)
            )
    return None


def _top_level_clauses(body: str) -> list[str]:
    """The comma-separated clauses of an ALTER TABLE, commas inside parentheses, quotes and
    backticks left alone (``DECIMAL(10, 2)``, ``DEFAULT 'a,b'``)."""
    clauses, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(body):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            clauses.append(body[start:index].strip())
            start = index + 1
    clauses.append(body[start:].strip())
    return [clause for clause in clauses if clause]
