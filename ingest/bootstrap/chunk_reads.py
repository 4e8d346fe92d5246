"""The incremental snapshot: a table read a chunk at a time, each chunk a statement of its own.

``scan.incremental.snapshot.enabled`` (Flink CDC's option). Each page of the table's key
(``ReadView.chunks``) is one autocommit ``SELECT``, so InnoDB keeps a read view for one page's
query, never for the whole table: no transaction stays open for hours on the source, holding
back its purge. MySQL, which reports no snapshot position, can be bootstrapped this way.

Why it is exact (the same argument as ``ingest.bootstrap.bootstrapper``'s, with two positions
for one): before the first chunk the reader takes a *low watermark* ``L``, a binlog position
with every transaction before it visible to every later read; after each chunk a *high
watermark* ``H``, the binlog's end, after every transaction the chunk could see. The table's
stream starts at ``L`` and its watermark is held until the stream passes the last ``H``
(``TableProgress.hold_until``). A row changed between ``L`` and ``H`` has every change replayed
after its snapshot row (each carries the whole row, and the merge applies the last); a row not
changed in between was read as it stands at ``H``. Flink CDC and Debezium reconcile each chunk
with the binlog between its watermarks in memory (DBLog); Tidemark's changelog keeps every
change and its merge applies them in order after the snapshot rows, so the replay does that
work and only the first ``L`` and the last ``H`` matter.

The trap is the low watermark. MySQL writes a transaction to the binlog before InnoDB commits
it (a group commit's flush stage, then sync, then commit), so the binlog's end
(``SHOW BINARY LOG STATUS``) can be past a transaction no read sees yet: taken as ``L`` it
would lose that transaction's rows, missing from the chunk and before the stream's start.
MySQL's ``performance_schema.log_status`` (8.0.14+, ``BACKUP_ADMIN``) gives the binlog
position together with the GTIDs committed there; on MySQL 9.7 it waits for the group commit in
progress (*measured*: ``tests/ingest/bootstrap/test_chunk_reads.py`` holds a transaction
between the binlog and its commit), which older versions' sources do not clearly do: run that
test against an 8.x server before relying on it there. MariaDB's consistent snapshot gives the
position exactly (``binlog_snapshot_position``): one is opened for it and ended at once.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self

from ingest.bootstrap.snapshot_reader import (
    Chunk,
    KeyValues,
    ReadView,
    boundary_query,
    bounds_query,
    range_query,
    server_now,
    snapshot_position,
)
from ingest.schema.select_values import select_column
from tidemark.bulk_reads import BulkConnection, ReadError, error_code, open_bulk_connection
from tidemark.contracts.source_tables import SourceTable
from tidemark.errors import TerminalError
from tidemark.source import (
    BinlogPosition,
    SourceConnection,
    binlog_end,
    is_mariadb,
)

logger = logging.getLogger(__name__)

#: ER_SPECIFIC_ACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR
_ACCESS_DENIED = (1227, 1142)
#: ER_NO_SUCH_TABLE
_NO_SUCH_TABLE = 1146


class ChunkReads(ReadView):
    """One connection, its chunks read each in a read view of its own; a table at a time, with
    a new low watermark for each (``begin_table``). With ``readers``, the chunks after the first
    are read ahead by them, in parallel (``RangeReaders``)."""

    def __init__(
        self,
        source: SourceConnection,
        readers: RangeReaders | None = None,
        even: EvenDistribution | None = None,
        resource_group: str | None = None,
    ) -> None:
        super().__init__(source, resource_group)
        self._readers = readers
        self._even = even or EvenDistribution()
        #: the low watermark: every transaction before it is visible to the chunks read
        self.position = BinlogPosition("", 0)
        #: after every transaction that a chunk read so far could see
        self.high_watermark = BinlogPosition("", 0)

    def __enter__(self) -> Self:
        self._conn = open_bulk_connection(
            self._source, autocommit=True, resource_group=self._resource_group
        )
        try:
            self.begin_table()
        except BaseException:
            self.close()
            raise
        return self

    def begin_table(self) -> None:
        """Takes a new low watermark, for the next table read."""
        conn = self._connection()
        self.position = low_watermark(conn, self._source)
        self.high_watermark = self.position
        self.tables = 0
        with conn.cursor() as cursor:
            self.read_at = server_now(cursor)
        logger.debug("Low watermark %s", self.position)

    def chunks(
        self,
        table: SourceTable,
        key: Sequence[str],
        *,
        after: KeyValues | None,
        chunk_size: int,
        unique: bool = True,
    ) -> Iterator[Chunk]:
        """``ReadView.chunks``, each page its own statement, with the high watermark taken
        after it is read; read ahead in parallel when there are ``readers``. A ``key`` whose
        values are not ``unique`` (``scan.incremental.snapshot.chunk.key-column``) cannot page
        by ``LIMIT``: its chunks are key ranges, as the readers read them."""
        readers = self._readers if self._readers is not None and self._readers.size > 1 else None
        if readers is not None or not unique:
            yield from self._key_ranges(readers, table, key, after, chunk_size)
            return
        for chunk in super().chunks(table, key, after=after, chunk_size=chunk_size):
            self.high_watermark = max(self.high_watermark, binlog_end(self._connection()))
            yield chunk

    def _key_ranges(
        self,
        readers: RangeReaders | None,
        table: SourceTable,
        key: Sequence[str],
        after: KeyValues | None,
        chunk_size: int,
    ) -> Iterator[Chunk]:
        """The chunks as key ranges, in key order: this connection finds where each next
        range ends (``boundary_query``) and ``readers`` read up to ``readers.size`` ranges
        ahead (without readers, this connection reads each range when it is due). A range's
        rows are those after the previous range's end and up to its own, the last one
        open-ended, so every key falls in exactly one, whatever is written meanwhile."""
        columns = [select_column(column) for column in table.columns]
        key_indexes = [[column.name for column in table.columns].index(name) for name in key]
        ahead = readers.size if readers is not None else 1
        spans = even_spans(self._connection(), table, key, chunk_size, self._even)
        if spans is not None:
            logger.debug(
                "%s cut by %s into spans of %d values", table.table_id, key[0], spans.width
            )
        in_flight: deque[Future[tuple[Chunk, BinlogPosition]]] = deque()
        ended = False
        try:
            while True:
                while not ended and len(in_flight) < ahead:
                    if spans is not None:
                        upto = spans.end_after(after)
                    else:
                        upto = self._boundary(table, key, after, chunk_size)
                    if upto is not None and upto == after:
                        raise TerminalError(
                            f"the chunks of {table.table_id} by {', '.join(key)} stopped "
                            f"moving at {upto}: the server returns these key values other "
                            "than it compares them; cut the table by another column "
                            "(scan.incremental.snapshot.chunk.key-column)"
                        )
                    query = range_query(table, columns, key, after, upto)
                    if readers is not None:
                        in_flight.append(readers.submit(query, key_indexes, after, upto))
                    else:
                        in_flight.append(Future())
                        in_flight[-1].set_result(
                            read_range(self._connection(), query, key_indexes, after, upto)
                        )
                    after, ended = upto, upto is None
                if not in_flight:
                    return
                chunk, high_watermark = in_flight.popleft().result()
                self.high_watermark = max(self.high_watermark, high_watermark)
                yield chunk
        finally:
            for future in in_flight:
                future.cancel()

    def _boundary(
        self, table: SourceTable, key: Sequence[str], after: KeyValues | None, rows: int
    ) -> KeyValues | None:
        """Where the chunk of ``rows`` rows after ``after`` ends; None when the rest of the
        table is shorter (the last chunk, open-ended)."""
        query, params = boundary_query(table, key, after, rows)
        with self._connection().cursor() as cursor:
            cursor.execute(query, params)
            row = cursor.fetchone()
        return tuple(row) if row is not None else None

    def whole(self, table: SourceTable, batch_size: int) -> Iterator[Chunk]:
        """``ReadView.whole``: one statement, so one read view for as long as it lasts (a table
        without a key to page by, as with a consistent snapshot). The high watermark is taken
        once it has ended, and its rows are committed only then."""
        yield from super().whole(table, batch_size)
        self.high_watermark = binlog_end(self._connection())


def read_range(
    conn: BulkConnection,
    query: tuple[str, list[Any]],
    key_indexes: Sequence[int],
    after: KeyValues | None,
    upto: KeyValues | None,
) -> tuple[Chunk, BinlogPosition]:
    """The key range ``query`` selects (``range_query``), as a chunk ending at ``upto`` (at its
    last row's key, the columns at ``key_indexes``, when ``upto`` is None; at ``after`` when
    it has no rows), and the binlog's end after it: its high watermark."""
    with conn.cursor() as cursor:
        cursor.execute(*query)
        rows = list(cursor.fetchall())
    high_watermark = binlog_end(conn)
    last = upto
    if last is None:
        last = tuple(rows[-1][i] for i in key_indexes) if rows else after
    return Chunk(rows, last), high_watermark


