"""Reading a table's existing rows without locks, in primary-key chunks, from one read view.

``START TRANSACTION WITH CONSISTENT SNAPSHOT`` opens an InnoDB read view; on MariaDB (and
Percona Server) the status variables ``binlog_snapshot_file``/``binlog_snapshot_position`` then
give the binlog position that matches it exactly (docs/architecture.md#source-facts): every
transaction committed before that position is visible, none after. No table lock is taken; the
server only keeps the old row versions the view needs.

Chunks are keyset pages (``WHERE key > last ORDER BY key LIMIT n``), each fetched whole: a page
is small, and a query result left open while the caller commits to Iceberg could hit the
server's ``net_write_timeout``. Keys are compared by the server, in its collation, never in
Python.

``SnapshotLender`` lends a snapshot to the next table while it is young: many small tables are
then read in one read view instead of one each.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from ingest.schema.select_values import SelectColumn, quote_identifier, select_column
from tidemark.bulk_reads import (
    BulkConnection,
    ReadError,
    error_code,
    open_bulk_connection,
    streaming_cursor,
)
from tidemark.contracts.source_tables import SourceTable
from tidemark.errors import TerminalError
from tidemark.source import BinlogPosition, SourceConnection

logger = logging.getLogger(__name__)

KeyValues = tuple[Any, ...]

#: ER_TABLE_DEF_CHANGED: the table was rebuilt (ALTER) after the read view opened
_TABLE_DEFINITION_CHANGED = 1412
#: ER_BAD_FIELD_ERROR: a column the statement names is not in the table (any more)
_NO_SUCH_COLUMN = 1054


@dataclass(frozen=True)
class Chunk:
    rows: list[tuple[Any, ...]]
    #: the chunk's last key, to start the next one after; None when the table is read whole
    last_key: KeyValues | None


class ReadView:
    """One connection and one InnoDB read view, read a table at a time: what every server
    gives. ``tidemark verify`` needs no more; a bootstrap needs ``ConsistentSnapshot``. Its
    connection runs in the MySQL ``resource_group`` when one is given (``tidemark.bulk_reads``).
    """

    def __init__(self, source: SourceConnection, resource_group: str | None = None) -> None:
        self._source = source
        self._resource_group = resource_group
        self._conn: BulkConnection | None = None
        self.read_at = datetime.fromtimestamp(0, UTC)
        #: the tables lent it so far (``SnapshotLender``), the one being read included
        self.tables = 0

    def __enter__(self) -> Self:
        conn = open_bulk_connection(
            self._source, autocommit=False, resource_group=self._resource_group
        )
        self._conn = conn
        try:
            with conn.cursor() as cursor:
                cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
                self._opened(cursor)
                self.read_at = server_now(cursor)
        except BaseException:
            self.close()
            raise
        return self

    def _opened(self, cursor: Any) -> None:  # noqa: B027 - a hook, empty here
        """Called inside the new read view's transaction, before anything is read."""

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ends the read view and closes the connection."""
        if self._conn is not None:
            try:
                self._conn.rollback()
                self._conn.close()
            except ReadError:
                pass  # the connection is gone already; the read view went with it
            self._conn = None

    def chunks(
        self,
        table: SourceTable,
        key: Sequence[str],
        *,
        after: KeyValues | None,
        chunk_size: int,
    ) -> Iterator[Chunk]:
        """The table's rows after ``after`` (from the start when None), in key order, a chunk
        at a time; columns in the table's order, as ``select_values`` selects them."""
        columns = [select_column(column) for column in table.columns]
        positions = [[c.name for c in table.columns].index(name) for name in key]
        while True:
            query, params = _page_query(table, columns, key, after, chunk_size)
            with self._connection().cursor() as cursor:
                cursor.execute(query, params)
                rows = list(cursor.fetchall())
            if not rows:
                return
            after = tuple(rows[-1][i] for i in positions)
            yield Chunk(rows, after)
            if len(rows) < chunk_size:
                return

    def whole(self, table: SourceTable, batch_size: int) -> Iterator[Chunk]:
        """A table without a usable key, in batches of one unordered read."""
        columns = [select_column(column) for column in table.columns]
        query = f"SELECT {_select_list(columns)} FROM {_table_name(table)}"
        cursor = streaming_cursor(self._connection())
        try:
            cursor.execute(query)
            while rows := list(cursor.fetchmany(batch_size)):
                yield Chunk(rows, None)
        finally:
            cursor.close()

    def _connection(self) -> BulkConnection:
        if self._conn is None:
            raise RuntimeError("the snapshot is not open")
        return self._conn


