"""The bootstrap: existing rows of onboarded tables into their changelog tables, before streaming.

Each physical source table is read in primary-key chunks inside one consistent snapshot
(``ingest.bootstrap.snapshot_reader``) whose binlog position ``P`` is exact. The rows land with
operation ``r`` and order keys before any streamed change, committed every ``commit_rows`` rows
together with the bootstrap's state (``tidemark.contracts.bootstrap_state``): the last key
committed. After a crash the next run resumes after that key, in a new snapshot at a later position
``P2``.

Why that is exact: the table's progress keeps the earliest snapshot position ``P1`` (streaming
resumes there) and holds its watermark until the stream passes the latest, ``P2``
(``TableProgress.hold_until``). Every streamed change carries the whole row, so replaying
``(P1, P2]`` over rows read at ``P2`` ends, at ``P2``, in exactly the source's state; no window
sees the table before then. A table with no key to page by is read whole in one snapshot and
committed once (with a warning: it is held in memory, and a crash reads it again). Rows the
lake cannot hold go to the sink table's error table (``ingest.changelog.error_table``).

The incremental snapshot (``ingest.bootstrap.chunk_reads``, the default) has no snapshot
position: each chunk is read on its own between a low watermark ``L``, which plays ``P1``, and a
high watermark ``H``, which plays ``P2``; the argument is the same.

Tables of different sink tables are read in parallel (``parallelism`` threads); source tables
routed to the same sink table one after another. With the incremental snapshot a table's chunks are
also read ahead by ``parallelism`` readers (``ChunkReadsLender``). With one snapshot per table
(``incremental`` off), a reader reads its next table in the snapshot of its last one while that is
younger than ``snapshot_max_age`` and the table fits in one chunk (``SnapshotLender``; a longer
table, or one rebuilt by an ALTER since the snapshot opened, is read again in a snapshot of its
own, nothing of it committed yet): each table's rows are still those at its snapshot's position
``P``, and that ``P`` is what its progress records, so the argument above holds table by table.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import pyarrow as pa

from ingest.bootstrap.chunk_reads import ChunkReads, ChunkReadsLender, EvenDistribution
from ingest.bootstrap.display import BootstrapDisplay
from ingest.bootstrap.load_gate import LoadGate, LoadReading, ThreadsRunning
from ingest.bootstrap.snapshot_reader import (
    Chunk,
    ConsistentSnapshot,
    KeyValues,
    SnapshotLender,
    changed_since_opened,
    column_gone,
)
from ingest.changelog.error_table import error_row
from ingest.errors import UnconvertibleValueError
from ingest.schema.conversion import SCHEMA_VERSION
from ingest.schema.select_values import PageConverter, page_converter
from tidemark.contracts.bootstrap_state import BootstrapState, SourceTableBootstrap
from tidemark.contracts.changelog import MetadataColumn, Operation
from tidemark.contracts.progress import TableProgress
from tidemark.contracts.source_tables import SourceTable
from tidemark.errors import ConfigError, TerminalError, TransientError
from tidemark.sinks.protocols import ChangelogWriter
from tidemark.source import BinlogPosition, SourceConnection

logger = logging.getLogger(__name__)

#: how a table's rows are read: in one consistent snapshot, or a chunk at a time
TableReads = ConsistentSnapshot | ChunkReads


@dataclass(frozen=True)
class BootstrapSettings:
    chunk_size: int = 8096
    #: rows per Iceberg commit (several chunks)
    commit_rows: int = 50_000
    #: cap on rows read per second by all readers together, to protect the source; None: no cap
    max_rows_per_second: float | None = None
    #: chunks wait while the source runs more statements than this (``ingest.bootstrap.
    #: load_gate``); None: never
    max_threads_running: int | None = None
    parallelism: int = 1
    #: seconds after it opened that a snapshot is still lent to a next table (``SnapshotLender``)
    snapshot_max_age: float = 5.0
    server_time_zone: str | None = None
    tinyint1_as_boolean: bool = True
    #: read a chunk at a time (``ingest.bootstrap.chunk_reads``) rather than each table in one
    #: consistent snapshot (MariaDB's and Percona Server's only)
    incremental: bool = True
    #: the column a table's chunks are cut by, by database and table, when not its primary key
    #: (``scan.incremental.snapshot.chunk.key-column``)
    chunk_key_column: Callable[[str, str], str | None] = lambda database, table: None
    #: when an integer key is cut into spans of values (``chunk-key.even-distribution.*``)
    even_distribution: EvenDistribution = EvenDistribution()
    #: the MySQL resource group the bootstrap's reads run in (``tidemark.ingest.
    #: snapshot-resource-group``); None: the account's default
    resource_group: str | None = None


class TableChangedDuringBootstrapError(TransientError):
    """An ``ALTER TABLE`` between two chunks of the incremental snapshot took away a column
    the reads name; what is committed stays, and the next start reads on from there."""


@dataclass(frozen=True)
class SinkBootstrap:
    """One changelog table and the physical tables whose rows it is to receive."""

    sink: str
    table: ChangelogWriter
    members: Sequence[SourceTable]
    #: each member's schema version (``tidemark.contracts.schema_history``)
    versions: Mapping[str, int] = field(default_factory=dict)


@dataclass
class Pacer:
    """Sleeps just enough to keep the readers that share it under ``rate`` rows per second
    together: every table a bootstrap reads in parallel, and every reader of their chunks.
    Time spent below the rate (slow commits, a table being set up) is made up for at most
    ``CATCH_UP_SECONDS``: a stall must not buy a burst at any speed afterwards."""

    CATCH_UP_SECONDS: ClassVar[float] = 1.0

    rate: float | None
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    started: float = 0.0
    rows: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def took(self, rows: int) -> None:
        if self.rate is None:
            return
        with self._lock:
            now = self.clock()
            behind = (now - self.started) - self.rows / self.rate
            if behind > self.CATCH_UP_SECONDS:
                self.started += behind - self.CATCH_UP_SECONDS
            self.rows += rows
            ahead = self.rows / self.rate - (now - self.started)
        if ahead > 0:
            self.sleep(ahead)


class _NotForASharedSnapshot(Exception):  # noqa: N818 - a signal, caught in Bootstrapper
    """A table read in a snapshot already used for others has more than a chunk of rows, or
    was rebuilt since the snapshot opened: it is read in a snapshot of its own
    (``SnapshotLender``). Raised before anything of the table is written."""


class BootstrapStopped(Exception):  # noqa: N818 - asked for, not a failure
    """``Bootstrapper.stop`` was set: the next run resumes after the last committed chunk."""


@dataclass
class Bootstrapper:
    source: SourceConnection
    source_id: str
    settings: BootstrapSettings
    display: BootstrapDisplay
    #: the error table of a sink table, created on first use (``ingest.changelog.error_table``)
    open_errors: Callable[[str], ChangelogWriter] | None = None
    #: the error table of a sink table if it exists
    find_errors: Callable[[str], ChangelogWriter | None] | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    #: set to stop at the next chunk, leaving what is committed (a run stopped meanwhile)
    stop: threading.Event = field(default_factory=threading.Event)
    #: the rate cap of the run under way, shared by its readers
    _pacer: Pacer | None = field(default=None, init=False, repr=False)
    #: how the source's load is read (``load_gate.ThreadsRunning`` of ``source`` if None)
    read_running: LoadReading | None = None
    _gate: LoadGate | None = field(default=None, init=False, repr=False)

    def run(self, sinks: Sequence[SinkBootstrap]) -> dict[str, TableProgress]:
        """Bootstrap every sink table; returns each one's progress after its last commit. The
        display is closed however this ends: a failure or a stop finishes no table."""
        members = [member for sink in sinks for member in sink.members]
        for member in members:  # a chunk key the file names wrongly fails before any read
            self._chunk_key(member)
        snapshots = self._lender()
        self._pacer = self._new_pacer()
        self._gate = gate = self._new_gate()
        try:
            bootstrap = functools.partial(
                self.bootstrap, snapshots=snapshots, estimates=estimated_rows(self.source, members)
            )
            if self.settings.parallelism <= 1 or len(sinks) <= 1:
                return {sink.sink: bootstrap(sink) for sink in sinks}
            with ThreadPoolExecutor(self.settings.parallelism, "bootstrap") as pool:
                futures = {sink.sink: pool.submit(bootstrap, sink) for sink in sinks}
                return {name: future.result() for name, future in futures.items()}
        finally:
            self._gate = None
            with ExitStack() as closing_all:  # each closed whatever the others raise
                closing_all.callback(self.display.close)
                closing_all.callback(gate.close)
                closing_all.callback(snapshots.close)

    def _new_pacer(self) -> Pacer:
        return Pacer(self.settings.max_rows_per_second, self.clock, self.sleep)

    def _hold_while_busy(self, name: str, after: KeyValues | None) -> None:
        """Waits while the source is busier than the limit (``load_gate``); a stop meanwhile
        stops the bootstrap, nothing more read."""
        if self._gate is not None and not self._gate.wait():  # set by run
            raise BootstrapStopped(f"the bootstrap of {name} stopped after {after}")

    def _new_gate(self) -> LoadGate:
        return LoadGate(
            self.settings.max_threads_running,
            self.read_running or ThreadsRunning(self.source),
            self.stop,
            self.clock,
        )

    def _chunk_key(self, member: SourceTable) -> tuple[tuple[str, ...] | None, bool]:
        return chunk_key(member, self.settings.chunk_key_column(member.database, member.name))

    def _lender(self) -> SnapshotLender | ChunkReadsLender:
        if self.settings.incremental:
            return ChunkReadsLender(
                self.source,
                self.settings.parallelism,
                self.settings.even_distribution,
                self.settings.resource_group,
            )
        return SnapshotLender(
            self.source, self.settings.snapshot_max_age, self.clock, self.settings.resource_group
        )

    def bootstrap(
        self,
        sink: SinkBootstrap,
        snapshots: SnapshotLender | ChunkReadsLender,
        estimates: Mapping[str, int | None],
    ) -> TableProgress:
        """Bootstraps one sink table, its members one after another; ``estimates`` are the
        members' estimated rows, by table id, for the display."""
        state = sink.table.bootstrap() or BootstrapState()
        progress = sink.table.progress()
        if progress is not None and state.tables:
            logger.info("Resuming the bootstrap of %s (%d rows so far)", sink.sink, state.rows)
        state = self._errors_of_committed_chunks_only(sink.sink, state)
        for member in sink.members:
            name = member.table_id
            if state.table(name).done:
                continue
            self.display.start(name, state.table(name).rows, estimates.get(name))
            progress, state = self._read_in_lent_snapshot(snapshots, sink, member, progress, state)
            self.display.finish(name)
        assert progress is not None  # every member commits at least once
        return progress

    def _read_in_lent_snapshot(
        self,
        snapshots: SnapshotLender | ChunkReadsLender,
        sink: SinkBootstrap,
        member: SourceTable,
        progress: TableProgress | None,
        state: BootstrapState,
    ) -> tuple[TableProgress, BootstrapState]:
        """``_read`` in a snapshot lent from earlier tables if ``member`` fits in one chunk,
        else in one of its own: the earlier tables' locks are not held through a long read.
        The shared snapshot ends when its borrower gives up (``SnapshotLender.lend``)."""
        try:
            # a table without a key is one unbuffered query: to give it up would read it whole
            if paging_key(member) is not None:
                try:
                    with snapshots.lend() as snapshot:
                        return self._read_shared(sink, member, snapshot, progress, state)
                except _NotForASharedSnapshot as reason:
                    logger.debug("%s is read in a snapshot of its own: %s", member.table_id, reason)
            with snapshots.lend(own=True) as snapshot:
                return self._read(sink, member, snapshot, progress, state)
        except Exception as error:
            if column_gone(error):
                raise TableChangedDuringBootstrapError(
                    f"the structure of {member.table_id} changed while it was being "
                    f"bootstrapped ({error.args[-1]}): start ingest again, and it reads the "
                    "rest of the table with its new structure"
                ) from error
            raise

    def _read_shared(
        self,
        sink: SinkBootstrap,
        member: SourceTable,
        snapshot: TableReads,
        progress: TableProgress | None,
        state: BootstrapState,
    ) -> tuple[TableProgress, BootstrapState]:
        """``_read``; a table rebuilt since a snapshot used for others opened could have been
        read in its own, as before snapshots were shared, so it is, not refused."""
        try:
            return self._read(sink, member, snapshot, progress, state)
        except Exception as error:
            if snapshot.tables > 1 and changed_since_opened(error):
                raise _NotForASharedSnapshot("rebuilt since the snapshot opened") from error
            raise

    def _read(
        self,
        sink: SinkBootstrap,
        member: SourceTable,
        snapshot: TableReads,
        progress: TableProgress | None,
        state: BootstrapState,
    ) -> tuple[TableProgress, BootstrapState]:
        """Reads ``member`` in ``snapshot`` after what ``state`` says is committed, committing
        as it goes; returns the sink table's progress and state after its last commit."""
        name = member.table_id
        key, unique = self._chunk_key(member)
        done = state.table(name)
        # a state from before chunk keys were recorded was cut by the paging key
        cut_by = done.key or paging_key(member)
        if done.after is not None and cut_by != key:
            raise TerminalError(
                f"the bootstrap of {name} was cut into chunks by {', '.join(cut_by or ())}, "
                f"and would now be cut by {', '.join(key or ('no key',))} (the table's key, or "
                "scan.incremental.snapshot.chunk.key-column, changed): put it back to finish "
                "the bootstrap, or drop the changelog table to bootstrap it again"
            )
        if key is None:
            logger.warning(
                "%s has no primary key or NOT NULL unique key to read it in chunks by: it is "
                "read whole in one snapshot and committed at once (memory grows with the "
                "table, and a crash reads it again)",
                name,
            )
        nulled: list[tuple[int, UnconvertibleValueError]] = []
        convert = page_converter(
            member,
            self.settings.server_time_zone,
            tinyint1_as_boolean=self.settings.tinyint1_as_boolean,
            nulled=lambda index, record: nulled.append((index, record)),
        )
        pacer = self._pacer or self._new_pacer()
        progress = _started(progress, snapshot.position, self.source_id)
        metadata = _Metadata(member, snapshot, sink.versions.get(name, SCHEMA_VERSION))
        names = [column.name for column in member.columns]
        batches: list[pa.RecordBatch] = []
        pending, after = 0, done.after
        self._hold_while_busy(name, after)
        # closed at once on an error: queued range reads stop, not when collected
        with closing(_chunks(snapshot, member, key, unique, done.after, self.settings)) as chunks:
            for chunk in chunks:
                if self.stop.is_set():
                    raise BootstrapStopped(f"the bootstrap of {name} stopped after {after}")
                if snapshot.tables > 1 and len(chunk.rows) >= self.settings.chunk_size:
                    # the first chunk (a later one never comes in a shared snapshot): nothing of
                    # the table is written yet
                    raise _NotForASharedSnapshot("longer than a chunk")
                data, refused, stored_as_null = _convert(convert, chunk, member, nulled)
                if refused or stored_as_null:
                    errors_order = self._keep_refused(
                        sink.sink, member, snapshot, progress.position, refused + stored_as_null
                    )
                    state = replace(state, errors_order=errors_order)
                batch = metadata.batch(sink.table.schema, names, data, progress.last_order)
                progress = replace(progress, last_order=progress.last_order + batch.num_rows)
                progress = progress.with_nulled(
                    Counter(error.column for error, _ in stored_as_null)
                )
                progress = _held_until(progress, snapshot.high_watermark)
                batches.append(batch)
                pending += batch.num_rows
                after = chunk.last_key
                pacer.took(batch.num_rows)
                self.display.advance(name, batch.num_rows)
                if key is not None and pending >= self.settings.commit_rows:
                    done = SourceTableBootstrap(False, after, done.rows + pending, key)
                    state = state.with_table(name, done)
                    rows = pa.Table.from_batches(batches, sink.table.schema)
                    sink.table.commit(rows, progress, state)
                    batches, pending = [], 0
                self._hold_while_busy(name, after)  # before the next chunk is read
        done = SourceTableBootstrap(True, after, done.rows + pending, key)
        state = state.with_table(name, done)
        progress = _held_until(progress, snapshot.high_watermark)
        rows = pa.Table.from_batches(batches, sink.table.schema)
        sink.table.commit(rows, progress, state)
        return progress, state

    def _errors_of_committed_chunks_only(self, sink: str, state: BootstrapState) -> BootstrapState:
        """``state`` with the error table's last order key it covers. A crash between the
        commit of a chunk's error rows and the commit of the chunk leaves rows in the error
        table that the resumed bootstrap would write again, when it reads the chunk again:
        they are removed first, so that bootstrap errors are exactly once too."""
        errors = self.find_errors(sink) if self.find_errors is not None else None
        progress = errors.progress() if errors is not None else None
        last_order = progress.last_order if progress is not None else 0
        if state.errors_order is None or errors is None or progress is None:
            return replace(state, errors_order=last_order)
        if last_order > state.errors_order:
            logger.info(
                "Removing %d error rows of %s's chunks that were not committed: the bootstrap "
                "reads those chunks again",
                last_order - state.errors_order,
                sink,
            )
            errors.delete_snapshot_rows_after(
                state.errors_order, replace(progress, last_order=state.errors_order)
            )
        return state

    def _keep_refused(
        self,
        sink: str,
        member: SourceTable,
        snapshot: TableReads,
        streams_from: BinlogPosition,
        refused: list[tuple[UnconvertibleValueError, dict[str, Any]]],
    ) -> int:
        """Rows the lake cannot hold, and values stored as NULL, go to the error table before
        the chunk they came in is committed; returns the error table's last order key, which
        the chunk's commit records (``_errors_of_committed_chunks_only``)."""
        if self.open_errors is None:
            raise refused[0][0]
        table = self.open_errors(sink)
        previous = table.progress()
        last_order = previous.last_order if previous is not None else 0
        metadata = _Metadata(member, snapshot, SCHEMA_VERSION).values
        rows = []
        for error, image in refused:
            last_order += 1
            row = error_row(error, image) | metadata
            row[MetadataColumn.ORDER_KEY] = last_order
            rows.append(row)
        # where the changelog will stream from: errors the replay after it meets are still due
        position = min(streams_from, previous.position) if previous else streams_from
        progress = TableProgress(position, 0, last_order=last_order, source=self.source_id)
        table.commit(pa.Table.from_pylist(rows, schema=table.schema), progress)
        return last_order


