"""Follows the structure of the source tables feeding one changelog table.

Each source table's rows are converted with the structure they were written with
(``tidemark.contracts.schema_history``). A row image whose columns no known version has means the
table changed: the tracker reads the table's structure from ``information_schema`` and, if it has
exactly the row's columns, decides with ``ingest.schema.evolution`` what the change does to the
changelog table, applies it (columns and history in one Iceberg commit) and goes on. If the
server's table has other columns still (it changed again since), ingest stops with the fix:
nothing is decoded with a guessed structure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from ingest.errors import SchemaChangeStopError
from ingest.schema.conversion import Conversion
from ingest.schema.ddl import renamed_columns, table_comment
from ingest.schema.evolution import SchemaDiff, diff, plan_evolution
from ingest.schema.source_tables import read_source_tables
from ingest.schema.structure_changes import Truncation
from ingest.schema.types import arrow_schema, values_converter
from tidemark.config.model import SchemaChangeBehavior, SchemaChangeType
from tidemark.contracts.schema_history import (
    PROPERTY_PREFIX,
    SchemaVersion,
    read_versions,
    versions_property,
)
from tidemark.contracts.source_tables import SourceTable
from tidemark.sinks.protocols import ChangelogWriter
from tidemark.source import SourceConnection

logger = logging.getLogger(__name__)
Columns = tuple[str, ...]


#: where a schema version met at start-up was first seen
STARTED = "start-up"


@dataclass(frozen=True)
class TrackerOptions:
    behavior: SchemaChangeBehavior = SchemaChangeBehavior.LENIENT
    allowed: Collection[SchemaChangeType] = tuple(SchemaChangeType)
    server_time_zone: str | None = None
    tinyint1_as_boolean: bool = True


class SchemaTracker:
    """One per changelog table; ``conversion(source table)`` is what the assembler calls."""

    def __init__(
        self,
        source: SourceConnection,
        changelog: ChangelogWriter,
        options: TrackerOptions,
        locate: Callable[[], str] = lambda: STARTED,
    ) -> None:
        self._source = source
        self._changelog = changelog
        self._options = options
        #: where the stream is, to record where a new structure took effect
        self.locate = locate
        self._versions: dict[str, list[SchemaVersion]] = {}
        #: the structure the latest row event's TABLE_MAP described, per source table
        self._mapped: dict[str, Callable[[], SourceTable | None]] = {}
        #: tables altered since their last row: their next table map is compared by type
        self._retype_check: set[str] = set()
        self._conversions: dict[tuple[str, int, Columns], Conversion] = {}
        #: per table, the latest version's columns as row events name them and their
        #: conversion, while no type check is due (asked for every row event)
        self._current: dict[str, tuple[Columns, Conversion]] = {}
        #: columns renamed by ALTERs whose new structure has not been recorded yet, per table
        self._renames: dict[str, dict[str, str]] = {}

    def start(self, table: SourceTable, since: str) -> None:
        """Take the table's structure at start-up: the first version, or a change made while
        ingest was stopped."""
        versions = read_versions(self._changelog.properties, table.table_id)
        self._versions[table.table_id] = versions
        self._current.pop(table.table_id, None)
        if versions and versions[-1].table == table:
            return
        if not versions:
            self._check_legacy(table)
        self._record(table, since, started=True)

    def observer(self, table_id: str) -> Callable[[Callable[[], SourceTable | None]], None]:
        def observe(structure: Callable[[], SourceTable | None]) -> None:
            self._mapped[table_id] = structure

        return observe

    def conversion(self, table_id: str) -> Callable[[Columns], Conversion]:
        """How the images of a row event of ``table_id`` with the given columns are converted:
        with the structure they were written with."""

        def conversion_of(columns: Columns) -> Conversion:
            current = self._current.get(table_id)
            if current is not None and (current[0] is columns or current[0] == columns):
                return current[1]
            version = self._version_of(table_id, frozenset(columns))
            conversion = self._conversion_with(table_id, version, columns)
            if version is self._versions[table_id][-1] and table_id not in self._retype_check:
                self._current[table_id] = (columns, conversion)
            return conversion

        return conversion_of

    def latest(self, table_id: str) -> SchemaVersion:
        return self._versions[table_id][-1]

    def altered(self, table_id: str, statement: str) -> None:
        """An ALTER TABLE went by. A change of column names shows in the next row images; a
        change of types alone does not, so the next row's table map is compared by type.
        The statement tells which new column is an old one renamed, and a new table comment,
        which the changelog takes (``alter.table.comment``; the next merge gives it to the
        mirror)."""
        self._retype_check.add(table_id)
        self._current.pop(table_id, None)
        renamed = renamed_columns(statement)
        if renamed and not self._rename_recorded(table_id, renamed):
            self._renames.setdefault(table_id, {}).update(renamed)
        comment = table_comment(statement)
        if comment is not None:
            self._comment(table_id, comment)

    def _comment(self, table_id: str, comment: str) -> None:
        behavior = self._options.behavior
        if behavior is SchemaChangeBehavior.EXCEPTION:
            raise SchemaChangeStopError(
                f"{table_id} changed its comment and pipeline.schema.change.behavior is "
                "exception: set it to lenient to follow the change"
            )
        if (
            behavior is SchemaChangeBehavior.IGNORE
            or SchemaChangeType.ALTER_TABLE_COMMENT not in self._options.allowed
        ):
            return
        if self._changelog.properties.get("comment") != comment:
            self._changelog.evolve((), (), {"comment": comment})
            logger.info(
                "%s: %s now has the comment %r", table_id, self._changelog.identifier, comment
            )

    def _rename_recorded(self, table_id: str, renamed: Mapping[str, str]) -> bool:
        """When ingest started after the ALTER, its structure was recorded at start-up, before
        the statement was read: the renames are added to that version. False if the latest
        version is not the one the statement made (its rows come next)."""
        versions = self._versions.get(table_id, [])
        if len(versions) < 2 or versions[-1].renamed_from:
            return False
        before, after = (
            arrow_schema(v.table, tinyint1_as_boolean=self._options.tinyint1_as_boolean)
            for v in versions[-2:]
        )
        found = _renamed_from(diff(before, after), renamed)
        if not found:
            return False
        versions[-1] = replace(versions[-1], renamed_from=found)
        self._current.pop(table_id, None)
        self._changelog.evolve(
            (), (), versions_property(table_id, versions), self._renamed_in_place(found)
        )
        logger.info("%s: version %d renamed %s", table_id, versions[-1].version, found)
        return True

    # --- internals -----------------------------------------------------------------------

    def _follows(self, change: SchemaChangeType) -> bool:
        """Whether a sink that is the mirror (Paimon) applies ``change`` (a rename, a drop) in
        place: under ``evolve`` and ``try_evolve`` with the change taken by the sink, as a
        window merge does to an Iceberg mirror (Flink CDC's meanings: ``lenient`` keeps the
        old column)."""
        return (
            self._options.behavior in (SchemaChangeBehavior.EVOLVE, SchemaChangeBehavior.TRY_EVOLVE)
            and change in self._options.allowed
        )

    def _renamed_in_place(self, renamed_from: Sequence[tuple[str, str]]) -> dict[str, str]:
        """old -> new of the renames a sink that is the mirror applies in place."""
        if not self._follows(SchemaChangeType.RENAME_COLUMN):
            return {}
        return {old: new for new, old in renamed_from}

    def _dropped_in_place(self, table_id: str, version: SchemaVersion) -> tuple[str, ...]:
        """The columns ``version`` of ``table_id`` dropped that a sink that is the mirror
        drops in place: those no other source table of the sink still has (a shard that
        keeps a column keeps it in the table).

        Only for a version that is the server's structure now, met in the stream: one found at
        start-up may hide a rename its ALTER, read next, would tell (a drop would lose the
        values), and other shards may not be started yet; one taken from a table map is a
        structure between two ALTERs, whose later columns are still to come. A column dropped
        while ingest was stopped therefore stays."""
        versions = self._versions[table_id]
        if not versions or not self._follows(SchemaChangeType.DROP_COLUMN):
            return ()
        before = {column.name.lower(): column.name for column in versions[-1].table.columns}
        kept = {column.name.lower() for column in version.table.columns}
        kept |= {old.lower() for _, old in version.renamed_from}
        for other, history in self._versions.items():
            if other != table_id and history:
                kept |= {column.name.lower() for column in history[-1].table.columns}
        return tuple(name for lowered, name in before.items() if lowered not in kept)

    def _version_of(self, table_id: str, names: frozenset[str]) -> SchemaVersion:
        versions = self._versions[table_id]
        latest = versions[-1]
        if names == latest.column_names:
            if table_id in self._retype_check:
                return self._check_types(table_id, latest)
            return latest
        for version in reversed(versions):
            if version.column_names == names:
                return version  # a row from before a change, read again after a restart
        return self._follow_change(table_id, names)

    def _check_types(self, table_id: str, latest: SchemaVersion) -> SchemaVersion:
        self._retype_check.discard(table_id)
        mapped = self._mapped_structure(table_id)
        if mapped is None:
            return latest
        structure = _carried_over(mapped, latest.table)
        if structure.columns == latest.table.columns:
            return latest
        return self._record(structure, self.locate(), started=False)

    def _mapped_structure(self, table_id: str) -> SourceTable | None:
        describe = self._mapped.get(table_id)
        return describe() if describe is not None else None

    def _read(self, table_id: str) -> SourceTable | None:
        database, name = table_id.split(".", 1)
        with self._source.connect() as conn:
            return read_source_tables(conn, [(database, name)]).get((database, name))

    def _follow_change(self, table_id: str, names: frozenset[str]) -> SchemaVersion:
        now = self._read(table_id)
        if now is not None and frozenset(c.name for c in now.columns) == names:
            return self._record(now, self.locate(), started=False, current=True)
        mapped = self._mapped_structure(table_id)
        if mapped is not None and frozenset(c.name for c in mapped.columns) == names:
            # The server's table changed again since: the row's own table map describes it.
            logger.warning(
                "%s: the rows at %s were written with columns the server's table no longer "
                "has; their structure is taken from the binlog's table map (see "
                "ingest/binlog/table_map.py for what it cannot tell)",
                table_id,
                self.locate(),
            )
            return self._record(
                _carried_over(mapped, self.latest(table_id).table), self.locate(), started=False
            )
        server = "no such table" if now is None else ", ".join(c.name for c in now.columns)
        raise SchemaChangeStopError(
            f"rows of {table_id} now have the columns {', '.join(sorted(names))}, but the "
            f"server's table has {server}, and the binlog has no table map for them "
            "(binlog_row_metadata must be FULL). Ingest stopped with everything before them "
            "committed; re-bootstrap the table (drop its changelog table, start with "
            "scan.startup.mode: initial)"
        )

    def _record(
        self, table: SourceTable, since: str, *, started: bool, current: bool = False
    ) -> SchemaVersion:
        """Record ``table`` as the source table's next structure, evolving the sink table;
        ``current``: it is the server's structure now, read after the rows that show it (a
        structure found at start-up, or taken from a table map, is not: see
        ``_dropped_in_place``)."""
        versions = self._versions[table.table_id]
        options = self._options
        new = arrow_schema(table, tinyint1_as_boolean=options.tinyint1_as_boolean)
        if versions:
            old = arrow_schema(versions[-1].table, tinyint1_as_boolean=options.tinyint1_as_boolean)
        else:
            old = new
        change = diff(old, new)
        plan = plan_evolution(
            table.table_id,
            change,
            options.behavior,
            options.allowed,
            self._changelog.data_schema(),
        )
        if plan.refusal is not None:
            raise SchemaChangeStopError(plan.refusal)
        version = SchemaVersion(
            len(versions) + 1,
            since,
            table,
            _renamed_from(change, self._renames.pop(table.table_id, {})),
        )
        self._changelog.evolve(
            plan.add,
            plan.widen,
            versions_property(table.table_id, [*versions, version]),
            self._renamed_in_place(version.renamed_from),
            self._dropped_in_place(table.table_id, version) if current else (),
        )
        versions.append(version)
        self._current.pop(table.table_id, None)
        if not change.empty:
            logger.warning(
                "%s changed%s: %s; %s%s",
                table.table_id,
                " while ingest was stopped" if started else "",
                change.describe(),
                f"{self._changelog.identifier} now has version {version.version}",
                "".join(f"; {note}" for note in plan.ignored),
            )
        return version

    def _conversion_with(
        self, table_id: str, version: SchemaVersion, columns: Columns
    ) -> Conversion:
        key = (table_id, version.version, columns)
        conversion = self._conversions.get(key)
        if conversion is None:
            convert = values_converter(
                version.table,
                columns,
                self._options.server_time_zone,
                tinyint1_as_boolean=self._options.tinyint1_as_boolean,
            )
            conversion = self._conversions[key] = Conversion(convert, version.version)
        return conversion

    def _check_legacy(self, table: SourceTable) -> None:
        """A changelog written before schema history: the table's columns must still be there."""
        history = any(key.startswith(PROPERTY_PREFIX) for key in self._changelog.properties)
        if history or not self._changelog.has_commits():
            return
        data = self._changelog.data_schema()
        expected = arrow_schema(table, tinyint1_as_boolean=self._options.tinyint1_as_boolean)
        if not {f.name.lower() for f in expected} <= {f.name.lower() for f in data}:
            raise SchemaChangeStopError(
                f"the columns of {self._changelog.identifier} ({', '.join(data.names)}) are "
                f"not those {table.table_id} has now ({', '.join(expected.names)}), and the "
                "changelog has no schema history to tell when that changed: re-bootstrap the "
                "table (drop the changelog table and start with scan.startup.mode: initial)"
            )