class ConsistentSnapshot(ReadView):
    """A read view and the binlog position it matches: MariaDB's and Percona Server's."""

    def __init__(self, source: SourceConnection, resource_group: str | None = None) -> None:
        super().__init__(source, resource_group)
        self.position = BinlogPosition("", 0)

    def _opened(self, cursor: Any) -> None:
        self.position = snapshot_position(cursor, self._source)
        logger.debug("Consistent snapshot at %s", self.position)

    @property
    def high_watermark(self) -> BinlogPosition:
        """After every transaction the reads see: the snapshot's own position."""
        return self.position


def server_now(cursor: Any) -> datetime:
    """The server's clock, in UTC: when the rows read next are as they stand."""
    cursor.execute("SELECT UTC_TIMESTAMP(6)")
    row = cursor.fetchone()
    assert row is not None
    return row[0].replace(tzinfo=UTC)


def snapshot_position(cursor: Any, source: SourceConnection) -> BinlogPosition:
    """The binlog position of the consistent snapshot the transaction of ``cursor`` opened
    (MariaDB's and Percona Server's ``binlog_snapshot_file``/``_position``)."""
    cursor.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
    status = {str(name).lower(): value for name, value in cursor.fetchall()}
    if not status.get("binlog_snapshot_file"):
        raise TerminalError(
            f"{source.host}:{source.port} does not report the binlog position of a consistent "
            "snapshot (binlog_snapshot_file), which a bootstrap in one snapshot needs (MariaDB "
            "and Percona Server report it): set scan.incremental.snapshot.enabled: true in the "
            "pipeline's source block"
        )
    return BinlogPosition(
        str(status["binlog_snapshot_file"]), int(status["binlog_snapshot_position"])
    )


class SnapshotLender:
    """Consistent snapshots lent to readers one table at a time, and lent again while young.

    Opening a snapshot costs a connection and five statements: over a thousand ten-row tables,
    more than reading them. Reading a table in a snapshot opened for an earlier one is as exact
    as in its own: its rows are the source's state at that snapshot's position, where its
    stream starts (``ingest.bootstrap.bootstrapper``). What the source pays for it is the old
    row versions a read view keeps, and the metadata locks its transaction holds on every table
    read in it until it ends (an ALTER TABLE of one waits for them, and writers queue behind
    the ALTER). So a snapshot is lent again only up to ``max_age`` seconds after it opened, and
    a borrower reads only a table of one page in a snapshot already used (the bootstrapper
    borrows one of its ``own`` for a longer table): those locks last at most ``max_age`` plus
    one small table's read and commit. Readers in parallel each borrow their own. A snapshot
    whose borrower failed is closed, never lent again: its connection may be mid-result or
    gone."""

    def __init__(
        self,
        source: SourceConnection,
        max_age: float,
        clock: Callable[[], float],
        resource_group: str | None = None,
    ) -> None:
        self._source = source
        self._resource_group = resource_group
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        #: snapshots not lent out, with the time each opened
        self._idle: list[tuple[float, ConsistentSnapshot]] = []

    @contextmanager
    def lend(self, *, own: bool = False) -> Iterator[ConsistentSnapshot]:
        """A snapshot for one table: a young one given back by an earlier table, or with
        ``own`` (for a table longer than a page) a new one; then idle ones are closed, as a long
        read may keep every reader from coming back for them."""
        if own:
            self.close()
        opened, snapshot = (None if own else self._young_idle()) or self._open()
        snapshot.tables += 1
        try:
            yield snapshot
        except BaseException:
            snapshot.close()
            raise
        self._give_back(opened, snapshot)

    def close(self) -> None:
        """Closes every snapshot not lent out."""
        with self._lock:
            idle, self._idle = self._idle, []
        for _, snapshot in idle:
            snapshot.close()

    def _young_idle(self) -> tuple[float, ConsistentSnapshot] | None:
        with self._lock:
            now = self._clock()
            stale = [entry for entry in self._idle if now - entry[0] >= self._max_age]
            self._idle = [entry for entry in self._idle if entry not in stale]
            chosen = self._idle.pop() if self._idle else None
        for _, snapshot in stale:
            snapshot.close()
        return chosen

    def _open(self) -> tuple[float, ConsistentSnapshot]:
        opened = self._clock()
        return opened, ConsistentSnapshot(self._source, self._resource_group).__enter__()

    def _give_back(self, opened: float, snapshot: ConsistentSnapshot) -> None:
        if not self._young(opened):
            snapshot.close()  # its read view ends now, not when a next table would come
            return
        with self._lock:
            self._idle.append((opened, snapshot))

    def _young(self, opened: float) -> bool:
        return self._clock() - opened < self._max_age


