"""MySQL's binary JSON (a JSON column in the binlog) as the text MySQL itself prints for it.

A SELECT of a JSON column returns MySQL's text (``{"a": 1, "b": [true, null]}``), and
``tidemark verify`` compares the lake's value with it, so the binlog's value must become the
very same text: keys in their stored order (MySQL sorts them by length, then bytes), ``", "``
and ``": "`` between items, strings escaped as JSON requires and no more, doubles as MySQL
writes them (``1e300``, ``0.00000015``, ``100.0``), and the values SQL casts put inside JSON
(opaque values: DECIMAL with its scale, dates and times with six fraction digits, anything
else as ``"base64:type<N>:..."``). ``mysql-replication``'s own parse misreads several of those
(a negative or long TIME fails, TIMESTAMP and binary strings come out garbled), so the format
(MySQL's ``json_binary.cc``) is read here whole.
"""

from __future__ import annotations

import base64
import json
import math
import struct

# value types
_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY = 0x0, 0x1, 0x2, 0x3
_LITERAL, _INT16, _UINT16, _INT32, _UINT32 = 0x4, 0x5, 0x6, 0x7, 0x8
_INT64, _UINT64, _DOUBLE, _STRING, _OPAQUE = 0x9, 0xA, 0xB, 0xC, 0xF
_LITERALS = {0: "null", 1: "true", 2: "false"}
# the field types of opaque values printed as themselves
_DECIMAL, _NEWDECIMAL = 0, 246
_DATE, _TIME, _TIMESTAMP, _DATETIME = 10, 11, 7, 12
_FIXED = {
    _INT32: struct.Struct("<i"),
    _UINT32: struct.Struct("<I"),
    _INT64: struct.Struct("<q"),
    _UINT64: struct.Struct("<Q"),
    _DOUBLE: struct.Struct("<d"),
}
_I16 = struct.Struct("<h").unpack_from
_U16 = struct.Struct("<H").unpack_from
_I64 = struct.Struct("<q").unpack_from
_DECIMAL_GROUP = 9
_DIGIT_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
#: MySQL writes a double in fixed notation from 1e-15 up to 1e15 (MAX_DECPT_FOR_F_FORMAT)
_FIXED_DIGITS = 15


class MalformedJsonError(ValueError):
    """Bytes that are not MySQL binary JSON."""


def json_text(data: bytes) -> str:
    """The text MySQL prints for the binary JSON document ``data``; MySQL reads an empty
    value (a column that has none) as the null literal."""
    if not data:
        return "null"
    out: list[str] = []
    try:
        _value(data[0], memoryview(data)[1:], out)
    except (IndexError, struct.error) as error:
        raise MalformedJsonError(f"a binary JSON document ends too early: {error}") from error
    return "".join(out)


def _value(kind: int, data: memoryview, out: list[str]) -> None:
    """Appends the text of the value of type ``kind`` whose bytes start ``data``."""
    if kind in (_SMALL_OBJECT, _LARGE_OBJECT, _SMALL_ARRAY, _LARGE_ARRAY):
        _container(kind, data, out)
    elif kind == _LITERAL:
        out.append(_literal(data[0]))
    elif kind == _INT16:
        out.append(str(_I16(data)[0]))
    elif kind == _UINT16:
        out.append(str(_U16(data)[0]))
    elif kind == _DOUBLE:
        out.append(double_text(_FIXED[_DOUBLE].unpack_from(data)[0]))
    elif kind in _FIXED:
        out.append(str(_FIXED[kind].unpack_from(data)[0]))
    elif kind == _STRING:
        length, start = _variable_length(data)
        out.append(_string(bytes(data[start : start + length])))
    elif kind == _OPAQUE:
        field_type = data[0]
        length, start = _variable_length(data[1:])
        out.append(_opaque(field_type, bytes(data[1 + start : 1 + start + length])))
    else:
        raise MalformedJsonError(f"a binary JSON value has the unknown type {kind:#x}")


def _container(kind: int, data: memoryview, out: list[str]) -> None:
    large = kind in (_LARGE_OBJECT, _LARGE_ARRAY)
    is_object = kind in (_SMALL_OBJECT, _LARGE_OBJECT)
    width = 4 if large else 2
    count = int.from_bytes(data[:width], "little")
    keys_at = 2 * width
    values_at = keys_at + (count * (width + 2) if is_object else 0)
    out.append("{" if is_object else "[")
    for index in range(count):
        if index:
            out.append(", ")
        if is_object:
            entry = keys_at + index * (width + 2)
            offset = int.from_bytes(data[entry : entry + width], "little")
            length = _U16(data, entry + width)[0]
            out.append(_string(bytes(data[offset : offset + length])))
            out.append(": ")
        entry = values_at + index * (1 + width)
        element_kind = data[entry]
        if _inlined(element_kind, large):
            _value(element_kind, data[entry + 1 : entry + 1 + width], out)
        else:
            offset = int.from_bytes(data[entry + 1 : entry + 1 + width], "little")
            _value(element_kind, data[offset:], out)
    out.append("}" if is_object else "]")