class StructureFollower:
    """The assembler's ``StructureChanges``: routes statements to the right tracker."""

    def __init__(
        self,
        trackers: dict[str, SchemaTracker],
        behavior: SchemaChangeBehavior,
        allowed: Collection[SchemaChangeType] = tuple(SchemaChangeType),
    ) -> None:
        self._trackers = trackers
        self._behavior = behavior
        self._allowed = allowed

    def altered(self, database: str, table: str, statement: str) -> None:
        tracker = self._trackers.get(f"{database}.{table}")
        if tracker is not None:
            tracker.altered(f"{database}.{table}", statement)

    def dropped(self, database: str, table: str) -> bool:
        return self._behavior is SchemaChangeBehavior.EXCEPTION

    def truncated(self, database: str, table: str) -> Truncation:
        """Flink CDC's meanings: ``exception`` stops, ``ignore`` and a sink that leaves
        ``truncate.table`` out keep the rows, otherwise the truncation is applied."""
        if self._behavior is SchemaChangeBehavior.EXCEPTION:
            return Truncation.STOP
        if (
            self._behavior is SchemaChangeBehavior.IGNORE
            or SchemaChangeType.TRUNCATE_TABLE not in self._allowed
        ):
            return Truncation.KEEP_ROWS
        return Truncation.MARK


def _renamed_from(change: SchemaDiff, renamed: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(new, old) of each column ``renamed`` (old -> new) whose rename the diff shows: the old
    name gone, the new one added."""
    dropped = {name.lower(): name for name in change.dropped}
    added = {field.name.lower(): field.name for field in change.added}
    return tuple(
        (added[new.lower()], dropped[old.lower()])
        for old, new in renamed.items()
        if old.lower() in dropped and new.lower() in added
    )


def _carried_over(mapped: SourceTable, known: SourceTable) -> SourceTable:
    """The table map's structure, with what it cannot tell taken from the last known version
    for the columns whose binlog type did not change (display widths, UUID, NOT NULL)."""
    columns = []
    for column in mapped.columns:
        try:
            before = known.column(column.name)
        except KeyError:
            columns.append(column)
            continue
        same = (before.data_type, before.unsigned) == (column.data_type, column.unsigned) or (
            before.data_type in ("uuid", "inet4", "inet6") and column.data_type == "binary"
        )
        columns.append(replace(before, ordinal=column.ordinal) if same else column)
    return replace(mapped, columns=tuple(columns), unique_keys=known.unique_keys)
