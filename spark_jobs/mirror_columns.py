"""What ``schema.change.behavior: evolve`` does to a mirror's columns, from the changelog's
schema history (``ingest.schema_history``): a pure decision, no Spark.

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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ingest.schema_history import PROPERTY_PREFIX, SchemaVersion, read_versions


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
class MirrorColumns:
    #: lower-cased names of changelog columns no source table has any more
    dropped: frozenset[str] = frozenset()
    #: renamed columns, and where their earlier values are
    lineages: tuple[Lineage, ...] = ()

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
    for table_id, versions in sorted(histories.items()):
        for column in versions[-1].table.columns:
            earlier = _earlier_names(table_id, versions, column.name)
            if earlier:
                lineages.setdefault(column.name, []).extend(earlier)
    return MirrorColumns(
        dropped=frozenset(ever - live - keys),
        lineages=tuple(
            Lineage(column, tuple(sorted(earlier, key=lambda e: e.below_version)))
            for column, earlier in sorted(lineages.items())
        ),
    )


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
