"""Turns binlog events into changelog rows and per-table progress, exactly once.

Pure logic, no I/O: the runner feeds events in and takes ``Flush``es out to commit. Rules:

- Rows are buffered per transaction and reach a flush only when the transaction has committed,
  so a flush's position is always a transaction boundary
  (docs/architecture.md#data-and-position-in-one-commit). A transaction larger
  than ``max_transaction_rows`` is flushed in parts, each recording how many of its rows the
  table already holds (``partial_rows``), and the position stays at the transaction's start.
- On resume from the smallest position of all tables, each table skips what its own progress
  says it already has: whole transactions before its position, and the first ``partial_rows``
  rows of the transaction starting at it.
- A table whose bootstrap read its rows at positions up to ``hold_until`` keeps its watermark
  until the stream passes that position (``TableProgress.advanced``): before it, the table mixes
  snapshot rows from later with changes from earlier.
- The watermark (epoch ms) after a transaction that committed in second S is ``S*1000 - 1``:
  binlog timestamps are whole seconds taken at statement start, and every transaction not yet
  read commits later than the last one read, so no later transaction can have committed before
  second S. A caught-up reader learns more from the server's clock (``observe_caught_up``).
  Watermarks only ever grow.
- A row with a value the lake cannot hold goes, with its payload and the reason, to the sink's
  error table (``ingest.changelog.error_table``), a sink of its own with its own progress.
- What a statement (DDL) does is ``ingest.stream.statements``' decision; the assembler applies
  it: a stop before the statement, everything earlier committed, or truncate markers and the
  statement as a transaction of its own.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ingest.binlog.events import (
    BinlogEvent,
    Image,
    RowsChanged,
    StatementExecuted,
    TransactionCommitted,
    TransactionStarted,
)
from ingest.changelog.error_table import ERROR_COLUMNS, error_values, errors_sink
from ingest.errors import NulledValuesError, SchemaChangeStopError, UnconvertibleValueError
from ingest.schema.conversion import AS_READ, SCHEMA_VERSION, Conversion
from ingest.schema.structure_changes import StructureChanges
from ingest.stream.change_rows import ChangeRows, Run
from ingest.stream.statements import StatementPolicy, Stop, StopOnEveryChange, TruncatedTable
from tidemark.contracts.changelog import TRUNCATE_SCHEMA_VERSION, Operation
from tidemark.contracts.progress import TableProgress
from tidemark.contracts.source_tables import SourceTable
from tidemark.source import BinlogPosition

logger = logging.getLogger(__name__)

#: what each operation is in the changelog's operation column (an enum's .value is a lookup)
_OPERATION_VALUES = {operation: operation.value for operation in Operation}


@dataclass(frozen=True)
class Binding:
    """Where the rows of one physical source table go, and how they are converted."""

    sink: str
    key_columns: tuple[str, ...]
    #: the conversion of a row event's images, given the event's columns
    conversion: Callable[[tuple[str, ...]], Conversion] = lambda columns: AS_READ
    #: given, before each row event's rows are converted, how to describe the structure its
    #: TABLE_MAP declares (``RowsChanged.structure``)
    observe: Callable[[Callable[[], SourceTable | None]], None] | None = None


Router = Callable[[str, str], Binding | None]


@dataclass(frozen=True)
class LateChanges:
    """Late rows of one table since its last flush, and the span of their commit times."""

    rows: int
    first_commit_ms: int
    last_commit_ms: int

    def plus(self, rows: int, commit_ms: int) -> LateChanges:
        return LateChanges(
            self.rows + rows,
            min(self.first_commit_ms, commit_ms),
            max(self.last_commit_ms, commit_ms),
        )

    @property
    def commit_range(self) -> tuple[int, int] | None:
        return (self.first_commit_ms, self.last_commit_ms) if self.rows else None


NO_LATE_CHANGES = LateChanges(0, 0, 0)


@dataclass(frozen=True)
class TableFlush:
    sink: str
    changes: ChangeRows
    progress: TableProgress

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The rows as dicts, metadata columns included."""
        return self.changes.rows


@dataclass(frozen=True)
class Flush:
    tables: list[TableFlush]

    @property
    def row_count(self) -> int:
        return sum(len(table.changes) for table in self.tables)


