"""The event loop of the replication stream, with the events of a busy binlog read natively.

Imported only by ``ingest.binlog.reader`` (the library's single boundary). ``mysql-replication``
reads every event through the same heavy path: a pymysql packet object, a wrapper that parses the
header, an event object per event with its own filters. An OLTP binlog is made of four kinds
of small events, over and over: GTID, TABLE_MAP, one row event per statement, XID. ``events``
reads the stream's packets itself and decodes those four from the bytes, on MariaDB and MySQL:

- a GTID (MariaDB's, MySQL's or MySQL's anonymous one) or an XID: fields at fixed offsets;
- a TABLE_MAP whose bytes it has met before: the library's parse of them, kept;
- a row event (MariaDB's version 1, MySQL's version 2) of a table whose every column a
  compiled decoder reads by itself (``ingest.binlog.row_decoders``): decoded straight from the
  packet.

MySQL's BEGIN query after each GTID event is skipped here too. Its compressed transactions
(TRANSACTION_PAYLOAD) are opened first (``ingest.binlog.transaction_payload``), and the events
inside go through the same loop as if the server had sent them one by one. A partial JSON
update (``PARTIAL_UPDATE_ROWS``) of a table read stops the stream: its after image is not the
row.

Everything else (the first TABLE_MAP of a structure, rotations, format descriptions, queries,
heartbeats, row events with DECIMAL or date columns) goes to the library as its own
``fetchone`` would handle it, and comes back as a library event for ``ingest.binlog`` to
convert. The native ones come out as Tidemark's own events (``ingest.binlog.events``) straight
away: on an OLTP binlog every object made per event counts. The stream's state (file,
position, table map) stays the library's, so both paths agree on it.
"""

from __future__ import annotations

import functools
import select
import struct
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from pymysql.protocol import MysqlPacket
from pymysqlreplication.constants import BINLOG
from pymysqlreplication.packet import BinLogPacketWrapper

from ingest.binlog import event_wire, row_decoders, table_map, transaction_payload
from ingest.binlog.events import (
    BinlogEvent,
    Image,
    RowsChanged,
    TransactionCommitted,
    TransactionStarted,
)
from ingest.errors import PartialJsonUpdatesError, UnnamedColumnsError
from tidemark.contracts.changelog import Operation
from tidemark.contracts.source_tables import SourceTable
from tidemark.source import BinlogPosition

#: OK byte, then the event header: timestamp, type, server id, event size, next position, flags
_HEADER = struct.Struct("<xIBIIIH")
_HEADER_END = 20
_MAX_PACKET = 0xFFFFFF
#: bytes asked of the socket at a time
_READ_SIZE = 256 * 1024
_U64 = struct.Struct("<Q").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U16 = struct.Struct("<H").unpack_from
#: row events: MariaDB writes version 1, MySQL version 2 (an extra-data block after the flags)
_ROWS = {
    BINLOG.WRITE_ROWS_EVENT_V1: "write",
    BINLOG.UPDATE_ROWS_EVENT_V1: "update",
    BINLOG.DELETE_ROWS_EVENT_V1: "delete",
    BINLOG.WRITE_ROWS_EVENT_V2: "write",
    BINLOG.UPDATE_ROWS_EVENT_V2: "update",
    BINLOG.DELETE_ROWS_EVENT_V2: "delete",
}
_ROWS_V2 = frozenset(
    {BINLOG.WRITE_ROWS_EVENT_V2, BINLOG.UPDATE_ROWS_EVENT_V2, BINLOG.DELETE_ROWS_EVENT_V2}
)
_OPERATIONS = {"write": Operation.INSERT, "update": Operation.UPDATE, "delete": Operation.DELETE}
#: a row event of a table the schema filter leaves out: no layout, no rows
_FILTERED: tuple[None, list[Any]] = (None, [])
#: the library's names for its reader's private state
_PRIVATE = "_BinLogStreamReader__"
#: a structure met this many times: the cache starts over (a server with that many tables)
MAX_TABLE_MAPS = 4096