def paging_key(table: SourceTable) -> tuple[str, ...] | None:
    """The columns to page a table by: its primary key, else a unique key with no NULLs."""
    if table.primary_key:
        return table.primary_key
    for unique in table.unique_keys:
        if all(not table.column(name).nullable for name in unique.columns):
            return unique.columns
    return None


def estimated_rows(source: SourceConnection, tables: Sequence[SourceTable]) -> dict[str, int]:
    """InnoDB's estimate of each table's rows, for the ETA, by table id (none when unknown);
    one query for all of them, not a connection each."""
    if not tables:
        return {}
    databases = sorted({table.database for table in tables})
    names = sorted({table.name for table in tables})
    wanted = {(table.database, table.name) for table in tables}
    with source.connect() as conn, conn.cursor() as cursor:
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS FROM information_schema.TABLES "
            f"WHERE TABLE_SCHEMA IN ({_placeholders(databases)}) "
            f"AND TABLE_NAME IN ({_placeholders(names)})",
            (*databases, *names),
        )
        rows = cursor.fetchall()
    return {
        f"{database}.{name}": int(count)
        for database, name, count in rows
        if (database, name) in wanted and count is not None
    }


def _placeholders(values: Sequence[object]) -> str:
    return ", ".join(["%s"] * len(values))


