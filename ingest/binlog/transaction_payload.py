"""MySQL's compressed transactions (``binlog_transaction_compression=ON``, MySQL 8.0.20+).

A TRANSACTION_PAYLOAD event holds every event of one transaction after its GTID event (the
BEGIN query, table maps, row events, the XID), each a whole event with its 19-byte header and
no checksum, compressed together with zstd. Its body starts with fields, each a type and a
length as length-encoded integers and a value of that many bytes, up to a type 0; the
compressed bytes follow. The events inside carry no position (``log_pos`` 0): they all end
where the payload event does.

The only module that imports ``zstandard``.
"""

from __future__ import annotations

from collections.abc import Iterator

import zstandard

from tidemark.errors import TerminalError

#: the event's type code (TRANSACTION_PAYLOAD_EVENT)
EVENT_TYPE = 40
_HEADER_END_MARK, _PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE = range(4)
_ZSTD, _NONE = 0, 255
_EVENT_SIZE_OFFSET = 9  # timestamp, type, server id, then the event's size


class UnreadablePayloadError(TerminalError):
    """A TRANSACTION_PAYLOAD event this reader cannot open."""


def inner_events(
    body: bytes | memoryview, decompressor: zstandard.ZstdDecompressor | None = None
) -> Iterator[memoryview]:
    """The events inside a TRANSACTION_PAYLOAD event's ``body`` (after the event header,
    without the checksum), in order, each from its header to its end. A stream passes its own
    ``decompressor``: making one takes ten times as long as opening a small transaction."""
    fields, start = _fields(body)
    compression = fields.get(_COMPRESSION_TYPE, _ZSTD)
    end = start + fields.get(_PAYLOAD_SIZE, len(body) - start)
    if compression == _NONE:
        events = memoryview(body)[start:end]
    elif compression == _ZSTD:
        size = fields.get(_UNCOMPRESSED_SIZE, 0)
        decompressor = decompressor or zstandard.ZstdDecompressor()
        events = memoryview(decompressor.decompress(body[start:end], max_output_size=size))
    else:
        raise UnreadablePayloadError(
            f"a compressed transaction uses compression type {compression}, which this "
            "version of Tidemark cannot read (it reads zstd, MySQL's only one today); set "
            "binlog_transaction_compression = OFF on the source and report the server's version"
        )
    position = 0
    while position < len(events):
        size = int.from_bytes(events[position + _EVENT_SIZE_OFFSET : position + 13], "little")
        if size < 19 or position + size > len(events):
            raise UnreadablePayloadError(
                f"a compressed transaction's event at byte {position} of {len(events)} claims "
                f"{size} bytes: the payload is damaged; restart ingest to read it again"
            )
        yield events[position : position + size]
        position += size


def decompressor() -> zstandard.ZstdDecompressor:
    """A decompressor for one stream's payloads, to reuse (not shared between threads)."""
    return zstandard.ZstdDecompressor()


def _fields(body: bytes | memoryview) -> tuple[dict[int, int], int]:
    """The header fields (type -> integer value) and where the payload starts."""
    fields: dict[int, int] = {}
    position = 0
    while True:
        kind, position = _length_encoded(body, position)
        if kind == _HEADER_END_MARK:
            return fields, position
        length, position = _length_encoded(body, position)
        fields[kind], _ = _length_encoded(body, position)
        position += length


def _length_encoded(data: bytes | memoryview, position: int) -> tuple[int, int]:
    """A MySQL length-encoded integer at ``position``, and the position after it."""
    first = data[position]
    if first < 0xFB:
        return first, position + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if width is None:
        raise UnreadablePayloadError(
            f"a compressed transaction's header has the byte {first:#x} where a length "
            "belongs: the payload is damaged; restart ingest to read it again"
        )
    value = int.from_bytes(data[position + 1 : position + 1 + width], "little")
    return value, position + 1 + width
