"""What a statement from the binlog (DDL, mostly) does to ingest: stop before it, or go on.

Rows are decoded with the structure their table has when they are read, so a statement that
changes an onboarded table is either followed (the schema stage records the new structure,
``StructureChanges``) or stops ingest before it, saying why and what to do. Rules:

- The cut-over of an online schema change (gh-ost, pt-osc) of an onboarded table is followed
  like an ALTER when ``scan.parse.online.schema.changes.enabled``, else it stops.
- RENAME TABLE: an onboarded table renamed out of the patterns leaves like a dropped one; a name
  the patterns select whose rows were never read under it stops for a bootstrap.
- CREATE TABLE of a new table the patterns select onboards it, or stops for a restart that does.
- ALTER, DROP and TRUNCATE of an onboarded table are the follower's to accept, stop on, or (a
  truncate) to have marked in the changelog.
- Statements on tables that are not onboarded are none of ingest's business.

``StatementPolicy.decide`` makes the call; the assembler (``ingest.stream.assembler``) applies
the ``Decision`` to its rows. Statements are rare: nothing here runs per row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ingest.binlog.events import StatementExecuted
from ingest.errors import SchemaChangeStopError
from ingest.schema.ddl import (
    ChangedTable,
    TableChange,
    changed_tables,
    online_ddl_base,
    online_swap,
    renamed_pairs,
)
from ingest.schema.structure_changes import StructureChanges, Truncation

logger = logging.getLogger(__name__)

CANNOT_FOLLOW = (
    "Tidemark cannot follow this change yet: re-bootstrap the table (drop its changelog table, "
    "start with scan.startup.mode: initial), or remove it from 'tables'"
)
RESTART_TO_ONBOARD = (
    "Start ingest again: it onboards the table and reads it from this point, losing nothing"
)


@dataclass(frozen=True)
class Stop:
    """Ingest stops before the statement: what it did, and what the user should do."""

    reason: str
    fix: str

    def error(self, event: StatementExecuted) -> SchemaChangeStopError:
        return SchemaChangeStopError(
            f"{self.reason} at {event.position}: {event.statement.strip()[:300]!r}. Ingest "
            f"stopped before it, with everything earlier committed. {self.fix}"
        )


@dataclass(frozen=True)
class TruncatedTable:
    """An onboarded table the statement emptied, whose sink takes a truncate marker."""

    sink: str
    database: str
    table: str


@dataclass(frozen=True)
class Proceed:
    """Reading goes on: the statement was followed, or is none of ingest's business."""

    #: the tables to mark as truncated, in the statement's order
    truncated: tuple[TruncatedTable, ...] = ()


PROCEED = Proceed()

Decision = Stop | Proceed


class StopOnEveryChange:
    """The ``StructureChanges`` of an assembler that follows none: every ALTER, DROP and
    TRUNCATE of an onboarded table stops, and no new table is onboarded while it runs."""

    def altered(self, database: str, table: str, statement: str) -> None:
        raise SchemaChangeStopError(f"the binlog changes the structure of {database}.{table}")

    def dropped(self, database: str, table: str) -> bool:
        return True

    def truncated(self, database: str, table: str) -> Truncation:
        return Truncation.STOP

    def created(self, database: str, table: str) -> bool:
        return False


