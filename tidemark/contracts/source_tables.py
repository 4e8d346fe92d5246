"""A source table's structure as ``information_schema`` describes it.

``SourceTable`` and ``SourceColumn`` hold what the type mapping (``ingest.schema.types``) needs:
the server's own names for each column's type, its size, charset and ENUM/SET members, and the
table's primary and unique keys. The schema history of every changelog table stores them
(``tidemark.contracts.schema_history``), and the window merge reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass

#: (database, table)
TableName = tuple[str, str]


@dataclass(frozen=True)
class SourceColumn:
    """One column as ``information_schema.COLUMNS`` describes it."""

    name: str
    #: 1-based position in the table (the binlog's column order)
    ordinal: int
    #: DATA_TYPE, lower case: ``int``, ``varchar``, ``uuid`` ...
    data_type: str
    #: COLUMN_TYPE as the server shows it: ``int(10) unsigned``, ``enum('a')`` ...
    column_type: str
    nullable: bool
    unsigned: bool = False
    #: digits for DECIMAL and integers, bits for BIT
    precision: int | None = None
    scale: int | None = None
    #: fractional seconds digits of TIME, DATETIME and TIMESTAMP
    datetime_precision: int | None = None
    #: characters for text, bytes for BINARY/VARBINARY/BLOB
    max_length: int | None = None
    octet_length: int | None = None
    #: None for binary strings and non-text types
    charset: str | None = None
    collation: str | None = None
    #: ENUM and SET members in definition order
    members: tuple[str, ...] = ()
    #: COLUMN_DEFAULT as the server shows it: ``'it''s'``, ``5``, ``NULL``, ``current_timestamp()``;
    #: None when the column has none
    default: str | None = None


@dataclass(frozen=True)
class UniqueKey:
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class SourceTable:
    database: str
    name: str
    columns: tuple[SourceColumn, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[UniqueKey, ...] = ()

    @property
    def table_id(self) -> str:
        return f"{self.database}.{self.name}"

    def column(self, name: str) -> SourceColumn:
        for column in self.columns:
            if column.name.lower() == name.lower():  # MySQL column names ignore case
                return column
        raise KeyError(f"{self.table_id} has no column {name!r}")