def events(
    stream: Any, before_wait: Callable[[], None] | None = None, *, wire: bool = False
) -> Iterator[BinlogEvent | event_wire.Item | Any]:
    """The events of ``stream`` (a ``BinLogStreamReader``, not yet read from): Tidemark's own
    for the hot kinds, the library's event objects for the rest, with ``stream.log_file`` and
    ``stream.log_pos`` just after each event when it is yielded. ``before_wait`` is called
    each time the stream has nothing more to read yet (events can be passed on in batches).
    With ``wire``, the hot kinds come out as ``ingest.binlog.event_wire`` items instead (the reading
    process sends them on as they are: no object is made for them)."""
    loop = _Loop(stream, before_wait, wire)
    yield from loop.run()


class _Loop:
    def __init__(self, stream: Any, before_wait: Callable[[], None] | None, wire: bool) -> None:
        self._stream = stream
        self._before_wait = before_wait
        self._wire = wire
        #: with ``wire``: the structures described so far (``event_wire.structure_key``)
        self._structures: event_wire.Structures = {}
        #: TABLE_MAP body -> (table id, the library's Table, or None when filtered out)
        self._table_maps: dict[bytes, tuple[int, Any]] = {}
        #: (table id, event type) -> how its row events are read, while the table map holds
        self._layouts: dict[tuple[int, int], _Layout] = {}

    def _private(self, name: str) -> Any:
        return getattr(self._stream, _PRIVATE + name)

    def run(self) -> Iterator[BinlogEvent | event_wire.Item | Any]:
        stream = self._stream
        if not self._private("connected_stream"):
            getattr(stream, _PRIVATE + "connect_to_stream")()
        if not self._private("connected_ctl"):
            getattr(stream, _PRIVATE + "connect_to_ctl")()
        connection = stream._stream_connection
        if connection._current_timeout != connection._read_timeout:
            connection._sock.settimeout(connection._read_timeout)
            connection._current_timeout = connection._read_timeout
        checksum = 4 if self._private("use_checksum") else 0
        read_payload = _uncompressing(_payload_reader(connection, self._before_wait), checksum)
        gtid_sources = _GtidSources()
        wire = self._wire
        while True:
            payload = read_payload()
            first = payload[0]
            if first == 0xFE and len(payload) < 9:  # EOF: the end of a non-blocking dump
                stream.close()
                return
            if first != 0:
                # an error packet: pymysql raises it as the server's error
                MysqlPacket(payload, connection.encoding).raise_for_error()
                continue
            timestamp, kind, server_id, _, log_pos, _ = _HEADER.unpack_from(payload)
            if kind == BINLOG.MARIADB_GTID_EVENT:
                sequence = _U64(payload, _HEADER_END)[0]
                domain = _U32(payload, _HEADER_END + 8)[0]
                stream.log_pos = log_pos
                gtid = f"{domain}-{server_id}-{sequence}"
                if wire:
                    yield (event_wire.STARTED, gtid, stream.log_file, log_pos)
                else:
                    yield TransactionStarted(gtid, BinlogPosition(stream.log_file, log_pos))
                continue
            if kind == BINLOG.GTID_LOG_EVENT or kind == BINLOG.ANONYMOUS_GTID_LOG_EVENT:
                stream.log_pos = log_pos
                mysql_gtid = (
                    None
                    if kind == BINLOG.ANONYMOUS_GTID_LOG_EVENT
                    else gtid_sources.gtid(payload, _HEADER_END + 1)
                )
                if wire:
                    yield (event_wire.STARTED, mysql_gtid, stream.log_file, log_pos)
                else:
                    yield TransactionStarted(mysql_gtid, BinlogPosition(stream.log_file, log_pos))
                continue
            if kind == BINLOG.QUERY_EVENT and _is_begin(payload, checksum):
                # MySQL's BEGIN after each GTID event (MariaDB's GTID event stands for it)
                stream.log_pos = log_pos
                continue
            if kind == BINLOG.XID_EVENT:
                stream.log_pos = log_pos
                if wire:
                    yield (event_wire.COMMITTED, stream.log_file, log_pos, timestamp * 1000)
                else:
                    position = BinlogPosition(stream.log_file, log_pos)
                    yield TransactionCommitted(position, timestamp * 1000)
                continue
            if kind == BINLOG.TABLE_MAP_EVENT:
                known = self._table_maps.get(payload[_HEADER_END : len(payload) - checksum])
                if known is not None:
                    table_id, table = known
                    if table is not None:
                        # not a local: a rotation gives the stream a new table map
                        stream.table_map[table_id] = table
                    stream.log_pos = log_pos
                    continue
            elif kind in _ROWS:
                decoded = self._rows(payload, kind, checksum)
                if decoded is not None:
                    stream.log_pos = log_pos
                    layout, rows = decoded
                    if layout is None:  # a table left out
                        continue
                    table = layout.table
                    if wire:
                        key, description = event_wire.structure_key(
                            layout.structure, self._structures
                        )
                        if description is not None:
                            yield description
                        yield (
                            event_wire.ROWS,
                            table.schema,
                            table.table,
                            layout.operation_index,
                            layout.columns,
                            rows,
                            stream.log_file,
                            log_pos,
                            timestamp * 1000,
                            key,
                        )
                    else:
                        yield RowsChanged(
                            database=table.schema,
                            table=table.table,
                            operation=layout.operation,
                            columns=layout.columns,
                            rows=rows,
                            position=BinlogPosition(stream.log_file, log_pos),
                            event_time_ms=timestamp * 1000,
                            structure=layout.structure,
                        )
                    continue
            elif kind == BINLOG.PARTIAL_UPDATE_ROWS_EVENT:
                table_id = int.from_bytes(payload[_HEADER_END : _HEADER_END + 6], "little")
                if table_id in stream.table_map:  # a table read, not one left out
                    raise PartialJsonUpdatesError(f"{stream.log_file}:{log_pos}")
            event = self._library_event(payload, checksum)
            if event is not None:
                yield event

    def _rows(
        self, payload: bytes, kind: int, checksum: int
    ) -> tuple[_Layout | None, list[tuple[Image | None, Image | None]]] | None:
        """A row event's layout and rows, decoded here (``_FILTERED`` for a table left out),
        or None to leave it to the library."""
        position = _HEADER_END
        table_id = int.from_bytes(payload[position : position + 6], "little")
        position += 8  # table id, flags
        if kind in _ROWS_V2:
            position += _U16(payload, position)[0]  # the extra data, its length included
        table = self._stream.table_map.get(table_id)
        if table is None:
            return _FILTERED
        layout = self._layouts.get((table_id, kind))
        if layout is None or layout.table is not table:
            layout = _Layout.of(table, kind)
            self._layouts[(table_id, kind)] = layout
        if layout.images is None:
            return None
        # the column count, then the columns-present bitmap(s): a full image of every column
        end = position + len(layout.prefix)
        if payload[position:end] != layout.prefix and payload[position:end] != layout.padded:
            return None
        return layout, layout.images(payload, end, len(payload) - checksum)

    def _library_event(self, payload: bytes, checksum: int) -> Any:
        """What the library's ``fetchone`` does with one packet: the event, or None."""
        stream = self._stream
        wrapper = BinLogPacketWrapper(
            MysqlPacket(payload, stream._stream_connection.encoding),
            stream.table_map,
            stream._ctl_connection,
            stream.mysql_version,
            self._private("use_checksum"),
            self._private("allowed_events_in_packet"),
            self._private("only_tables"),
            self._private("ignored_tables"),
            self._private("only_schemas"),
            self._private("ignored_schemas"),
            self._private("freeze_schema"),
            self._private("ignore_decode_errors"),
            self._private("verify_checksum"),
            self._private("optional_meta_data"),
            self._private("enable_logging"),
            self._private("use_column_name_cache"),
            self._private("post_header_lengths"),
        )
        event = wrapper.event
        if wrapper.event_type == BINLOG.ROTATE_EVENT:
            stream.log_pos = event.position
            stream.log_file = event.next_binlog
            if wrapper.timestamp != 0:  # table ids are not kept across a server restart
                stream.table_map = {}
        elif wrapper.log_pos:
            stream.log_pos = wrapper.log_pos
        if wrapper.event_type == BINLOG.FORMAT_DESCRIPTION_EVENT and event is not None:
            stream.mysql_version = event.mysql_version
            setattr(stream, _PRIVATE + "post_header_lengths", event.post_header_len)
        if wrapper.event_type == BINLOG.TABLE_MAP_EVENT:
            self._remember_table_map(payload, checksum, event)
        if event is None or event.__class__ not in self._private("allowed_events"):
            return None
        return event

    def _remember_table_map(self, payload: bytes, checksum: int, event: Any) -> None:
        if len(self._table_maps) >= MAX_TABLE_MAPS:
            self._table_maps.clear()
        body = payload[_HEADER_END : len(payload) - checksum]
        if event is None:  # filtered out by schema: its rows are skipped
            self._table_maps[body] = (int.from_bytes(body[:6], "little"), None)
            return
        table = event.get_table()
        self._stream.table_map[event.table_id] = table
        self._table_maps[body] = (event.table_id, table)