@dataclass(frozen=True)
class StatementPolicy:
    """Decides what a statement does. Tells ``structure`` about the changes it follows (that
    may record a new structure or onboard a table); changes nothing else."""

    #: the sink an onboarded table's rows go to (asked anew each time: tables join while
    #: ingest runs); None for a table that is not onboarded
    sink_of: Callable[[str, str], str | None]
    #: whether the pipeline's 'tables' patterns select a table
    captures: Callable[[str, str], bool]
    structure: StructureChanges
    #: scan.parse.online.schema.changes.enabled
    follow_online_schema_changes: bool = False

    def decide(self, event: StatementExecuted) -> Decision:
        swap = online_swap(event.statement, event.database)
        if swap is not None and self.sink_of(swap.database, swap.table) is not None:
            return self._swapped_in(swap)
        pairs = renamed_pairs(event.statement, event.database)
        if pairs:
            return self._renamed(pairs)
        return self._changed(changed_tables(event.statement, event.database), event.statement)

    def _swapped_in(self, swap: ChangedTable) -> Decision:
        """The cut-over of gh-ost or pt-osc on an onboarded table: followed like an ALTER when
        scan.parse.online.schema.changes.enabled, else a stop."""
        name = f"{swap.database}.{swap.table}"
        if not self.follow_online_schema_changes:
            return Stop(
                f"an online schema change (gh-ost or pt-osc) swapped a new {name} in",
                "set scan.parse.online.schema.changes.enabled: true to follow such changes",
            )
        logger.info("Online schema change of %s: following its new structure", name)
        try:
            # the helper table was altered, under its own name: the swap itself renames nothing
            self.structure.altered(swap.database, swap.table, "")
        except SchemaChangeStopError as error:
            return Stop(str(error), CANNOT_FOLLOW)
        return PROCEED

    def _renamed(self, pairs: list[tuple[ChangedTable, ChangedTable]]) -> Decision:
        """RENAME TABLE (not an online schema change's cut-over). Flink CDC has no rename
        event: the old name leaves the pipeline like a dropped table, and a new name the
        patterns select is a table whose rows were never read under it: a restart bootstraps
        it."""
        for old, new in pairs:
            old_name = f"{old.database}.{old.table}"
            new_name = f"{new.database}.{new.table}"
            onboarded = self.sink_of(old.database, old.table) is not None
            if self.captures(new.database, new.table) and online_ddl_base(new.table) is None:
                where = f"onboarded table {old_name}" if onboarded else old_name
                fix = (
                    "Start ingest again with scan.newly-added-table.enabled: true: it "
                    f"bootstraps {new_name}, losing nothing"
                )
                if onboarded:
                    fix += f"; the changelog of {old_name} keeps its history"
                return Stop(
                    f"{where} was renamed to {new_name}, which 'tables' selects: its rows were "
                    "never read under that name",
                    fix,
                )
            if not onboarded:
                continue
            if self.structure.dropped(old.database, old.table):
                return Stop(
                    f"onboarded table {old_name} was renamed to {new_name}, which 'tables' does "
                    "not select: it leaves the pipeline",
                    CANNOT_FOLLOW,
                )
            logger.warning(
                "%s was renamed to %s, which 'tables' does not select: it leaves the pipeline "
                "like a dropped table; its changelog table keeps what it holds",
                old_name,
                new_name,
            )
        return PROCEED

    def _changed(self, changes: list[ChangedTable], statement: str) -> Decision:
        """CREATE, ALTER, DROP, TRUNCATE (and a RENAME ``renamed_pairs`` could not pair) of
        each table in ``changes``: the first stop wins, and then nothing is marked."""
        truncated: list[TruncatedTable] = []
        for change in changes:
            name = f"{change.database}.{change.table}"
            sink = self.sink_of(change.database, change.table)
            if change.change is TableChange.CREATE:
                # A known table's creation is history the current schema already covers (rows
                # are checked against it); a new table the patterns select must be onboarded.
                if sink is not None or not self.captures(change.database, change.table):
                    continue
                base = online_ddl_base(change.table)
                if base is not None and self.sink_of(change.database, base) is not None:
                    continue  # a helper of an online schema change: its rows are not ours
                try:
                    onboarded_now = self.structure.created(change.database, change.table)
                except SchemaChangeStopError as error:
                    return Stop(str(error), "fix the table, or leave it out with tables.exclude")
                if not onboarded_now:
                    return Stop(f"new table {name} matches 'tables'", RESTART_TO_ONBOARD)
            elif sink is None:
                continue
            elif change.change is TableChange.ALTER:
                try:
                    self.structure.altered(change.database, change.table, statement)
                except SchemaChangeStopError as error:
                    return Stop(str(error), CANNOT_FOLLOW)
            elif change.change is TableChange.DROP:
                if self.structure.dropped(change.database, change.table):
                    return Stop(f"onboarded table {name} was dropped", CANNOT_FOLLOW)
                logger.warning("%s was dropped; its changelog table keeps what it holds", name)
            elif change.change is TableChange.TRUNCATE:
                truncation = self.structure.truncated(change.database, change.table)
                if truncation is Truncation.STOP:
                    return Stop(
                        f"onboarded table {name} was truncated and "
                        "pipeline.schema.change.behavior is exception",
                        "Set the behavior to try_evolve (or lenient with the sink's "
                        "exclude.schema.changes listed) to empty the table's mirror rows, or "
                        f"re-bootstrap {name}",
                    )
                if truncation is Truncation.MARK:
                    truncated.append(TruncatedTable(sink, change.database, change.table))
                else:
                    logger.warning(
                        "%s was truncated; the lake keeps its rows because the sink leaves "
                        "truncate.table out (lenient does unless the sink lists "
                        "exclude.schema.changes): use try_evolve, or list the sink's "
                        "exclusions, to follow truncations",
                        name,
                    )
            else:
                return Stop(f"onboarded table {name} was renamed", CANNOT_FOLLOW)
        return Proceed(tuple(truncated))
