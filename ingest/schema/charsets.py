"""MySQL and MariaDB character sets as Python codecs.

Shared by the binlog decoding (which turns a text column's bytes into ``str``) and the type
mapping (which refuses, before ingest starts, a column whose charset has no codec here).

Two server charsets differ from the Python codec of the same name, and ``mysql-replication``
gets both wrong: MySQL's ``latin1`` is Windows-1252 with the five bytes that cp1252 leaves
undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) mapped to the C1 controls of the same number, and
MySQL's ``utf16``, ``ucs2`` and ``utf32`` are big-endian without a byte order mark.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

Decoder = Callable[[bytes], str]

_LATIN1_TABLE = "".join(
    chr(byte) if byte in (0x81, 0x8D, 0x8F, 0x90, 0x9D) else bytes([byte]).decode("cp1252")
    for byte in range(256)
)

#: server charset name -> Python codec name
CODECS: dict[str, str] = {
    "utf8mb4": "utf-8",
    "utf8mb3": "utf-8",
    "utf8": "utf-8",
    "latin1": "cp1252",  # with the five holes filled: see _LATIN1_TABLE
    "ascii": "ascii",
    "ucs2": "utf-16-be",
    "utf16": "utf-16-be",
    "utf16le": "utf-16-le",
    "utf32": "utf-32-be",
    "latin2": "iso8859-2",
    "latin5": "iso8859-9",
    "latin7": "iso8859-13",
    "greek": "iso8859-7",
    "hebrew": "iso8859-8",
    "cp1250": "cp1250",
    "cp1251": "cp1251",
    "cp1256": "cp1256",
    "cp1257": "cp1257",
    "cp850": "cp850",
    "cp852": "cp852",
    "cp866": "cp866",
    "cp932": "cp932",
    "koi8r": "koi8-r",
    "koi8u": "koi8-u",
    "macroman": "mac-roman",
    "macce": "mac-latin2",
    "tis620": "tis-620",
    "big5": "big5",
    "gbk": "gbk",
    "gb2312": "gb2312",
    "gb18030": "gb18030",
    "sjis": "shift_jis",
    "ujis": "euc_jp",
    "eucjpms": "euc_jp",
    "euckr": "euc_kr",
}


def codec(charset: str) -> str | None:
    """The Python codec for a server charset name, or None if Tidemark has none."""
    return CODECS.get(charset.lower())


def decoder(charset: str) -> Decoder | None:
    """A strict ``bytes -> str`` function for a server charset name, or None."""
    name = codec(charset)
    if name is None:
        return None
    if charset.lower() == "latin1":
        return _decode_latin1
    decode = codecs.getdecoder(name)
    return lambda data: decode(data)[0]


def _decode_latin1(data: bytes) -> str:
    return codecs.charmap_decode(data, "strict", _LATIN1_TABLE)[0]


def charset_of_collation(collation: str) -> str:
    """``latin1_swedish_ci`` -> ``latin1``; MySQL charset names never contain '_'."""
    return collation.split("_", 1)[0]
