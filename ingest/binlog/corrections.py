"""Tidemark's corrections to how ``mysql-replication`` 1.0.17 decodes column values.

Imported only by ``ingest.binlog.reader`` (the library's single boundary), which calls ``install()``
once. ``install`` replaces the library's per-column decoder (``RowsEvent.__read_values_name``)
with ``_read_value``: the column types below are read from the row image bytes here, following
the server's own formats (MySQL ``my_time.cc``, MariaDB ``sql_type.cc``); every other type goes
to the library's decoder unchanged. The values it produces are listed in ``ingest.schema.values``.

Defects of 1.0.17 corrected here (each one shown by ``tests/ingest/binlog/test_corrections.py``
against the real server):

- YEAR 0000 comes back as 1900: it is 0.
- Negative TIME with a fraction is wrong by up to a second (``-00:00:00.000001`` comes back
  as ``-00:00:00.999999``): the fraction of a negative TIME is stored complemented.
- Zero and partly-zero dates (``0000-00-00``, ``2020-00-15``) come back as None, like NULL, and
  an impossible day (``2020-02-30`` under ALLOW_INVALID_DATES) stops the stream with a
  ValueError: they are ``InvalidTemporal`` holding the server's text.
- A zero TIMESTAMP comes back as 1970-01-01 00:00:00 and others as naive datetimes: zero is an
  ``InvalidTemporal``, others are datetimes in UTC.
- BIT(n) comes back as a string of '0' and '1': it is an ``int``.
- An empty SET comes back as None, like NULL, and ENUM/SET members that are not UTF-8 (a latin1
  'é') come back as '': ENUM is its index and SET its bitmask.
- Text in latin1 with the bytes 0x81, 0x8D, 0x8F, 0x90 or 0x9D stops the stream with a
  UnicodeDecodeError, utf16 and utf32 text is decoded as little-endian (garbage or an error),
  and ucs2 and utf16le text comes back as bytes: text is decoded with ``ingest.schema.charsets``.
- An empty binary string comes back as ``str`` (Python skips the codec lookup that turns the
  others into bytes): binary strings are always ``bytes``.
- MySQL JSON comes back as Python objects with ``bytes`` keys and strings, and misread opaque
  values: it is JSON text, as MySQL prints it (``ingest.binlog.mysql_json``).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
from collections.abc import Callable
from typing import Any

from pymysqlreplication.bitmap import BitGet
from pymysqlreplication.constants import FIELD_TYPE
from pymysqlreplication.row_event import RowsEvent

from ingest.binlog.mysql_json import json_text
from ingest.errors import IngestError
from ingest.schema.charsets import charset_of_collation, codec, decoder
from ingest.schema.values import InvalidTemporal, UndecodableText

LIBRARY_VERSION = "1.0.17"
_PATCHED = "_RowsEvent__read_values_name"

Reader = Callable[[Any, Any], Any]  # (packet, column) -> value


def install() -> None:
    """Replace the library's column decoder with ``_read_value``; safe to call again."""
    installed = importlib.metadata.version("mysql-replication")
    if installed != LIBRARY_VERSION:
        raise IngestError(
            f"mysql-replication {installed} is installed, but Tidemark's decoding corrections "
            f"(ingest/binlog/corrections.py) are written for {LIBRARY_VERSION}: install "
            f"mysql-replication=={LIBRARY_VERSION}"
        )
    RowsEvent._tidemark_library_read = _library_read
    setattr(RowsEvent, _PATCHED, _read_value)


#: the library's own decoder (kept on the class, so a second import of this module finds it)
_library_read: Callable[..., Any] = getattr(
    RowsEvent, "_tidemark_library_read", getattr(RowsEvent, _PATCHED)
)


def _read_value(
    event: Any,
    column: Any,
    null_bitmap: bytes,
    null_bitmap_index: int,
    is_partial: bool,
    cols_bitmap: bytes,
    unsigned: bool,
    i: int,
) -> Any:
    """The library's ``__read_values_name`` with our readers for the types they cover; NULLs,
    partial JSON updates (the library's JsonDiff) and other types go to the library."""
    reader = _READERS.get(column.type)
    if (
        reader is not None
        and not is_partial
        and BitGet(cols_bitmap, i)
        and not event._is_null(null_bitmap, null_bitmap_index)
    ):
        return reader(event.packet, column)
    return _library_read(
        event, column, null_bitmap, null_bitmap_index, is_partial, cols_bitmap, unsigned, i
    )


# --- numbers and bits ---------------------------------------------------------------------


def _year(packet: Any, column: Any) -> int:
    value: int = packet.read_uint8()
    return value + 1900 if value else 0


def _bit(packet: Any, column: Any) -> int:
    return int.from_bytes(packet.read(column.bytes), "big")


def _member_number(packet: Any, column: Any) -> int:
    number: int = packet.read_uint_by_size(column.size)
    return number


# --- dates and times ----------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TIMEF_INT_OFS = 0x800000
_TIMEF_OFS = 0x800000000000
_DATETIMEF_INT_OFS = 0x8000000000


def _fraction(packet: Any, fsp: int) -> int:
    """Microseconds of a DATETIME2 or TIMESTAMP2 value (never negative)."""
    if fsp == 0:
        return 0
    if fsp <= 2:
        return int(packet.read(1)[0]) * 10000
    if fsp <= 4:
        return int.from_bytes(packet.read(2), "big") * 100
    return int.from_bytes(packet.read(3), "big")