#: types whose values the server returns other than it compares them (a FLOAT read back as the
#: nearest double, an ENUM ordered by its index but compared by its label): no chunk boundary
_INEXACT_TYPES = frozenset({"float", "double", "real", "enum", "set", "json"})


def chunk_key(table: SourceTable, column: str | None) -> tuple[tuple[str, ...] | None, bool]:
    """The columns a table's chunks are cut by, and whether their values are unique: the
    paging key (``paging_key``), or the ``column`` that
    ``scan.incremental.snapshot.chunk.key-column`` names for it, which must be NOT NULL (a
    range of values never holds NULL) and of a type compared exactly."""
    key = paging_key(table)
    if column is None:
        return key, True
    option = f"scan.incremental.snapshot.chunk.key-column names {column} for {table.table_id}"
    try:
        chosen = table.column(column)
    except KeyError:
        raise ConfigError(
            f"{option}, which has no such column (it has "
            f"{', '.join(c.name for c in table.columns)}): name one of them, or leave the "
            "table out to cut it by its primary key"
        ) from None
    if chosen.nullable:
        raise ConfigError(
            f"{option}, which may hold NULL, and a chunk (a range of its values) never holds "
            "a NULL row: choose a NOT NULL column, or leave the table out"
        )
    if chosen.data_type.lower() in _INEXACT_TYPES:
        raise ConfigError(
            f"{option}, a {chosen.data_type.upper()} column, whose values the server returns "
            "other than it compares them: choose a column of an integer, decimal, string or "
            "temporal type, or leave the table out"
        )
    return (chosen.name,), key == (chosen.name,)


