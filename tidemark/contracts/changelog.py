"""What a changelog table holds: its metadata columns, operations and snapshot summary keys.

Change one of these and every reader of an existing lake breaks: add, never rename.
"""

from __future__ import annotations

from enum import StrEnum

import pyarrow as pa


class SummaryKey(StrEnum):
    """Keys ingest writes into each changelog commit's snapshot summary."""

    WATERMARK = "tidemark.watermark"  # epoch ms; every change committed at or before it is in
    POSITION = "tidemark.position"  # resume point: binlog file and offset, and GTID set if any
    SOURCE = "tidemark.source"  # the source's id, so several sources can share a table


class Operation(StrEnum):
    """What a changelog row records, in its ``_tm_op`` column."""

    SNAPSHOT_READ = "r"
    INSERT = "c"
    UPDATE = "u"
    DELETE = "d"
    #: a marker, not a row: the source table named in the row's ``_tm_source_db`` and
    #: ``_tm_source_table`` was truncated here. Its data columns are NULL and its schema version
    #: is ``TRUNCATE_SCHEMA_VERSION``; a merge removes every key whose latest change before it
    #: came from that source table.
    TRUNCATE = "t"


#: the ``_tm_schema_version`` of a truncate marker, which carries no row image
TRUNCATE_SCHEMA_VERSION = 0


class MetadataColumn(StrEnum):
    """Columns every changelog row carries beside the source row's own columns."""

    OPERATION = "_tm_op"
    EVENT_TIME = "_tm_event_time"
    POSITION = "_tm_position"
    SOURCE_DATABASE = "_tm_source_db"
    SOURCE_TABLE = "_tm_source_table"
    ORDER_KEY = "_tm_order"
    SCHEMA_VERSION = "_tm_schema_version"


METADATA_FIELDS = (
    pa.field(MetadataColumn.OPERATION, pa.string(), nullable=False),
    pa.field(MetadataColumn.EVENT_TIME, pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field(MetadataColumn.POSITION, pa.string(), nullable=False),
    pa.field(MetadataColumn.SOURCE_DATABASE, pa.string(), nullable=False),
    pa.field(MetadataColumn.SOURCE_TABLE, pa.string(), nullable=False),
    pa.field(MetadataColumn.ORDER_KEY, pa.int64(), nullable=False),
    pa.field(MetadataColumn.SCHEMA_VERSION, pa.int32(), nullable=False),
)
METADATA_NAMES = frozenset(field.name for field in METADATA_FIELDS)