class RangeReaders:
    """``size`` threads that read key ranges of tables, each on a connection of its own,
    shared by every table of a bootstrap (``pipeline.parallelism``). A range read is one
    autocommit ``SELECT``; the binlog's end after it is its high watermark."""

    def __init__(
        self, source: SourceConnection, size: int, resource_group: str | None = None
    ) -> None:
        self.size = size
        self._source = source
        self._resource_group = resource_group
        self._pool = ThreadPoolExecutor(size, "chunk-reader")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[BulkConnection] = []

    def submit(
        self,
        query: tuple[str, list[Any]],
        key_indexes: Sequence[int],
        after: KeyValues | None,
        upto: KeyValues | None,
    ) -> Future[tuple[Chunk, BinlogPosition]]:
        """``read_range`` in one of the threads."""

        def read() -> tuple[Chunk, BinlogPosition]:
            return read_range(self._connection(), query, key_indexes, after, upto)

        return self._pool.submit(read)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    def _connection(self) -> BulkConnection:
        conn: BulkConnection | None = getattr(self._local, "conn", None)
        if conn is None or not conn.open:
            conn = open_bulk_connection(
                self._source, autocommit=True, resource_group=self._resource_group
            )
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn


class ChunkReadsLender:
    """``SnapshotLender``'s part for the incremental snapshot: a reader's connection is lent to
    its next table with a new low watermark. Nothing is held between statements, so a
    connection is kept for as long as the bootstrap runs. With ``parallelism`` > 1 the chunks
    of each table are read ahead by that many ``RangeReaders``, shared by all tables. Every
    connection runs in ``resource_group`` when one is given (``tidemark.bulk_reads``)."""

    def __init__(
        self,
        source: SourceConnection,
        parallelism: int = 1,
        even: EvenDistribution | None = None,
        resource_group: str | None = None,
    ) -> None:
        self._source = source
        self._even = even
        self._resource_group = resource_group
        self._lock = threading.Lock()
        self._idle: list[ChunkReads] = []
        self._readers = (
            RangeReaders(source, parallelism, resource_group) if parallelism > 1 else None
        )

    @contextmanager
    def lend(self, *, own: bool = False) -> Iterator[ChunkReads]:
        """Reads for one table (every table has reads of its own: ``own`` changes nothing)."""
        with self._lock:
            reads = self._idle.pop() if self._idle else None
        if reads is None:
            reads = ChunkReads(
                self._source, self._readers, self._even, self._resource_group
            ).__enter__()
        else:
            try:
                reads.begin_table()
            except BaseException:
                reads.close()
                raise
        reads.tables += 1
        try:
            yield reads
        except BaseException:
            reads.close()  # its connection may be mid-result or gone
            raise
        with self._lock:
            self._idle.append(reads)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for reads in idle:
            reads.close()
        if self._readers is not None:
            self._readers.close()