@dataclass(frozen=True)
class _Layout:
    table: Any
    operation: Operation
    #: the bytes a row event of the table starts with after its header when every column is
    #: present: the column count (one byte) and the full bitmap(s)
    prefix: bytes
    #: the same with the bitmaps' unused bits set too, as MySQL writes them
    padded: bytes
    images: row_decoders.StandaloneImages | None
    structure: Callable[[], SourceTable | None]
    #: the names of the images' values (``RowsChanged.columns``)
    columns: tuple[str, ...]
    #: the operation as ``ingest.binlog.event_wire`` sends it
    operation_index: int

    @classmethod
    def of(cls, table: Any, kind: int) -> _Layout:
        name = _ROWS[kind]
        operation = _OPERATIONS[name]
        count = len(table.columns)
        bitmaps = 2 if name == "update" else 1
        structure = table_structure(table)
        index = event_wire.OPERATION_INDEX[operation]
        columns = column_names(table)
        if count >= 251:  # a length-coded count of more bytes: left to the library
            return cls(table, operation, b"", b"", None, structure, columns, index)
        bitmap = row_decoders.all_present(count)
        prefix = bytes([count]) + bitmap * bitmaps
        padded = bytes([count]) + b"\xff" * len(bitmap) * bitmaps
        images = row_decoders.standalone_images(table, name)
        return cls(table, operation, prefix, padded, images, structure, columns, index)


