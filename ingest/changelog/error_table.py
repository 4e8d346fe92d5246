"""Error tables: rows the lake cannot hold, kept with their payload instead of dropped.

A row with a value that has no Iceberg representation (``UnconvertibleValueError``: a zero date
in a NOT NULL column, a TINYINT(1) of 7 read as a boolean, text not valid in its charset) goes
to the sink table's error table, ``<sink table>_errors``, and ingest goes on (DBEvents' error
tables, docs/architecture.md#error-tables). Every row event is thus accounted for: rows in the
changelog plus rows in the error table equal the row images read.

The error table is created on the first error. It is written exactly like a changelog table,
through the same assembler, as a sink of its own (``errors_sink``): its commits carry their own
``tidemark.position``, so a restart neither loses nor repeats an error row.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from ingest.changelog.catalogs import SinkCatalog
from ingest.changelog.listing import CatalogListing, namespace_of
from ingest.errors import UnconvertibleValueError
from tidemark.contracts.changelog import METADATA_FIELDS, MetadataColumn
from tidemark.sinks.protocols import ChangelogWriter

logger = logging.getLogger(__name__)

#: appended to a sink table's name to name its errors "sink" inside ingest
_ERRORS_SUFFIX = "#errors"

ERROR_SCHEMA = pa.schema(
    [
        pa.field("column_name", pa.string()),
        pa.field("reason", pa.string()),
        pa.field("value", pa.string()),
        pa.field("payload", pa.string()),
        *METADATA_FIELDS,
    ]
)


def errors_sink(sink: str) -> str:
    """The name ingest gives the error rows of ``sink`` (not a table name)."""
    return sink + _ERRORS_SUFFIX


def is_errors_sink(name: str) -> bool:
    return name.endswith(_ERRORS_SUFFIX)


def sink_of(errors: str) -> str:
    """The sink table whose error rows ``errors`` (an ``errors_sink`` name) holds."""
    return errors.removesuffix(_ERRORS_SUFFIX)


def error_table_name(sink: str) -> str:
    return f"{sink}_errors"


#: the data columns of an error row, in ``ERROR_SCHEMA``'s order
ERROR_COLUMNS = ("column_name", "reason", "value", "payload")


def error_values(error: UnconvertibleValueError, image: Mapping[str, Any]) -> tuple[str, ...]:
    """The data columns' values of an error row (``ERROR_COLUMNS``); the assembler adds the
    metadata columns."""
    payload = json.dumps({name: repr(value) for name, value in image.items()})
    return error.column, error.reason, error.raw, payload


def error_row(error: UnconvertibleValueError, image: Mapping[str, Any]) -> dict[str, Any]:
    """The data columns of an error row, by name."""
    return dict(zip(ERROR_COLUMNS, error_values(error, image), strict=True))


def load_error_table(catalog: SinkCatalog, sink: str) -> ChangelogWriter | None:
    return catalog.load_changelog(error_table_name(sink))


def open_error_table(catalog: SinkCatalog, sink: str) -> ChangelogWriter:
    """The error table of ``sink``, created if it does not exist yet."""
    existing = load_error_table(catalog, sink)
    if existing is not None:
        return existing
    identifier = error_table_name(sink)
    logger.warning(
        "Rows of %s cannot be converted: they go to %s with their payload and the reason",
        sink,
        identifier,
    )
    return catalog.create_error_table(identifier, ERROR_SCHEMA)


@dataclass(frozen=True)
class ErrorRow:
    """What the status page shows of one error row (the payload stays in the table)."""

    sink: str
    source_table: str
    column: str
    reason: str
    value: str
    event_time: datetime
    position: str


_SHOWN = (
    "column_name",
    "reason",
    "value",
    MetadataColumn.EVENT_TIME,
    MetadataColumn.SOURCE_DATABASE,
    MetadataColumn.SOURCE_TABLE,
    MetadataColumn.POSITION,
)


def latest_errors(tables: ErrorTables, sink: str, since: datetime, limit: int) -> list[ErrorRow]:
    """The newest ``limit`` error rows of ``sink`` whose change happened since ``since``, newest
    first; a few of the error table's files are read, however many rows it has."""
    table = tables.find(sink)
    if table is None:
        return []
    return [
        ErrorRow(
            sink=sink,
            source_table=f"{row[MetadataColumn.SOURCE_DATABASE]}.{row[MetadataColumn.SOURCE_TABLE]}",
            column=row["column_name"],
            reason=row["reason"],
            value=row["value"],
            event_time=row[MetadataColumn.EVENT_TIME],
            position=row[MetadataColumn.POSITION],
        )
        for row in table.newest_rows(since, _SHOWN, limit).to_pylist()
    ]


class ErrorTables:
    """The error tables of a run's sink tables, known from one listing per namespace.

    Nearly every sink table has no error table, and asking the catalog for each one is a
    failed ``load_table`` per sink table: over a thousand tables, a second of start-up. The
    listing is taken once; the tables this object creates join it, so what the run creates
    later (``open``) is found too. Another process creating an error table of this pipeline's
    sink tables meanwhile is not expected: one ingest runs a pipeline."""

    def __init__(self, catalog: SinkCatalog, sinks: Iterable[str]) -> None:
        self._catalog = catalog
        self._existing = CatalogListing(catalog, {namespace_of(sink) for sink in sinks})

    def find(self, sink: str) -> ChangelogWriter | None:
        """The error table of ``sink`` if it exists."""
        if not self._existing.has_table(error_table_name(sink)):
            return None
        return load_error_table(self._catalog, sink)

    def open(self, sink: str) -> ChangelogWriter:
        """The error table of ``sink``, created if it does not exist yet."""
        table = open_error_table(self._catalog, sink)
        self._existing.add(error_table_name(sink))
        return table

    def existing(self, sinks: Iterable[str]) -> dict[str, ChangelogWriter]:
        """The error tables of ``sinks`` that exist, by ``errors_sink`` name."""
        found = {}
        for sink in sinks:
            table = self.find(sink)
            if table is not None:
                found[errors_sink(sink)] = table
        return found