class ChangeAssembler:
    def __init__(
        self,
        *,
        router: Router,
        captures: Callable[[str, str], bool],
        progress: Mapping[str, TableProgress],
        start: BinlogPosition,
        source: str,
        initial_watermark_ms: int,
        max_transaction_rows: int = 100_000,
        structure: StructureChanges | None = None,
        follow_online_schema_changes: bool = False,
        server_uuid: str | None = None,
    ) -> None:
        self._router = router
        #: MySQL's server_uuid of the server read, recorded with every position
        self._server_uuid = server_uuid
        self._statements = StatementPolicy(
            sink_of=self._sink_of,
            captures=captures,
            structure=structure or StopOnEveryChange(),
            follow_online_schema_changes=follow_online_schema_changes,
        )
        self._progress = dict(progress)
        # What each table held when reading (re)started: rows of the transactions before
        # these positions are skipped. Live progress moves on; this only on a re-read.
        self._hold_from(progress)
        self._source = source
        self._max_transaction_rows = max_transaction_rows
        self._boundary = start
        self._last_seen = start
        self._gtid: str | None = None
        # Tables can stand at different positions (their commits are not one transaction):
        # reading resumes at the earliest, so a table re-read from there must not be promised
        # the watermark of one that is ahead. Each table's own never goes back (``advanced``).
        self._watermark_ms = max(
            initial_watermark_ms, min((p.watermark_ms for p in progress.values()), default=0)
        )
        self._last_order = {sink: p.last_order for sink, p in progress.items()}
        self._pending: dict[str, ChangeRows] = {}
        #: rows in ``_pending``, kept as they come and go (the runner asks after every event)
        self._pending_count = 0
        #: per sink, late rows (``_count_late``) committed since its last flush
        self._late: dict[str, LateChanges] = {}
        #: per sink and column, values stored as NULL (``NulledValuesError``): of the
        #: in-flight transaction's rows, and of the rows pending a flush
        self._transaction_nulled: dict[str, Counter[str]] = {}
        self._nulled: dict[str, Counter[str]] = {}
        #: per sink, the watermark a watermark report promised it (``marked``)
        self._marked_ms: dict[str, int] = {}
        self._in_transaction = False
        self._transaction: dict[str, ChangeRows] = {}
        self._transaction_rows = 0
        # rows of the in-flight transaction each table already holds (committed parts or skipped)
        self._transaction_held: dict[str, int] = {}
        self._transaction_seen: dict[str, int] = {}
        self._stopped: SchemaChangeStopError | None = None
        #: where the key columns are among a row event's columns (``_key_positions``)
        self._keys: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[int, ...]] = {}

    # --- feeding -------------------------------------------------------------------------

    def on_event(self, event: BinlogEvent) -> Flush | None:
        """Take one event; returns a forced flush when a transaction outgrew the buffer."""
        if self._stopped is not None:
            raise self._stopped
        if event.position > self._last_seen:  # not max(): a call more for every event
            self._last_seen = event.position
        if type(event) is RowsChanged:  # the most frequent, by far
            return self._on_rows(event)
        if isinstance(event, TransactionStarted):
            self._begin(event.gtid)
        elif isinstance(event, TransactionCommitted):
            self._commit(event.position, event.event_time_ms)
        elif isinstance(event, StatementExecuted):
            self._on_statement(event)
        return None

    def observe_caught_up(self, server_position: BinlogPosition, server_time_ms: int) -> None:
        """The server's binlog ended at ``server_position`` at ``server_time_ms`` (read in that
        order: time first); if everything up to there has been read, nothing committed before
        that time is missing."""
        if not self._in_transaction and server_position <= self._last_seen:
            self._watermark_ms = max(self._watermark_ms, server_time_ms - 1)

    # --- taking --------------------------------------------------------------------------

    @property
    def pending_rows(self) -> int:
        return self._pending_count

    def known_tables(self) -> list[str]:
        """The sinks with a progress: what an idle round commits."""
        return list(self._progress)

    @property
    def watermark_ms(self) -> int:
        return self._watermark_ms

    @property
    def last_seen(self) -> BinlogPosition:
        """The position after the last event taken."""
        return self._last_seen

    @property
    def boundary(self) -> BinlogPosition:
        """The last transaction boundary: everything committed before it has been read."""
        return self._boundary

    @property
    def read_through(self) -> BinlogPosition:
        """How far the binlog has been read completely: past the boundary when the events
        after it (heartbeats, rotations) belong to no transaction."""
        return self._boundary if self._in_transaction else self._last_seen

    def flush(self, idle_tables: bool | Collection[str] = False) -> Flush:
        """Every table with rows of committed transactions; with ``idle_tables``, every other
        known table too, or those it names (empty commits move their watermark and position)."""
        sinks = set(self._pending)
        if idle_tables is True:
            sinks |= set(self._progress)
        elif idle_tables:
            sinks |= {sink for sink in idle_tables if sink in self._progress}
        tables = [self._table_flush(sink, self._take_pending(sink)) for sink in sorted(sinks)]
        self._pending_count = sum(len(rows) for rows in self._pending.values())
        return Flush(tables)

    def flush_only(self, sinks: Collection[str]) -> Flush:
        """The tables ``sinks`` alone, at the last boundary: their rows of committed
        transactions, or an empty commit for one without rows (a known table)."""
        tables = [
            self._table_flush(sink, self._take_pending(sink))
            for sink in sinks
            if sink in self._pending or sink in self._progress
        ]
        self._pending_count -= sum(len(table.changes) for table in tables)
        return Flush(tables)

    def pending_sinks(self) -> Iterator[str]:
        """The sinks with rows waiting for a flush, those whose oldest rows came first."""
        return iter(self._pending)

    def progress(self, sink: str) -> TableProgress | None:
        return self._progress.get(sink)

    @property
    def source(self) -> str:
        return self._source

    def complete_tables(self) -> dict[str, int]:
        """The sinks whose changelog has every change before the watermark now, with their
        last order: each sink with a progress, but for those with rows waiting for a flush, a
        transaction committed only in part, or a bootstrap's hold not yet passed. None before
        the watermark promises anything. A transaction being read commits after the
        watermark, and its rows will come after that last order."""
        if self._watermark_ms <= 0:
            return {}
        return {
            sink: progress.last_order
            for sink, progress in self._progress.items()
            if sink not in self._pending
            and not progress.partial_rows
            and (progress.hold_until is None or progress.hold_until <= self._boundary)
        }

    def marked(self, sinks: Collection[str], watermark_ms: int) -> None:
        """A watermark report promised ``sinks`` ``watermark_ms``: a change of theirs that
        committed before it is late (``_count_late``), as after a commit with it."""
        for sink in sinks:
            self._marked_ms[sink] = watermark_ms

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    def adopt(self, progress: Mapping[str, TableProgress]) -> BinlogPosition:
        """Tables bootstrapped while the others streamed join at a transaction boundary:
        reading goes back to the earliest of their positions (returned), skipping per table
        what each holds, as after a restart."""
        assert not self._in_transaction and not self._pending
        self._progress.update(progress)
        self._last_order.update({sink: p.last_order for sink, p in progress.items()})
        self._hold_from(self._progress)
        self._boundary = self._last_seen = min(
            [self._boundary, *(p.position for p in progress.values())]
        )
        # what the re-read reaches is complete to its own events' times, not to the stream's
        self._watermark_ms = min([self._watermark_ms, *(p.watermark_ms for p in progress.values())])
        return self._boundary

    def held_until(self) -> BinlogPosition | None:
        """The furthest bootstrap hold not yet passed: tables are consistent from there."""
        holds = [p.hold_until for p in self._progress.values() if p.hold_until is not None]
        return max(holds, default=None)

    def stop_error(self) -> SchemaChangeStopError | None:
        return self._stopped

    def abandon_transaction(self) -> None:
        """The stream broke mid-transaction: forget it; the reader resumes at the boundary."""
        # Parts already committed are in each table's partial_rows: re-reading the transaction
        # from the boundary skips exactly those.
        self._hold_from(self._progress)
        self._reset_transaction()
        self._last_seen = self._boundary

    # --- internals -----------------------------------------------------------------------

    def _begin(self, gtid: str | None) -> None:
        self._reset_transaction()
        self._in_transaction = True
        self._gtid = gtid

    def _on_rows(self, event: RowsChanged) -> Flush | None:
        binding = self._router(event.database, event.table)
        if binding is None:
            return None
        self._in_transaction = True
        sink = binding.sink
        if binding.observe is not None and event.structure is not None:
            binding.observe(event.structure)
        columns = event.columns
        conversion = binding.conversion(columns)
        changes = self._transaction.get(sink)
        if changes is None:
            changes = self._transaction[sink] = ChangeRows()
        position = event.position
        operation = event.operation
        run: Run = (
            columns,
            event.event_time_ms,
            f"{position.file}:{position.offset}",
            event.database,
            event.table,
            conversion.schema_version,
            _OPERATION_VALUES[operation],
        )
        # only an update can move a row to another key
        key = () if operation is not Operation.UPDATE else self._key_positions(columns, binding)
        check_held = self._boundary <= self._holds_end and self._may_hold(sink)
        images = None if check_held else _whole_images(operation, event.rows, key)
        converted = None
        if images is not None:
            try:
                converted = list(map(conversion.convert, images))
            except (UnconvertibleValueError, NulledValuesError):
                pass  # row by row, below: refused rows and NULLed values to the error table
        if converted is not None:
            changes.add_run(converted, run)
            self._transaction_rows += len(converted)
        else:
            self._transaction_rows += self._add_one_by_one(
                event, sink, changes, conversion, run, key, check_held
            )
        if self._transaction_rows > self._max_transaction_rows:
            return self._flush_transaction_part()
        return None

    def _add_one_by_one(
        self,
        event: RowsChanged,
        sink: str,
        changes: ChangeRows,
        conversion: Conversion,
        run: Run,
        key: tuple[int, ...],
        check_held: bool,
    ) -> int:
        """Adds the event's rows one at a time: updates that move a row to another key, rows
        a resumed table may already hold, rows the lake cannot hold (to the sink's error
        table). Returns how many were added to ``changes`` (the sink's) or the error table."""
        # the runs of this event's rows, by their operation; error rows' by theirs
        runs: dict[Operation, Run] = {event.operation: run}
        error_runs: dict[Operation, Run] = {}
        appended = 0
        for before, after in event.rows:
            for operation, image in _split(event.operation, before, after, key):
                row_run = runs.get(operation)
                if row_run is None:
                    row_run = runs[operation] = (*run[:6], _OPERATION_VALUES[operation])
                nulled: tuple[UnconvertibleValueError, ...] = ()
                try:
                    values = conversion.convert(image)
                except NulledValuesError as stored:
                    values, nulled = stored.values, stored.nulled
                except UnconvertibleValueError as refused:
                    appended += self._add_error(sink, event, image, refused, operation, error_runs)
                    continue
                if not (check_held and self._already_held(sink)):
                    changes.append(values, row_run)
                    appended += 1
                    if nulled:
                        counts = self._transaction_nulled.setdefault(sink, Counter())
                        counts.update(record.column for record in nulled)
                for record in nulled:  # the row landed; each NULL leaves its trace
                    appended += self._add_error(sink, event, image, record, operation, error_runs)
        return appended

    def _add_error(
        self,
        sink: str,
        event: RowsChanged,
        image: Image,
        error: UnconvertibleValueError,
        operation: Operation,
        error_runs: dict[Operation, Run],
    ) -> int:
        """Adds the row of ``image`` to the sink's error table, with what ``error`` says of
        one of its values; returns 1, or 0 when the error table already holds it."""
        named = dict(zip(event.columns, image, strict=True))
        row_run = error_runs.get(operation)
        if row_run is None:
            row_run = error_runs[operation] = (
                ERROR_COLUMNS,
                event.event_time_ms,
                f"{event.position.file}:{event.position.offset}",
                event.database,
                event.table,
                SCHEMA_VERSION,
                _OPERATION_VALUES[operation],
            )
        errors = errors_sink(sink)
        if self._may_hold(errors) and self._already_held(errors):
            return 0
        self._errors(sink).append(error_values(error, named), row_run)
        return 1

    def _errors(self, sink: str) -> ChangeRows:
        """The in-flight transaction's rows for the sink's error table
        (``ingest.changelog.error_table``)."""
        errors = errors_sink(sink)
        changes = self._transaction.get(errors)
        if changes is None:
            changes = self._transaction[errors] = ChangeRows()
        return changes

    def _key_positions(self, columns: tuple[str, ...], binding: Binding) -> tuple[int, ...]:
        """Where the binding's key columns are among an event's columns."""
        key = binding.key_columns
        positions = self._keys.get((columns, key))
        if positions is None:
            positions = tuple(columns.index(name) for name in key if name in columns)
            self._keys[(columns, key)] = positions
        return positions

    def _hold_from(self, progress: Mapping[str, TableProgress]) -> None:
        """What each table holds when reading (re)starts: rows of the transactions before
        these positions are skipped (``_may_hold``); past ``_holds_end``, none is."""
        self._held_at_start = dict(progress)
        self._holds_end = max(
            (held.position for held in progress.values()), default=BinlogPosition("", 0)
        )

    def _may_hold(self, sink: str) -> bool:
        """Whether ``sink`` may already hold rows of the in-flight transaction (only right
        after a resume); the common case skips the per-row bookkeeping."""
        progress = self._held_at_start.get(sink)
        return progress is not None and (
            self._boundary < progress.position
            or (self._boundary == progress.position and progress.partial_rows > 0)
        )

    def _already_held(self, sink: str) -> bool:
        """Count one row of the in-flight transaction for ``sink``; True if it holds it."""
        seen = self._transaction_seen.get(sink, 0) + 1
        self._transaction_seen[sink] = seen
        progress = self._held_at_start.get(sink)
        if progress is None:
            return False
        if self._boundary < progress.position:
            return True  # the whole transaction committed before the table's position
        if self._boundary == progress.position and seen <= progress.partial_rows:
            self._transaction_held[sink] = seen
            return True
        return False

    def _commit(self, position: BinlogPosition, event_time_ms: int) -> None:
        for sink, changes in self._transaction.items():
            self._count_late(sink, len(changes), event_time_ms)
            self._add_pending(sink, changes)
        self._boundary = position
        second_start = event_time_ms - event_time_ms % 1000
        self._watermark_ms = max(self._watermark_ms, second_start - 1)
        self._reset_transaction()

    def _count_late(self, sink: str, rows: int, commit_ms: int) -> None:
        """Count ``rows`` as late when their transaction committed, by the binlog's clock, more
        than a second (its granularity) before the watermark ``sink`` already published: a
        clock step back. Windows run before they arrived miss them."""
        progress = self._progress.get(sink)
        published = max(
            progress.watermark_ms if progress is not None else 0, self._marked_ms.get(sink, 0)
        )
        if rows == 0 or commit_ms + 1000 > published:
            return
        known = self._late.get(sink)
        self._late[sink] = (
            LateChanges(rows, commit_ms, commit_ms)
            if known is None
            else known.plus(rows, commit_ms)
        )
        logger.warning(
            "%d change(s) of %s committed at %s, before the watermark it already published "
            "(%s): the source's clock stepped back? Windows already run do not include them; "
            "the next window's merge applies them",
            rows,
            sink,
            datetime.fromtimestamp(commit_ms / 1000, UTC).isoformat(),
            datetime.fromtimestamp(published / 1000, UTC).isoformat(),
        )

    def _on_statement(self, event: StatementExecuted) -> None:
        decision = self._statements.decide(event)
        if isinstance(decision, Stop):
            self._stopped = decision.error(event)
            return
        for table in decision.truncated:
            self._mark_truncated(table, event)
        if not any(self._transaction.values()):
            # DDL and other standalone statements are transactions of their own
            self._boundary = event.position
            self._reset_transaction()

    def _mark_truncated(self, table: TruncatedTable, event: StatementExecuted) -> None:
        """A truncate marker for the table's sink, committed like a transaction of its own
        (TRUNCATE commits implicitly); skipped when the sink already holds it."""
        sink = table.sink
        if self._may_hold(sink) and self._already_held(sink):
            return
        marker = ChangeRows()
        marker.append(
            (),
            (
                (),
                event.event_time_ms,
                str(event.position),
                table.database,
                table.table,
                TRUNCATE_SCHEMA_VERSION,
                Operation.TRUNCATE.value,
            ),
        )
        self._add_pending(sink, marker)
        logger.warning(
            "%s.%s was truncated at %s: its rows leave %s's mirror at the next merge",
            table.database,
            table.table,
            event.position,
            sink,
        )

    def _sink_of(self, database: str, table: str) -> str | None:
        """The sink a table's rows go to, None if it is not onboarded (``StatementPolicy``)."""
        binding = self._router(database, table)
        return None if binding is None else binding.sink

    def _flush_transaction_part(self) -> Flush:
        for sink, changes in self._transaction.items():
            self._transaction_held[sink] = self._transaction_held.get(sink, 0) + len(changes)
            self._add_pending(sink, changes)
        self._transaction = {}
        self._transaction_rows = 0
        logger.info(
            "A transaction at %s outgrew %d rows: committing it in parts",
            self._boundary,
            self._max_transaction_rows,
        )
        sinks = sorted(self._pending)
        tables = [self._table_flush(sink, self._take_pending(sink)) for sink in sinks]
        self._pending_count = 0
        return Flush(tables)

    def _table_flush(self, sink: str, rows: ChangeRows) -> TableFlush:
        known = self._progress.get(sink)
        if known is not None and self._boundary < known.position:
            # Re-reading what this table already holds (it was ahead when reading resumed):
            # its rows were all skipped, and its progress must not move back.
            assert not rows
            return TableFlush(sink, rows, known)
        previous = known or TableProgress(
            position=self._boundary,
            watermark_ms=self._watermark_ms,
            last_order=0,
            source=self._source,
        )
        if self._server_uuid is not None and previous.server_uuid != self._server_uuid:
            # a changelog written before positions named their server, or by a bootstrap
            previous = replace(previous, server_uuid=self._server_uuid)
        late = self._late.pop(sink, NO_LATE_CHANGES)
        nulled = self._nulled.pop(sink, None)
        progress = previous.advanced(
            position=self._boundary,
            watermark_ms=self._watermark_ms,
            last_order=self._last_order.get(sink, 0),
            gtid=self._gtid,
            partial_rows=self._transaction_held.get(sink, 0) if self._in_transaction else 0,
            late_rows=late.rows,
            late_range=late.commit_range,
            nulled=nulled or {},
        )
        self._progress[sink] = progress
        return TableFlush(sink, rows, progress)

    def _add_pending(self, sink: str, changes: ChangeRows) -> None:
        """Rows of a committed transaction (or part) join the sink's next flush, with the next
        order keys, and the count of their values stored as NULL."""
        nulled = self._transaction_nulled.pop(sink, None)
        if nulled:
            self._nulled.setdefault(sink, Counter()).update(nulled)
        last_order = self._last_order.get(sink, 0)
        pending = self._pending.get(sink)
        if pending is None:
            pending = self._pending[sink] = ChangeRows(first_order=last_order + 1)
        pending.extend(changes)
        self._last_order[sink] = last_order + len(changes)
        self._pending_count += len(changes)

    def _take_pending(self, sink: str) -> ChangeRows:
        pending = self._pending.pop(sink, None)
        if pending is None:
            return ChangeRows(first_order=self._last_order.get(sink, 0) + 1)
        return pending

    def _reset_transaction(self) -> None:
        # twice a transaction (its commit, the next one's start): new dicts only when used
        self._in_transaction = False
        if self._transaction:
            self._transaction = {}
        self._transaction_rows = 0
        if self._transaction_held:
            self._transaction_held = {}
        if self._transaction_nulled:
            self._transaction_nulled = {}
        if self._transaction_seen:
            self._transaction_seen = {}


