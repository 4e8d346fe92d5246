"""Tidemark's speed-up of ``mysql-replication`` 1.0.17: a repeated TABLE_MAP is parsed once.

Imported only by ``ingest.binlog.reader`` (the library's single boundary), which calls ``install()``
once. The server writes a TABLE_MAP event before every row event, so an OLTP binlog (one row
per event) carries one per row, byte for byte the same while the table keeps its structure and
its table id. The library parses each one in full (column types, metadata, names, charsets):
more than half of the time it spends on such a binlog. ``install`` wraps
``TableMapEvent.__init__`` so that an event whose body is the same bytes as one its stream
parsed before takes that parse instead; what belongs to the event itself (its header, packet
and timestamp) is still its own. Any change of structure changes the bytes, and so is parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pymysqlreplication.event import BinLogEvent
from pymysqlreplication.row_event import TableMapEvent

#: enough for every table of a busy server; the cache starts over when it is full
MAX_CACHED = 4096
#: where each stream's parses are kept: on its control connection, new with every stream
_CACHE = "_tidemark_table_maps"
#: what the library's parse sets beyond BinLogEvent's per-event attributes
_PER_EVENT = frozenset(
    (
        "packet",
        "table_map",
        "event_type",
        "timestamp",
        "event_size",
        "_ctl_connection",
        "_is_event_valid",
        "complete",
    )
)


def install() -> None:
    """Wrap the library's TABLE_MAP parse with the cache; safe to call again."""
    if getattr(TableMapEvent, "_tidemark_parse", None) is None:
        TableMapEvent._tidemark_parse = TableMapEvent.__init__
        TableMapEvent.__init__ = _cached_init


def _cached_init(
    event: Any,
    from_packet: Any,
    event_size: int,
    table_map: Any,
    ctl_connection: Any,
    **kwargs: Any,
) -> None:
    body = _body(from_packet, event_size)
    if body is None or kwargs.get("freeze_schema"):
        _library_parse(event, from_packet, event_size, table_map, ctl_connection, **kwargs)
        return
    # one cache per stream (its control connection), whose filters never change
    parsed_before: dict[bytes, dict[str, Any]] | None = getattr(ctl_connection, _CACHE, None)
    if parsed_before is None:
        parsed_before = {}
        setattr(ctl_connection, _CACHE, parsed_before)
    parsed = parsed_before.get(body)
    if parsed is None:
        _library_parse(event, from_packet, event_size, table_map, ctl_connection, **kwargs)
        if len(parsed_before) >= MAX_CACHED:
            parsed_before.clear()
        parsed_before[body] = {k: v for k, v in vars(event).items() if k not in _PER_EVENT}
        return
    BinLogEvent.__init__(event, from_packet, event_size, table_map, ctl_connection, **kwargs)
    vars(event).update(parsed)
    if event._processed:
        table_map[event.table_id] = event.table_obj


def _library_parse(event: Any, *args: Any, **kwargs: Any) -> None:
    parse: Callable[..., None] = TableMapEvent._tidemark_parse
    parse(event, *args, **kwargs)


def _body(from_packet: Any, event_size: int) -> bytes | None:
    """The event's body, unread, straight from the pymysql packet under the library's wrapper;
    None if the wrapper holds pushed-back bytes (the library never does before a TABLE_MAP)."""
    if getattr(from_packet, "_BinLogPacketWrapper__data_buffer", b""):
        return None
    packet = from_packet.packet
    start = packet._position
    return bytes(packet._data[start : start + event_size])