#: the integer types a key can be cut into spans of values by
_INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint"})


@dataclass(frozen=True)
class EvenDistribution:
    """When an integer key's values are spread evenly enough to cut its chunks as spans of
    values (Flink CDC's ``chunk-key.even-distribution.factor.*``): the key's span of values
    per row, ``(MAX - MIN + 1) / rows``, from ``lower`` to ``upper``."""

    lower: float = 0.05
    upper: float = 1000.0


@dataclass(frozen=True)
class EvenSpans:
    """An integer key's chunks as spans of ``width`` values, from ``first`` (the key's least
    value when planned): where a chunk ends is arithmetic, not a query on the key's index. The
    chunk that reaches ``last`` (its largest then) is open-ended, for rows written since."""

    first: int
    last: int
    width: int

    def end_after(self, after: KeyValues | None) -> KeyValues | None:
        """Where the chunk after ``after`` (from the start when None) ends."""
        end = (self.first - 1 if after is None else int(after[0])) + self.width
        return None if end >= self.last else (end,)


def even_spans(
    conn: BulkConnection,
    table: SourceTable,
    key: Sequence[str],
    chunk_size: int,
    even: EvenDistribution,
) -> EvenSpans | None:
    """``table``'s chunks as spans of values of its integer ``key``, about ``chunk_size`` rows
    each, when its values are spread evenly enough (``even``); else None, and each chunk's end
    is found on the key's index. The rows are InnoDB's estimate, as Flink CDC's are: a chunk
    may hold a few times ``chunk_size`` rows when it is far off."""
    column = next((c for c in table.columns if c.name == key[0]), None)
    if len(key) != 1 or column is None or column.data_type not in _INTEGER_TYPES:
        return None
    with conn.cursor() as cursor:
        if not is_mariadb(conn):  # else MySQL answers from its statistics cache, a day old
            cursor.execute("SET SESSION information_schema_stats_expiry = 0")
        cursor.execute(
            "SELECT TABLE_ROWS FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (table.database, table.name),
        )
        estimate = cursor.fetchone()
        cursor.execute(bounds_query(table, key[0]))
        least, most = cursor.fetchone() or (None, None)
    rows = int(estimate[0] or 0) if estimate else 0
    if least is None or most is None or rows <= 0:
        return None
    factor = (int(most) - int(least) + 1) / rows
    if not even.lower <= factor <= even.upper:
        return None
    return EvenSpans(int(least), int(most), max(1, int(factor * chunk_size)))


