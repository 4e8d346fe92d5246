"""Row images decoded by a function compiled for each table map, instead of column by column.

Imported only by ``ingest.binlog.reader`` (the library's single boundary), which calls ``install()``
once. ``mysql-replication`` decodes each value through a chain of calls (type dispatch, a
bitmap lookup per column, a packet read per field); on an OLTP binlog that is most of its time.
A TABLE_MAP fixes the layout of every row image of the row events after it, so ``install``
replaces ``RowsEvent._fetch_rows`` with one that decodes all the event's rows with straight-line
Python generated for that layout (``compile_images``): one ``struct`` read per number, one
slice and one codec call per string, no per-column dispatch.

The values are those of the current path exactly: numbers are read as the library reads them,
strings through ``ingest.binlog.corrections``'s own text decoders, and every other type (dates,
times, DECIMAL, BIT, ENUM, SET, JSON, GEOMETRY ...) through the very reader the library path
calls (``corrections._read_value``), pointed at the value's bytes. Events the layout does
not describe exactly (a partial JSON update, a row image without every column, a column
without a name) go to the library's own ``_fetch_rows``.
``tests/ingest/binlog/test_row_decoders.py`` decodes the same binlog both ways and compares.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    RowsEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

from ingest.binlog import corrections

#: a compiled decoder: (packet bytes, offset, end offset, event) -> the event's rows
Images = Callable[[bytes, int, int, Any], list[dict[str, Any]]]
#: one that needs no library event (every column is read inline), giving (before, after) pairs
#: of images as tuples of values, in the columns' order (``RowsChanged.rows``)
StandaloneImages = Callable[[bytes, int, int], list[tuple[Any, Any]]]

_ATTRIBUTE = "_tidemark_images"
#: numbers read inline, as the library reads them: (struct format, bytes) by (type, unsigned)
_NUMBERS = {
    (FIELD_TYPE.TINY, False): ("<b", 1),
    (FIELD_TYPE.TINY, True): ("<B", 1),
    (FIELD_TYPE.SHORT, False): ("<h", 2),
    (FIELD_TYPE.SHORT, True): ("<H", 2),
    (FIELD_TYPE.LONG, False): ("<i", 4),
    (FIELD_TYPE.LONG, True): ("<I", 4),
    (FIELD_TYPE.LONGLONG, False): ("<q", 8),
    (FIELD_TYPE.LONGLONG, True): ("<Q", 8),
    (FIELD_TYPE.FLOAT, False): ("<f", 4),
    (FIELD_TYPE.FLOAT, True): ("<f", 4),
    (FIELD_TYPE.DOUBLE, False): ("<d", 8),
    (FIELD_TYPE.DOUBLE, True): ("<d", 8),
}
_KINDS = {WriteRowsEvent: "values", DeleteRowsEvent: "values", UpdateRowsEvent: "update"}
#: how each kind of decoder hands out a row: the library's dicts, or Tidemark's pairs
_ROW_FORMS = {
    "values": "{'values': image}",
    "update": "{'before_values': before, 'after_values': after}",
    "write": "(None, image)",
    "delete": "(image, None)",
    "update-pairs": "(before, after)",
}
_STANDALONE_KINDS = {"write": "write", "delete": "delete", "update": "update-pairs"}


def install() -> None:
    """Route row events through the compiled decoders; safe to call again."""
    if getattr(RowsEvent, "_tidemark_library_fetch", None) is None:
        RowsEvent._tidemark_library_fetch = RowsEvent._fetch_rows
        RowsEvent._fetch_rows = _fetch_rows


def _fetch_rows(event: Any) -> None:
    images = _images_for(event)
    wrapper = event.packet
    if images is None or len(getattr(wrapper, "_BinLogPacketWrapper__data_buffer", b"")):
        event._tidemark_library_fetch()
        return
    if not event.complete:
        event._RowsEvent__rows = []
        return
    packet = wrapper.packet
    start = packet._position
    end = start + event.event_size - wrapper.read_bytes
    event._RowsEvent__rows = images(packet._data, start, end, event)


def _images_for(event: Any) -> Images | None:
    kind = _KINDS.get(type(event))
    if kind is None or event.event_type == BINLOG.PARTIAL_UPDATE_ROWS_EVENT:
        return None
    count = len(event.columns)
    if not is_all_present(event.columns_present_bitmap, count):
        return None
    if kind == "update" and not is_all_present(event.columns_present_bitmap2, count):
        return None
    images: Images | None = _compiled(event.table_map[event.table_id], kind, standalone=False)
    return images


def all_present(count: int) -> bytes:
    """The columns-present bitmap of a full row image of ``count`` columns."""
    return b"\xff" * (count // 8) + (bytes([(1 << count % 8) - 1]) if count % 8 else b"")


def is_all_present(bitmap: bytes, count: int) -> bool:
    """Whether a columns-present bitmap names all ``count`` columns: MariaDB leaves the bits
    past the last column clear, MySQL sets them."""
    return bitmap == all_present(count) or bitmap == b"\xff" * ((count + 7) // 8)


def standalone_images(table: Any, event_kind: str) -> StandaloneImages | None:
    """The decoder of a row event (``write``, ``update``, ``delete``) of ``table`` (the
    library's Table) that reads every column itself and gives each row as the pair
    ``ingest.binlog`` hands on, (before image, after image); None if a column needs the
    library. Its images are tuples of the columns' values, in the table map's order."""
    kind = _STANDALONE_KINDS[event_kind]
    images: StandaloneImages | None = _compiled(table, kind, standalone=True)
    return images


def _compiled(table: Any, kind: str, *, standalone: bool) -> Any:
    compiled: dict[tuple[str, bool], Any] | None = getattr(table, _ATTRIBUTE, None)
    if compiled is None:
        compiled = {}
        setattr(table, _ATTRIBUTE, compiled)
    key = (kind, standalone)
    if key not in compiled:
        compiled[key] = compile_images(table.columns, kind, standalone=standalone)
    return compiled[key]


def compile_images(columns: list[Any], kind: str, *, standalone: bool = False) -> Any:
    """The decoder of the row images of ``columns`` (the library's parse of a TABLE_MAP) for
    one kind of event, rows in the form ``_ROW_FORMS`` names: ``values`` (write, delete: one
    image a row) or ``update`` (two) as the library's rows; ``write``, ``delete`` or
    ``update-pairs`` as (before, after) pairs. Images are dicts, or with ``standalone`` tuples
    of the values in the columns' order. None when a column has no name
    (``binlog_row_metadata`` not FULL), or, ``standalone``, when a column needs the library's
    reader (the decoder then takes no event)."""
    if any(not column.name for column in columns):
        return None
    if standalone and not all(_inline(column) for column in columns):
        return None
    constants: dict[str, Any] = {
        "_read_value": corrections._read_value,
        "_columns": columns,
        "_no_nulls": bytes((len(columns) + 7) // 8),
        "_all_present": b"\xff" * ((len(columns) + 7) // 8),
    }
    body = _image_body(columns, constants, as_tuple=standalone)
    signature = (
        "def images(data, pos, end):" if standalone else "def images(data, pos, end, event):"
    )
    images = ("before", "after") if kind in ("update", "update-pairs") else ("image",)
    lines = [
        signature,
        "    rows = []",
        "    while pos < end:",
        *(f"        {line}" for image in images for line in body(image)),
        f"        rows.append({_ROW_FORMS[kind]})",
        "    return rows",
    ]
    namespace = dict(constants)
    exec(compile("\n".join(lines), f"<row images of {len(columns)} columns>", "exec"), namespace)  # noqa: S102 - our own generated code
    return namespace["images"]


def _inline(column: Any) -> bool:
    """Whether the compiled code reads ``column`` by itself (no library reader)."""
    return (
        (column.type, bool(column.unsigned)) in _NUMBERS
        or column.type == FIELD_TYPE.INT24
        or _text_length_size(column) is not None
    )


def _image_body(
    columns: list[Any], constants: dict[str, Any], *, as_tuple: bool
) -> Callable[[str], list[str]]:
    """Statements that decode one row image at ``pos`` into a dict (or a tuple) named by the
    argument."""
    null_bytes = (len(columns) + 7) // 8
    statements: list[str] = [
        f"nulls = int.from_bytes(data[pos:pos + {null_bytes}], 'little')",
        f"pos += {null_bytes}",
    ]
    for index, column in enumerate(columns):
        statements += [
            f"if nulls & {1 << index}:",
            f"    v{index} = None",
            "else:",
            *(f"    {line}" for line in _value(index, column, constants)),
        ]
    if as_tuple:
        image = "(" + "".join(f"v{index}, " for index in range(len(columns))) + ")"
    else:
        image = "{" + ", ".join(f"{column.name!r}: v{i}" for i, column in enumerate(columns)) + "}"

    def body(target: str) -> list[str]:
        return [*statements, f"{target} = {image}"]

    return body


def _value(index: int, column: Any, constants: dict[str, Any]) -> list[str]:
    """Statements that read column ``index``'s value at ``pos`` into ``v<index>``."""
    number = _NUMBERS.get((column.type, bool(column.unsigned)))
    if number is not None:
        fmt, size = number
        constants[f"_n{index}"] = struct.Struct(fmt).unpack_from
        return [f"v{index} = _n{index}(data, pos)[0]", f"pos += {size}"]
    if column.type == FIELD_TYPE.INT24:
        signed = not column.unsigned
        return [
            f"v{index} = int.from_bytes(data[pos:pos + 3], 'little', signed={signed})",
            "pos += 3",
        ]
    length_size = _text_length_size(column)
    if length_size is not None:
        constants[f"_t{index}"] = corrections._text_decoder(column.collation_name)
        read_length = (
            "n = data[pos]"
            if length_size == 1
            else f"n = int.from_bytes(data[pos:pos + {length_size}], 'little')"
        )
        if corrections.text_codec(column.collation_name) == "utf-8":
            # what the decoder does, without its calls; text that is not UTF-8 goes to it
            decode = [
                "try:",
                f"    v{index} = data[pos:pos + n].decode('utf-8')",
                "except UnicodeDecodeError:",
                f"    v{index} = _t{index}(data[pos:pos + n])",
            ]
        else:
            decode = [f"v{index} = _t{index}(data[pos:pos + n])"]
        return [read_length, f"pos += {length_size}", *decode, "pos += n"]
    # every other type: the reader the library path calls, pointed at the value's bytes
    return [
        "packet = event.packet.packet",
        "packet._position = pos",
        f"v{index} = _read_value(event, _columns[{index}], _no_nulls, 0, False, _all_present, "
        f"{bool(column.unsigned)}, {index})",
        "pos = packet._position",
    ]


def _text_length_size(column: Any) -> int | None:
    """Bytes of the length before a string's bytes, as ``corrections`` reads them; None
    for a column that is not read as a string there."""
    if column.type in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        return 2 if column.max_length > 255 else 1
    if column.type == FIELD_TYPE.BLOB:
        length_size: int = column.length_size
        return length_size
    return None
