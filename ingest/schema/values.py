"""The Python values a decoded binlog row holds, per MySQL type, before the type mapping.

``ingest.binlog`` (with the corrections of ``ingest.binlog.corrections``) produces, for a non-NULL
value:

=====================================  ========================================================
source type                            Python value
=====================================  ========================================================
TINYINT .. BIGINT (signed or not)      ``int``
DECIMAL                                ``decimal.Decimal``
FLOAT, DOUBLE                          ``float``
BIT(n)                                 ``int`` (the bits as an unsigned number)
YEAR                                   ``int``; 0 for YEAR 0000
DATE                                   ``datetime.date`` or ``InvalidTemporal``
DATETIME                               naive ``datetime.datetime`` or ``InvalidTemporal``
TIMESTAMP                              ``datetime.datetime`` in UTC or ``InvalidTemporal``
TIME                                   ``datetime.timedelta`` (negative and over 24 h allowed)
CHAR, VARCHAR, TEXT                    ``str``, or ``UndecodableText``
BINARY, VARBINARY, BLOB                ``bytes``; BINARY(n) without its trailing 0x00 bytes
ENUM                                   ``int``: the 1-based member index, 0 for ''
SET                                    ``int``: bit i set for the i-th member (from 0)
JSON (MySQL)                           ``str``: the document as JSON text
GEOMETRY                               ``bytes``: 4-byte little-endian SRID, then WKB
UUID, INET6, INET4 (MariaDB)           ``bytes`` without trailing 0x00 bytes
=====================================  ========================================================

ENUM and SET stay numbers because the binlog's member names are unreliable (``mysql-replication``
blanks any that is not UTF-8); ``ingest.schema.types`` names them from ``information_schema``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InvalidTemporal:
    """A DATE, DATETIME or TIMESTAMP that no calendar holds: the zero date ``0000-00-00``, a
    date with a zero part (``2020-00-15``) or an impossible day (``2020-02-30`` under
    ALLOW_INVALID_DATES)."""

    #: as the server prints it, e.g. ``0000-00-00 00:00:00.000``
    text: str


@dataclass(frozen=True)
class UndecodableText:
    """Text whose bytes are not valid in the column's charset (or whose charset is unknown)."""

    data: bytes
    charset: str
