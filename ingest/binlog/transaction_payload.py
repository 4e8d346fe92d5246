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

import struct

import zstandard

from tidemark.errors import TerminalError

#: the event's type code (TRANSACTION_PAYLOAD_EVENT)
EVENT_TYPE = 40
_HEADER_END_MARK, _PAYLOAD_SIZE, _COMPRESSION_TYPE, _UNCOMPRESSED_SIZE = range(4)
_ZSTD, _NONE = 0, 255
#: in a packet of the replication stream: the OK byte, then the event's 19-byte header
_PACKET_HEADER_END = 20
_PACKET_LOG_POS = 14
#: in an event: timestamp and type and server id, then its size and its next position
_SIZE_AT = 9
_SIZE = struct.Struct("<I")
_SIZE_AND_LOG_POS = struct.Struct("<II")


class UnreadablePayloadError(TerminalError):
    """A TRANSACTION_PAYLOAD event this reader cannot open."""


def is_payload(packet: bytes) -> bool:
    """Whether a replication stream packet is a TRANSACTION_PAYLOAD event."""
    return len(packet) > _PACKET_HEADER_END and packet[0] == 0 and packet[5] == EVENT_TYPE


def packets(
    packet: bytes, checksum: int, decompressor: zstandard.ZstdDecompressor | None = None
) -> list[bytes]:
    """The events inside a TRANSACTION_PAYLOAD ``packet`` of the replication stream, in order,
    each as the server would have sent it alone: the OK byte, then the event with the payload
    event's end position as its own (every event inside ends where the payload does) and, on a
    stream with a ``checksum`` that long, as many zero bytes where the checksum goes (checksums
    are never verified here).

    The headers are rewritten in the uncompressed buffer, then each packet is one copy of its
    event: a transaction of OLTP statements holds a dozen small events, and a packet made of
    six slices joined cost more than reading the event did. A stream passes its own
    ``decompressor``: making one takes ten times as long as opening a small transaction."""
    body_end = len(packet) - checksum
    fields, start = _fields(packet, _PACKET_HEADER_END)
    compression = fields.get(_COMPRESSION_TYPE, _ZSTD)
    end = min(start + fields.get(_PAYLOAD_SIZE, body_end - start), body_end)
    if compression == _NONE:
        events = bytearray(packet[start:end])
    elif compression == _ZSTD:
        size = fields.get(_UNCOMPRESSED_SIZE, 0)
        decompressor = decompressor or zstandard.ZstdDecompressor()
        try:
            events = bytearray(decompressor.decompress(packet[start:end], max_output_size=size))
        except zstandard.ZstdError as error:
            raise UnreadablePayloadError(
                f"a compressed transaction does not decompress ({error}): the payload is "
                "damaged; restart ingest to read it again"
            ) from error
    else:
        raise UnreadablePayloadError(
            f"a compressed transaction uses compression type {compression}, which this "
            "version of Tidemark cannot read (it reads zstd, MySQL's only one today); set "
            "binlog_transaction_compression = OFF on the source and report the server's version"
        )
    log_pos = _SIZE.unpack_from(packet, _PACKET_LOG_POS)[0]
    trailer = bytes(checksum)
    read_size = _SIZE.unpack_from
    write_size_and_log_pos = _SIZE_AND_LOG_POS.pack_into
    inside: list[bytes] = []
    position = 0
    total = len(events)
    while position < total:
        size = read_size(events, position + _SIZE_AT)[0] if position + 13 <= total else 0
        if size < 19 or position + size > total:
            raise UnreadablePayloadError(
                f"a compressed transaction's event at byte {position} of {total} claims "
                f"{size} bytes: the payload is damaged; restart ingest to read it again"
            )
        write_size_and_log_pos(events, position + _SIZE_AT, size + checksum, log_pos)
        inside.append(b"".join((b"\0", events[position : position + size], trailer)))
        position += size
    return inside


def decompressor() -> zstandard.ZstdDecompressor:
    """A decompressor for one stream's payloads, to reuse (not shared between threads)."""
    return zstandard.ZstdDecompressor()


def _fields(data: bytes, position: int) -> tuple[dict[int, int], int]:
    """The header fields from ``position`` on (type -> integer value), and where the payload
    starts. A field's type and length are always one byte, and only the sizes need more:
    read inline, as a call for every number cost as much as the decompression."""
    fields: dict[int, int] = {}
    try:
        while True:
            kind = data[position]
            if kind == _HEADER_END_MARK:
                return fields, position + 1
            length = data[position + 1]
            value = data[position + 2]
            if kind >= 0xFB or length >= 0xFB:
                raise UnreadablePayloadError(
                    f"a compressed transaction's header has the byte {max(kind, length):#x} "
                    "where a field's type or length belongs: the payload is damaged; restart "
                    "ingest to read it again"
                )
            fields[kind] = value if value < 0xFB else _length_encoded(data, position + 2)
            position += 2 + length
    except IndexError:
        raise UnreadablePayloadError(
            "a compressed transaction's header ends before its end mark: the payload is "
            "damaged; restart ingest to read it again"
        ) from None


def _length_encoded(data: bytes, position: int) -> int:
    """The MySQL length-encoded integer of more than one byte at ``position``."""
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(data[position])
    if width is None or position + 1 + width > len(data):
        raise UnreadablePayloadError(
            f"a compressed transaction's header has the byte {data[position]:#x} where a "
            "number belongs: the payload is damaged; restart ingest to read it again"
        )
    return int.from_bytes(data[position + 1 : position + 1 + width], "little")