def _time_packed(packet: Any, fsp: int) -> int:
    """``my_time_packed_from_binary``: (hms << 24) + microseconds, negative for negative TIME."""
    if fsp >= 5:
        return int.from_bytes(packet.read(6), "big") - _TIMEF_OFS
    intpart = int.from_bytes(packet.read(3), "big") - _TIMEF_INT_OFS
    if fsp == 0:
        return intpart << 24
    width, unit = (1, 10000) if fsp <= 2 else (2, 100)
    frac = int.from_bytes(packet.read(width), "big")
    if intpart < 0 and frac:  # negative values store the fraction complemented
        intpart += 1
        frac -= 1 << (8 * width)
    return (intpart << 24) + frac * unit


def _time2(packet: Any, column: Any) -> dt.timedelta:
    packed = _time_packed(packet, column.fsp)
    magnitude = abs(packed)
    hms = magnitude >> 24
    seconds = ((hms >> 12) & 0x3FF) * 3600 + ((hms >> 6) & 0x3F) * 60 + (hms & 0x3F)
    delta = dt.timedelta(seconds=seconds, microseconds=magnitude & 0xFFFFFF)
    return -delta if packed < 0 else delta


def _date(packet: Any, column: Any) -> dt.date | InvalidTemporal:
    packed: int = packet.read_uint24()
    year, month, day = packed >> 9, (packed >> 5) & 0xF, packed & 0x1F
    try:
        return dt.date(year, month, day)
    except ValueError:
        return InvalidTemporal(f"{year:04d}-{month:02d}-{day:02d}")


def _datetime2(packet: Any, column: Any) -> dt.datetime | InvalidTemporal:
    packed = int.from_bytes(packet.read(5), "big") - _DATETIMEF_INT_OFS
    micro = _fraction(packet, column.fsp)
    ymd, hms = packed >> 17, packed & 0x1FFFF
    (year, month), day = divmod(ymd >> 5, 13), ymd & 0x1F
    hour, minute, second = hms >> 12, (hms >> 6) & 0x3F, hms & 0x3F
    try:
        return dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        text = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        return InvalidTemporal(text + _fraction_text(micro, column.fsp))


def _timestamp2(packet: Any, column: Any) -> dt.datetime | InvalidTemporal:
    seconds = int.from_bytes(packet.read(4), "big")
    micro = _fraction(packet, column.fsp)
    return _instant(seconds, micro, column.fsp)


def _timestamp(packet: Any, column: Any) -> dt.datetime | InvalidTemporal:
    return _instant(packet.read_uint32(), 0, 0)


def _instant(seconds: int, micro: int, fsp: int) -> dt.datetime | InvalidTemporal:
    if seconds == 0:  # TIMESTAMP starts at 1970-01-01 00:00:01 UTC; 0 is the zero date
        return InvalidTemporal("0000-00-00 00:00:00" + _fraction_text(0, fsp))
    return _EPOCH + dt.timedelta(seconds=seconds, microseconds=micro)


def _fraction_text(micro: int, fsp: int) -> str:
    return f".{micro:06d}"[: fsp + 1] if fsp else ""


# --- strings ------------------------------------------------------------------------------


def _varchar(packet: Any, column: Any) -> str | bytes | UndecodableText:
    data = packet.read_length_coded_pascal_string(2 if column.max_length > 255 else 1)
    return _text_decoder(column.collation_name)(data)


def _blob(packet: Any, column: Any) -> str | bytes | UndecodableText:
    data = packet.read_length_coded_pascal_string(column.length_size)
    return _text_decoder(column.collation_name)(data)


def text_codec(collation: str | None) -> str | None:
    """The Python codec ``_text_decoder`` decodes a collation's text with (None: binary, or a
    charset Tidemark has no codec for)."""
    charset = charset_of_collation(collation) if collation else "utf8mb4"
    return None if charset == "binary" else codec(charset)


@functools.cache
def _text_decoder(collation: str | None) -> Callable[[bytes], str | bytes | UndecodableText]:
    """Bytes to ``str`` in the collation's charset; binary strings stay bytes.

    The library leaves the collation None when it does not know the id the table map gives;
    it then assumes UTF-8, and so do we (the ids it lacks are MariaDB's uca1400 collations,
    which ``ingest.schema.types`` accepts only for utf8mb3 and utf8mb4 columns).
    """
    charset = charset_of_collation(collation) if collation else "utf8mb4"
    if charset == "binary":
        return bytes
    decode = decoder(charset)

    def text(data: bytes) -> str | UndecodableText:
        if decode is None:
            return UndecodableText(data, charset)
        try:
            return decode(data)
        except UnicodeDecodeError:
            return UndecodableText(data, charset)

    return text


# --- MySQL JSON ---------------------------------------------------------------------------


def _json(packet: Any, column: Any) -> str:
    return json_text(packet.read(packet.read_uint_by_size(column.length_size)))


_READERS: dict[int, Reader] = {
    FIELD_TYPE.YEAR: _year,
    FIELD_TYPE.BIT: _bit,
    FIELD_TYPE.ENUM: _member_number,
    FIELD_TYPE.SET: _member_number,
    FIELD_TYPE.TIME2: _time2,
    FIELD_TYPE.DATE: _date,
    FIELD_TYPE.DATETIME2: _datetime2,
    FIELD_TYPE.TIMESTAMP2: _timestamp2,
    FIELD_TYPE.TIMESTAMP: _timestamp,
    FIELD_TYPE.VARCHAR: _varchar,
    FIELD_TYPE.STRING: _varchar,
    FIELD_TYPE.BLOB: _blob,
    FIELD_TYPE.JSON: _json,
}