def _chunks(
    snapshot: TableReads,
    member: SourceTable,
    key: tuple[str, ...] | None,
    unique: bool,
    after: tuple[object, ...] | None,
    settings: BootstrapSettings,
) -> Generator[Chunk, None, None]:
    """The chunks to read; closing it ends the reads, those queued with readers included."""
    if key is None:
        yield from snapshot.whole(member, settings.chunk_size)
    elif isinstance(snapshot, ChunkReads):
        yield from snapshot.chunks(
            member, key, after=after, chunk_size=settings.chunk_size, unique=unique
        )
    else:
        # the pipeline file's checks refuse a chunk key column without the incremental snapshot
        yield from snapshot.chunks(member, key, after=after, chunk_size=settings.chunk_size)


def _started(
    progress: TableProgress | None, position: BinlogPosition, source_id: str
) -> TableProgress:
    """Progress once a snapshot at ``position`` is open: streaming starts at the earliest
    snapshot's position, and the watermark waits for the latest's."""
    if progress is None:
        return TableProgress(position, 0, last_order=0, source=source_id, hold_until=position)
    hold = max(position, progress.hold_until or position)
    return TableProgress(
        position=min(progress.position, position),
        watermark_ms=progress.watermark_ms,
        last_order=progress.last_order,
        source=progress.source,
        gtid=progress.gtid,
        hold_until=hold,
    )


