"""The boundary with ``mysql-replication``: the only module that imports it.

It turns the library's events into Tidemark's own typed events: transactions, row changes and
statements, each with the binlog position just after it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Generator, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    GtidEvent,
    HeartbeatLogEvent,
    MariadbGtidEvent,
    QueryEvent,
    XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from ingest.binlog import corrections, event_wire, native_loop, row_decoders, table_map_cache
from ingest.binlog.events import (
    BinlogEvent,
    Heartbeat,
    Image,
    RowsChanged,
    StatementExecuted,
    TransactionCommitted,
    TransactionStarted,
)
from ingest.binlog.native_loop import column_names, table_structure
from tidemark.contracts.changelog import Operation
from tidemark.errors import TransientError
from tidemark.source import BinlogPosition, SourceConnection, open_connection

_OPERATIONS = {
    WriteRowsEvent: Operation.INSERT,
    UpdateRowsEvent: Operation.UPDATE,
    DeleteRowsEvent: Operation.DELETE,
}
#: what the native loop (``ingest.binlog.native_loop``) yields already as Tidemark's events (or, for
#: the reading process, as ``ingest.binlog.event_wire`` items)
_NATIVE = {TransactionStarted, TransactionCommitted, RowsChanged, tuple}
_EVENTS = [*_OPERATIONS, XidEvent, QueryEvent, GtidEvent, MariadbGtidEvent, HeartbeatLogEvent]


class StreamInterruptedError(TransientError):
    """The replication connection broke; resume from the last transaction boundary."""


class BinlogReader:
    """Reads the binlog from ``start`` on; stops at the current end unless ``follow``.

    MariaDB trap (docs/architecture.md#source-facts): with ``is_mariadb=True`` and no GTID the
    library ignores the file and offset and streams from the first binlog, and without
    ``resume_stream`` it restarts at offset 4. So a file/offset start is always a plain
    ``COM_BINLOG_DUMP`` with ``resume_stream``, which MariaDB serves like MySQL (GTID events
    included).

    The library reconnects by itself in the middle of a transaction; Tidemark resumes only at
    transaction boundaries, so a second stream connection raises ``StreamInterruptedError``
    instead, and the caller reopens a reader at its last boundary.
    """

    def __init__(
        self,
        source: SourceConnection,
        start: BinlogPosition,
        *,
        follow: bool = False,
        databases: Collection[str] | None = None,
        heartbeat_seconds: float | None = None,
        before_wait: Callable[[], None] | None = None,
    ) -> None:
        self._before_wait = before_wait
        self._stream = _stream(
            source,
            start,
            _EVENTS,
            follow=follow,
            databases=databases,
            heartbeat_seconds=heartbeat_seconds,
        )

    def events(self) -> Iterator[BinlogEvent]:
        return self._events(wire=False)

    def wire_events(self) -> Iterator[BinlogEvent | event_wire.Item]:
        """The events, the frequent kinds as ``ingest.binlog.event_wire`` items (made so
        directly)."""
        return self._events(wire=True)

    def _events(self, *, wire: bool) -> Iterator[Any]:
        try:
            for event in native_loop.events(self._stream, self._before_wait, wire=wire):
                if type(event) in _NATIVE:  # most events: no call to make
                    yield event
                    continue
                converted = self._convert(event)
                if converted is not None:
                    yield converted
        except (pymysql.OperationalError, pymysql.InterfaceError) as error:
            raise StreamInterruptedError(f"the binlog stream broke: {error}") from error

    def __iter__(self) -> Iterator[BinlogEvent]:
        return self.events()

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> BinlogReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _convert(self, event: Any) -> BinlogEvent | None:
        """Tidemark's event for one of the library's (the native loop yields Tidemark's own)."""
        kind = type(event)
        position = BinlogPosition(self._stream.log_file, self._stream.log_pos)
        time_ms = event.timestamp * 1000
        operation = _OPERATIONS.get(kind)
        if operation is not None:
            table = event.table_map[event.table_id]
            columns = column_names(table)
            return RowsChanged(
                database=event.schema,
                table=event.table,
                operation=operation,
                columns=columns,
                rows=[_images(operation, row, columns) for row in event.rows],
                position=position,
                event_time_ms=time_ms,
                structure=table_structure(table),
            )
        if isinstance(event, XidEvent):
            return TransactionCommitted(position, time_ms)
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            return TransactionStarted(str(event.gtid), position)
        if isinstance(event, QueryEvent):
            return _query(event, position, time_ms)
        if isinstance(event, HeartbeatLogEvent):
            return Heartbeat(position)
        return None


def _query(event: Any, position: BinlogPosition, time_ms: int) -> BinlogEvent | None:
    statement = event.query if isinstance(event.query, str) else event.query.decode()
    keyword = statement.strip().upper()
    if keyword == "BEGIN":
        return None
    if keyword == "COMMIT":  # non-transactional engines end their "transaction" so
        return TransactionCommitted(position, time_ms)
    schema = event.schema.decode() if isinstance(event.schema, bytes) else event.schema
    return StatementExecuted(schema, statement, position, time_ms)


def _images(
    operation: Operation, row: dict[str, Any], columns: tuple[str, ...]
) -> tuple[Image | None, Image | None]:
    """A row of the library's as (before, after) images of ``columns``' values."""
    if operation is Operation.UPDATE:
        return _image(row["before_values"], columns), _image(row["after_values"], columns)
    if operation is Operation.INSERT:
        return None, _image(row["values"], columns)
    return _image(row["values"], columns), None


def _image(values: dict[str, Any], columns: tuple[str, ...]) -> Image:
    return tuple(map(values.__getitem__, columns))


@dataclass(frozen=True)
class TransactionMark:
    """Where a transaction (or a standalone statement) begins, as a place to start reading."""

    #: the transaction boundary before it: a reader started here reads it whole
    start: BinlogPosition
    gtid: str | None
    #: the binlog timestamp of its GTID event: when its first statement started, in seconds
    event_time_ms: int


def transaction_marks(
    source: SourceConnection, start: BinlogPosition
) -> Generator[TransactionMark, None, None]:
    """Every transaction from ``start`` (a transaction boundary) to the binlog's current end,
    without decoding rows: what start modes that name a time or a GTID set search through."""
    stream = _stream(source, start, [XidEvent, QueryEvent, GtidEvent, MariadbGtidEvent])
    boundary = start
    try:
        for event in stream:
            here = BinlogPosition(stream.log_file, stream.log_pos)
            if here.file != boundary.file:
                # a new file begins with events outside any transaction
                boundary = BinlogPosition(here.file, 4)
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                yield TransactionMark(boundary, str(event.gtid), event.timestamp * 1000)
            elif isinstance(event, XidEvent) or (
                isinstance(event, QueryEvent) and _query(event, here, 0) is not None
            ):
                boundary = here
    except (pymysql.OperationalError, pymysql.InterfaceError) as error:
        raise StreamInterruptedError(f"the binlog stream broke: {error}") from error
    finally:
        stream.close()


def _stream(
    source: SourceConnection,
    start: BinlogPosition,
    events: list[type],
    *,
    follow: bool = False,
    databases: Collection[str] | None = None,
    heartbeat_seconds: float | None = None,
) -> BinLogStreamReader:
    """The library's reader from ``start``, avoiding the MariaDB position trap (see
    ``BinlogReader``) and its own reconnects."""
    return BinLogStreamReader(
        connection_settings=source.pymysql_settings(),
        server_id=source.server_id,
        log_file=start.file,
        log_pos=start.offset,
        resume_stream=True,
        blocking=follow,
        only_events=events,
        only_schemas=list(databases) if databases is not None else None,
        is_mariadb=False,
        slave_heartbeat=heartbeat_seconds,
        pymysql_wrapper=_SingleStreamConnection(),
    )


class _SingleStreamConnection:
    """Connection factory for the library: one stream connection, never a silent second."""

    def __init__(self) -> None:
        self._streams = 0

    def __call__(self, **settings: Any) -> pymysql.connections.Connection[Any]:
        is_stream = "cursorclass" not in settings  # the library's control connection sets one
        if is_stream:
            self._streams += 1
            if self._streams > 1:
                raise StreamInterruptedError(
                    "the binlog stream connection was lost; resuming from the last transaction"
                )
        if "db" in settings:  # the library still names it as PyMySQL no longer wants
            settings["database"] = settings.pop("db")
        return open_connection(**settings)


# --- Decoding corrections and speed-ups ----------------------------------------------------
# mysql-replication 1.0.17 decodes several column types wrongly
# (docs/architecture.md#source-facts); ingest/binlog/corrections.py replaces its per-column
# decoder. Row values then follow ingest/schema/values.py. ingest/binlog/table_map_cache.py parses
# a repeated TABLE_MAP once, and ingest/binlog/row_decoders.py decodes row images with a function
# compiled per table map.
corrections.install()
table_map_cache.install()
row_decoders.install()