def column_names(table: Any) -> tuple[str, ...]:
    """``RowsChanged.columns`` for the library's Table of a table map: one tuple per table,
    shared by its events (the schema tracker knows it by identity, ``marshal`` sends it once
    per batch)."""
    names: tuple[str, ...] | None = getattr(table, "_tidemark_columns", None)
    if names is None:
        names = tuple(column.name for column in table.columns)
        if None in names:
            raise UnnamedColumnsError(table.schema, table.table)
        table._tidemark_columns = names
    return names


def table_structure(table: Any) -> Callable[[], SourceTable | None]:
    """``RowsChanged.structure`` for the library's Table of a table map, made once per table."""
    describe: Callable[[], SourceTable | None] | None = getattr(table, "_tidemark_structure", None)
    if describe is None:
        describe = functools.partial(structure, table.schema, table.table, table.columns)
        table._tidemark_structure = describe
    return describe


def structure(database: str, table: str, columns: list[Any]) -> SourceTable | None:
    """The structure a TABLE_MAP describes (``ingest.binlog.table_map``); None when a type needs
    information_schema to be described."""
    try:
        return table_map.structure(database, table, columns)
    except ValueError:
        return None


#: a QUERY event's fixed part: thread id, seconds, database name length, error code, status
#: variables' length
_QUERY_POST_HEADER = 13
_BEGIN = b"BEGIN"


def _is_begin(payload: bytes, checksum: int) -> bool:
    """Whether a QUERY event's statement is ``BEGIN``."""
    end = len(payload) - checksum
    if payload[end - 5 : end] != _BEGIN:
        return False
    database_length = payload[_HEADER_END + 8]
    status_length = _U16(payload, _HEADER_END + 11)[0]
    statement = _HEADER_END + _QUERY_POST_HEADER + status_length + database_length + 1
    return statement == end - len(_BEGIN)