def _held_until(progress: TableProgress, high_watermark: BinlogPosition) -> TableProgress:
    """``progress`` with its watermark held until the stream passes ``high_watermark`` too:
    the rows read so far may show transactions up to there."""
    hold = progress.hold_until
    return (
        progress
        if hold is not None and hold >= high_watermark
        else replace(progress, hold_until=high_watermark)
    )


Refused = list[tuple[UnconvertibleValueError, dict[str, Any]]]


def _convert(
    convert: PageConverter,
    chunk: Chunk,
    member: SourceTable,
    nulled: list[tuple[int, UnconvertibleValueError]],
) -> tuple[list[pa.Array], Refused, Refused]:
    """The chunk's columns as Arrow arrays; rows that cannot be converted are left out and
    returned with their error (found row by row, only when the chunk as a whole fails); and
    each value stored as NULL, with its row. ``nulled`` is what ``convert`` tells of those."""
    names = [column.name for column in member.columns]
    nulled.clear()
    rows, refused = chunk.rows, []
    try:
        data = convert(rows)
    except UnconvertibleValueError:
        kept = []
        for row in chunk.rows:
            try:
                convert([row])
            except UnconvertibleValueError as error:
                refused.append((error, dict(zip(names, row, strict=True))))
            else:
                kept.append(row)
        nulled.clear()  # told again, by index in the rows kept
        rows, data = kept, convert(kept)
    stored = [(error, dict(zip(names, rows[index], strict=True))) for index, error in nulled]
    return data, refused, stored