def _inlined(kind: int, large: bool) -> bool:
    """Whether a value of ``kind`` sits in its entry instead of at an offset."""
    return kind in (_LITERAL, _INT16, _UINT16) or (large and kind in (_INT32, _UINT32))


def _literal(code: int) -> str:
    text = _LITERALS.get(code)
    if text is None:
        raise MalformedJsonError(f"a binary JSON literal has the unknown code {code}")
    return text


def _variable_length(data: memoryview) -> tuple[int, int]:
    """A length of up to five bytes, seven bits each, low first; and where its end is."""
    length = 0
    for index in range(5):
        byte = data[index]
        length |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return length, index + 1
    raise MalformedJsonError("a binary JSON length runs over five bytes")


def _string(raw: bytes) -> str:
    # MySQL escapes what JSON requires (quote, backslash, control characters) and no more
    return json.dumps(raw.decode("utf-8"), ensure_ascii=False)


def double_text(value: float) -> str:
    """A double as MySQL prints it in JSON: the shortest digits that read back the same
    (Python's ``repr`` finds the same ones), in fixed notation with at least one fraction
    digit from 1e-15 up to 1e15 (and beyond while no zero needs padding), else as
    ``<digits>e<exponent>``."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, point = _shortest_digits(abs(value))
    count = len(digits)
    if point <= -_FIXED_DIGITS or (point > _FIXED_DIGITS and point >= count):
        mantissa = digits[0] + ("." + digits[1:] if count > 1 else "")
        return f"{sign}{mantissa}e{point - 1}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= count:
        return f"{sign}{digits}{'0' * (point - count)}.0"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest significant digits of a positive double, and where the decimal point goes
    (``1.5e-7`` is ``("15", -6)``: 0.00000015)."""
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return mantissa.replace(".", "").rstrip("0"), int(exponent) + 1
    whole, fraction = text.split(".")
    if whole != "0":
        return (whole + fraction).rstrip("0"), len(whole)
    significant = fraction.lstrip("0")
    return significant.rstrip("0"), -(len(fraction) - len(significant))


def _opaque(field_type: int, data: bytes) -> str:
    if field_type in (_NEWDECIMAL, _DECIMAL):
        return _decimal(data)
    if field_type == _DATE:
        year, month, day, *_ = _datetime(data)
        return f'"{year:04d}-{month:02d}-{day:02d}"'
    if field_type in (_DATETIME, _TIMESTAMP):
        year, month, day, hour, minute, second, fraction = _datetime(data)
        return (
            f'"{year:04d}-{month:02d}-{day:02d} '
            f'{hour:02d}:{minute:02d}:{second:02d}.{fraction:06d}"'
        )
    if field_type == _TIME:
        return _time(data)
    return f'"base64:type{field_type}:{base64.b64encode(data).decode()}"'


def _datetime(data: bytes) -> tuple[int, int, int, int, int, int, int]:
    """MySQL's packed DATETIME (``TIME_to_longlong_datetime_packed``)."""
    packed = abs(_I64(data)[0])
    fraction, whole = packed % (1 << 24), packed >> 24
    ymd, hms = whole >> 17, whole % (1 << 17)
    year_month = ymd >> 5
    return (
        year_month // 13,
        year_month % 13,
        ymd % 32,
        hms >> 12,
        (hms >> 6) % 64,
        hms % 64,
        fraction,
    )


def _time(data: bytes) -> str:
    """MySQL's packed TIME (``TIME_to_longlong_time_packed``), hours up to 838."""
    packed = _I64(data)[0]
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    fraction, hms = packed % (1 << 24), packed >> 24
    hour, minute, second = (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64
    return f'"{sign}{hour:02d}:{minute:02d}:{second:02d}.{fraction:06d}"'


def _decimal(data: bytes) -> str:
    """MySQL's binary DECIMAL (precision, scale, then the number), written with its scale."""
    precision, scale = data[0], data[1]
    whole_digits = precision - scale
    layout = (
        (whole_digits % _DECIMAL_GROUP, whole_digits // _DECIMAL_GROUP),
        (scale // _DECIMAL_GROUP, scale % _DECIMAL_GROUP),
    )
    (lead, whole_groups), (fraction_groups, tail) = layout
    size = _DIGIT_BYTES[lead] + 4 * whole_groups + 4 * fraction_groups + _DIGIT_BYTES[tail]
    raw = bytearray(data[2 : 2 + size])
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(byte ^ 0xFF for byte in raw)
    position = 0

    def digits(count: int, width: int) -> str:
        nonlocal position
        number = int.from_bytes(raw[position : position + width], "big")
        position += width
        return str(number).zfill(count) if count else ""

    whole = digits(lead, _DIGIT_BYTES[lead])
    whole += "".join(digits(_DECIMAL_GROUP, 4) for _ in range(whole_groups))
    fraction = "".join(digits(_DECIMAL_GROUP, 4) for _ in range(fraction_groups))
    fraction += digits(tail, _DIGIT_BYTES[tail])
    text = (whole.lstrip("0") or "0") + ("." + fraction if scale else "")
    return ("-" if negative and text.strip("0.") else "") + text