def low_watermark(conn: BulkConnection, source: SourceConnection) -> BinlogPosition:
    """A binlog position with every transaction before it committed, so visible to every read
    that starts after this returns (see the module's docstring)."""
    with conn.cursor() as cursor:
        if is_mariadb(conn):
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            try:
                return snapshot_position(cursor, source)
            finally:
                cursor.execute("COMMIT")
        try:
            cursor.execute("SELECT LOCAL FROM performance_schema.log_status")
            row = cursor.fetchone()
        except ReadError as error:
            if error_code(error) == _NO_SUCH_TABLE:
                raise TerminalError(
                    f"{source.host}:{source.port} has no performance_schema.log_status, where "
                    "the bootstrap takes a binlog position every earlier transaction is "
                    "visible at: it needs MySQL 8.0.14 or later (and performance_schema on)"
                ) from error
            if error_code(error) in _ACCESS_DENIED:
                raise TerminalError(
                    f"{source.user} may not read performance_schema.log_status on "
                    f"{source.host}:{source.port}, where the bootstrap takes a binlog position "
                    "every earlier transaction is visible at (the binlog's end can be past "
                    "transactions InnoDB has not committed yet): GRANT BACKUP_ADMIN ON *.* TO "
                    f"'{source.user}'"
                ) from error
            raise
    assert row is not None
    local = json.loads(row[0])
    return BinlogPosition(str(local["binary_log_file"]), int(local["binary_log_position"]))