class _Metadata:
    """The metadata columns of a snapshot's rows: all read at one instant and position."""

    def __init__(self, member: SourceTable, snapshot: TableReads, version: int) -> None:
        self.values: dict[str, Any] = {
            MetadataColumn.OPERATION: Operation.SNAPSHOT_READ.value,
            MetadataColumn.EVENT_TIME: snapshot.read_at,
            MetadataColumn.POSITION: str(snapshot.position),
            MetadataColumn.SOURCE_DATABASE: member.database,
            MetadataColumn.SOURCE_TABLE: member.name,
            MetadataColumn.SCHEMA_VERSION: version,
        }

    def batch(
        self, schema: pa.Schema, names: Sequence[str], data: list[pa.Array], last_order: int
    ) -> pa.RecordBatch:
        """The changelog's columns, by name: the member's data, then metadata; NULL for a column
        the member does not have (another shard's, or one the source dropped)."""
        rows = len(data[0]) if data else 0
        given = dict(zip(names, data, strict=True))
        arrays = []
        for field_ in schema:
            array = given.get(field_.name)
            if array is not None:
                arrays.append(array if array.type.equals(field_.type) else array.cast(field_.type))
            elif field_.name == MetadataColumn.ORDER_KEY:
                arrays.append(pa.array(range(last_order + 1, last_order + rows + 1), pa.int64()))
            elif field_.name in self.values:
                arrays.append(pa.repeat(pa.scalar(self.values[field_.name], field_.type), rows))
            else:
                arrays.append(pa.nulls(rows, field_.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