class _GtidSources:
    """MySQL GTIDs as text (``uuid:number``), the source's UUID formatted once per source."""

    def __init__(self) -> None:
        self._uuids: dict[bytes, str] = {}

    def gtid(self, payload: bytes, at: int) -> str:
        """The GTID of the GTID event in ``payload`` whose source UUID starts at ``at``."""
        sid = payload[at : at + 16]
        uuid = self._uuids.get(sid)
        if uuid is None:
            nibbles = sid.hex()
            uuid = self._uuids[sid] = "-".join(
                (nibbles[:8], nibbles[8:12], nibbles[12:16], nibbles[16:20], nibbles[20:])
            )
        return f"{uuid}:{_U64(payload, at + 16)[0]}"


def _uncompressing(read_payload: Callable[[], bytes], checksum: int) -> Callable[[], bytes]:
    """``read_payload``, with each TRANSACTION_PAYLOAD packet replaced by the events inside it,
    each as the server would have sent it alone (``transaction_payload.packets``)."""
    queued: deque[bytes] = deque()
    decompressor = transaction_payload.decompressor()
    is_payload = transaction_payload.is_payload
    unpack = transaction_payload.packets

    def read() -> bytes:
        if queued:
            return queued.popleft()
        payload = read_payload()
        while is_payload(payload):
            queued.extend(unpack(payload, checksum, decompressor))
            if queued:
                return queued.popleft()
            payload = read_payload()
        return payload

    return read


def _payload_reader(
    connection: Any, before_wait: Callable[[], None] | None = None
) -> Callable[[], bytes]:
    """Reads one whole MySQL packet's payload from the stream connection, as pymysql's
    ``_read_packet`` does (sequence numbers, packets of 16 MB and more) without building a
    packet object. It reads the socket in large chunks and cuts packets out of them itself;
    ``before_wait`` is called whenever the next read would wait for the server."""
    rfile = connection._rfile
    sock = connection._sock
    ready = select.poll()
    ready.register(sock, select.POLLIN)
    #: decrypted bytes a TLS socket holds that the file descriptor no longer shows
    pending = getattr(sock, "pending", lambda: 0)
    buffered = b""
    at = 0

    def fill(need: int) -> None:
        # ``read1`` returns what pymysql's own buffer still holds, else one read of the
        # socket: pymysql's buffer is always empty after it, so polling the socket tells
        # whether the server has sent more
        nonlocal buffered, at
        chunks = [buffered[at:]]
        have = len(chunks[0])
        while have < need:
            if before_wait is not None and not (ready.poll(0) or pending()):
                before_wait()
            try:
                chunk: bytes = rfile.read1(_READ_SIZE)
            except OSError as error:
                connection._force_close()
                raise _lost(0, 0, f"({error})") from error
            if not chunk:
                connection._force_close()
                raise _lost(0, 0)
            chunks.append(chunk)
            have += len(chunk)
        buffered = b"".join(chunks)
        at = 0

    def read_payload() -> bytes:
        nonlocal at
        parts: list[bytes] = []
        while True:
            if len(buffered) - at < 4:
                fill(4)
            length = buffered[at] | buffered[at + 1] << 8 | buffered[at + 2] << 16
            sequence = buffered[at + 3]
            if sequence != connection._next_seq_id:
                connection._force_close()
                raise _lost(sequence, connection._next_seq_id)
            connection._next_seq_id = (sequence + 1) % 256
            if len(buffered) - at - 4 < length:
                fill(4 + length)
            start = at + 4
            at = start + length
            part = buffered[start:at]
            if length < _MAX_PACKET:
                if not parts:
                    return part
                parts.append(part)
                return b"".join(parts)
            parts.append(part)

    return read_payload


def _lost(got: int, expected: int, detail: str = "") -> Exception:
    import pymysql

    if got == 0:  # MariaDB sends its shutdown error with sequence number 0
        return pymysql.OperationalError(
            2013, f"Lost connection to MySQL server during query {detail}".strip()
        )
    return pymysql.InternalError(f"Packet sequence number wrong - got {got} expected {expected}")
