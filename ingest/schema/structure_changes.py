"""What the stream asks the schema stage when a statement changes an onboarded table."""

from __future__ import annotations

from enum import Enum
from typing import Protocol


class Truncation(Enum):
    """What a TRUNCATE of an onboarded table does to its changelog (``StructureChanges``)."""

    #: a truncate marker row (``Operation.TRUNCATE``): the next merge empties the table's rows
    MARK = "mark"
    #: nothing: the lake keeps the rows (``truncate.table`` excluded, or behavior ``ignore``)
    KEEP_ROWS = "keep rows"
    #: ingest stops before it (behavior ``exception``)
    STOP = "stop"


class StructureChanges(Protocol):
    """Told about statements that change an onboarded table (``ingest.schema.tracker``)."""

    def altered(self, database: str, table: str, statement: str) -> None:
        """ALTER TABLE ``statement`` (renames and a table comment are read from it): may
        record a new structure, or raise ``SchemaChangeStopError``."""

    def dropped(self, database: str, table: str) -> bool:
        """DROP TABLE: whether ingest must stop (``schema.change.behavior: exception``)."""

    def created(self, database: str, table: str) -> bool:
        """CREATE TABLE of a table the patterns select: whether it is onboarded now."""

    def truncated(self, database: str, table: str) -> Truncation:
        """TRUNCATE TABLE of an onboarded table."""
