"""What ``schema.change.behavior: evolve`` does to a mirror's columns, from the changelog's
schema history (``tidemark.contracts.schema_history``): a pure decision, no Spark.

The changelog keeps every column it ever had (its history must stay readable), so the mirror
cannot learn from the changelog's columns that the source dropped or renamed one. The schema
history can: each source table's latest version lists the columns it has now, and a version made
by ``ALTER TABLE ... RENAME COLUMN`` (or ``CHANGE``) records which new column is an old one.

- A changelog column that no source table has any more is *dropped* from the mirror (key
  columns excepted: the merge needs them).
- A renamed column's values sit under its old name in the rows written before the rename: a
  *lineage* says, per source table, below which schema version to read which name, and the
  mirror's column is renamed in place (Iceberg keeps its values) unless the old name is still
  live in another shard.

Whatever the behavior: a column added with a constant ``DEFAULT`` holds that value, at the
source, in every row that existed before the ``ALTER``, though no row event says so. Rows of
the changelog from before it (schema version below the adding one) read the default, and the
mirror's rows from before it are filled once (``AddedDefault``). Defaults computed per row
(``CURRENT_TIMESTAMP``, ``UUID()``) and those of time, binary, BIT and JSON columns are not
filled: those rows keep NULL until they change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tidemark.contracts.schema_history import PROPERTY_PREFIX, SchemaVersion, read_versions
from tidemark.contracts.source_tables import SourceColumn

#: a mirror property per column whose default its rows from before the column were given
FILLED_PROPERTY = "tidemark.default-filled."


@dataclass(frozen=True)
class EarlierName:
    """Rows of ``table_id`` whose schema version is below ``below_version`` hold the column's
    value under ``name``."""

    table_id: str
    below_version: int
    name: str


@dataclass(frozen=True)
class Lineage:
    column: str
    #: oldest first: a row takes the first entry its table and version match
    earlier: tuple[EarlierName, ...]


@dataclass(frozen=True)
class AddedDefault:
    """Rows of ``table_id`` whose schema version is below ``below_version`` hold ``value``
    (text to cast to the column's type) in ``column``: it was added with that default."""

    table_id: str
    below_version: int
    column: str
    value: str


@dataclass(frozen=True)
class MirrorColumns:
    #: lower-cased names of changelog columns no source table has any more
    dropped: frozenset[str] = frozenset()
    #: renamed columns, and where their earlier values are
    lineages: tuple[Lineage, ...] = ()
    defaults: tuple[AddedDefault, ...] = ()

    def renames(self, wanted: Iterable[str], mirror: Iterable[str]) -> dict[str, str]:
        """old -> new for each column of ``mirror`` to rename in place: a renamed column the
        mirror lacks takes the most recent earlier name the mirror has (it may have skipped
        versions between merges), unless that name is still ``wanted`` (another shard)."""
        wanted_names = {name.lower() for name in wanted}
        have = {name.lower(): name for name in mirror}
        renames = {}
        for lineage in self.lineages:
            if lineage.column.lower() in have:
                continue
            for earlier in reversed(lineage.earlier):  # the most recent earlier name first
                name = have.get(earlier.name.lower())
                if name is not None and name.lower() not in wanted_names:
                    renames[name] = lineage.column
                    break
        return renames


def mirror_columns(properties: Mapping[str, str], key: Sequence[str]) -> MirrorColumns:
    """The drops and renames the changelog whose table properties are ``properties`` asks of
    a mirror keyed by ``key``."""
    histories = {
        name[len(PROPERTY_PREFIX) :]: read_versions(properties, name[len(PROPERTY_PREFIX) :])
        for name in properties
        if name.startswith(PROPERTY_PREFIX)
    }
    histories = {table_id: versions for table_id, versions in histories.items() if versions}
    if not histories:
        return MirrorColumns()
    live = {
        column.name.lower()
        for versions in histories.values()
        for column in versions[-1].table.columns
    }
    ever = {
        column.name.lower()
        for versions in histories.values()
        for version in versions
        for column in version.table.columns
    }
    keys = {column.lower() for column in key}
    lineages: dict[str, list[EarlierName]] = {}
    defaults: list[AddedDefault] = []
    for table_id, versions in sorted(histories.items()):
        for column in versions[-1].table.columns:
            earlier = _earlier_names(table_id, versions, column.name)
            if earlier:
                lineages.setdefault(column.name, []).extend(earlier)
        defaults += _added_defaults(table_id, versions)
    return MirrorColumns(
        dropped=frozenset(ever - live - keys),
        lineages=tuple(
            Lineage(column, tuple(sorted(earlier, key=lambda e: e.below_version)))
            for column, earlier in sorted(lineages.items())
        ),
        defaults=tuple(defaults),
    )


#: the types whose constant defaults are filled: text casts to them exactly
_FILLED_TYPES = frozenset(
    (
        "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "float",
        "double", "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set",
        "date", "year",
    )
)  # fmt: skip
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def default_value(column: SourceColumn) -> str | None:
    """The constant the server fills existing rows with when ``column`` is added, as text;
    None for no default, NULL, an expression, or a type not filled."""
    raw = column.default
    if raw is None or column.data_type not in _FILLED_TYPES:
        return None
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'").replace("\\\\", "\\")
    return raw if _NUMBER.fullmatch(raw) else None


def _added_defaults(table_id: str, versions: list[SchemaVersion]) -> list[AddedDefault]:
    found = []
    for before, after in zip(versions, versions[1:], strict=False):
        had = {column.name.lower() for column in before.table.columns}
        renamed = {new.lower() for new, _ in after.renamed_from}
        for column in after.table.columns:
            value = default_value(column)
            if column.name.lower() in had or column.name.lower() in renamed or value is None:
                continue
            found.append(AddedDefault(table_id, after.version, column.name, value))
    return found


def _earlier_names(table_id: str, versions: list[SchemaVersion], column: str) -> list[EarlierName]:
    """Walking back through the versions: each rename that led to ``column``'s name."""
    name, found = column, []
    for version in reversed(versions):
        renamed_from = {new.lower(): old for new, old in version.renamed_from}
        old = renamed_from.get(name.lower())
        if old is not None:
            found.append(EarlierName(table_id, version.version, old))
            name = old
    return found