def _whole_images(
    operation: Operation, rows: list[tuple[Image | None, Image | None]], key: tuple[int, ...]
) -> list[Image] | None:
    """The image of each row that the changelog holds, when each row is one changelog row:
    None if an update moves a row to another key (``_split``)."""
    if operation is Operation.INSERT:
        return [after for _, after in rows]  # type: ignore[misc]  # inserts have no before
    if operation is Operation.DELETE:
        return [before for before, _ in rows]  # type: ignore[misc]  # deletes have no after
    for before, after in rows:
        assert before is not None and after is not None
        for position in key:  # a loop, not any(): this runs for every updated row
            if before[position] != after[position]:
                return None
    return [after for _, after in rows]  # type: ignore[misc]


def _split(
    operation: Operation, before: Image | None, after: Image | None, key: tuple[int, ...]
) -> list[tuple[Operation, Image]]:
    """An update that moves a row to another key (at ``key``'s positions) is a delete of the
    old key and an insert of the new one, so a merge by key applies both."""
    if operation is Operation.UPDATE and before is not None and after is not None:
        for position in key:
            if before[position] != after[position]:
                return [(Operation.DELETE, before), (Operation.INSERT, after)]
        return [(Operation.UPDATE, after)]
    image = after if after is not None else before
    assert image is not None
    return [(operation, image)]