def changed_since_opened(error: BaseException) -> bool:
    """Whether ``error`` says the table read was rebuilt after the snapshot opened: InnoDB
    refuses to read it in that read view (the first statement on it fails, nothing read)."""
    return error_code(error) == _TABLE_DEFINITION_CHANGED


def column_gone(error: BaseException) -> bool:
    """Whether ``error`` says a column the read names is not in the table: dropped or renamed
    by an ``ALTER TABLE`` between two chunks of the incremental snapshot."""
    return error_code(error) == _NO_SUCH_COLUMN


def _page_query(
    table: SourceTable,
    columns: Sequence[SelectColumn],
    key: Sequence[str],
    after: KeyValues | None,
    limit: int,
) -> tuple[str, list[Any]]:
    where, params = key_range(key, after, None)
    query = (
        f"SELECT {_select_list(columns)} FROM {_table_name(table)}{where} "
        f"ORDER BY {_order(key)} LIMIT {int(limit)}"
    )
    return query, params


def range_query(
    table: SourceTable,
    columns: Sequence[SelectColumn],
    key: Sequence[str],
    after: KeyValues | None,
    upto: KeyValues | None,
) -> tuple[str, list[Any]]:
    """The rows whose key is after ``after`` and up to ``upto`` (either open when None), in
    key order."""
    where, params = key_range(key, after, upto)
    query = (
        f"SELECT {_select_list(columns)} FROM {_table_name(table)}{where} ORDER BY {_order(key)}"
    )
    return query, params


def boundary_query(
    table: SourceTable, key: Sequence[str], after: KeyValues | None, rows: int
) -> tuple[str, list[Any]]:
    """The key of the ``rows``-th row after ``after``: where a chunk of that many rows ends.
    The server walks the key's index without sending the rows."""
    where, params = key_range(key, after, None)
    names = ", ".join(quote_identifier(name) for name in key)
    query = (
        f"SELECT {names} FROM {_table_name(table)}{where} ORDER BY {_order(key)} "
        f"LIMIT 1 OFFSET {int(rows) - 1}"
    )
    return query, params


def bounds_query(table: SourceTable, column: str) -> str:
    """The least and the largest value of ``column``: the ends of its index."""
    name = quote_identifier(column)
    return f"SELECT MIN({name}), MAX({name}) FROM {_table_name(table)}"


def key_range(
    key: Sequence[str], after: KeyValues | None, upto: KeyValues | None
) -> tuple[str, list[Any]]:
    """A ``WHERE`` clause for ``after < key <= upto`` (each bound left out when None), tuples
    compared spelled out: every optimizer turns ``(k1 = a AND k2 > b) OR k1 > a`` into a key
    range, not all turn a row comparison into one."""
    terms: list[str] = []
    params: list[Any] = []
    if after is not None:
        clause, values = _beyond(key, after, ">", ">")
        terms.append(clause)
        params += values
    if upto is not None:
        clause, values = _beyond(key, upto, "<", "<=")
        terms.append(clause)
        params += values
    return (" WHERE " + " AND ".join(terms) if terms else ""), params


def _beyond(
    key: Sequence[str], values: KeyValues, operator: str, last: str
) -> tuple[str, list[Any]]:
    """``key <operator> values`` for a tuple key: ``last`` compares the final column (``<=``
    for an inclusive bound)."""
    alternatives = []
    params: list[Any] = []
    for length in range(1, len(key) + 1):
        terms = [f"{quote_identifier(name)} = %s" for name in key[: length - 1]]
        compare = last if length == len(key) else operator
        terms.append(f"{quote_identifier(key[length - 1])} {compare} %s")
        alternatives.append("(" + " AND ".join(terms) + ")")
        params.extend(values[:length])
    return "(" + " OR ".join(alternatives) + ")", params


def _order(key: Sequence[str]) -> str:
    return ", ".join(quote_identifier(name) for name in key)


def _select_list(columns: Sequence[SelectColumn]) -> str:
    return ", ".join(column.expression for column in columns)


def _table_name(table: SourceTable) -> str:
    return f"{quote_identifier(table.database)}.{quote_identifier(table.name)}"
