"""The changelog rows of one table between two commits, kept as the binlog gives them.

A busy OLTP binlog has one row per event, and every one of its rows passes through ingest's
one interpreter: made in the reading process, sent, converted, buffered, then turned into
Arrow columns. As a dict per row (the data columns and seven metadata columns) that took a
third of ingest's CPU. ``ChangeRows`` keeps instead:

- each row's data values as the tuple the conversion returned (``RowsChanged.columns``
  names them);
- the metadata, once for a run of consecutive rows that share it (one run per row event,
  or a few when an update moves a row to another key): the value columns' names, event
  time, position, source database and table, schema version and operation;
- the order key of its first row: the rows' order keys follow one another.

``to_arrow`` gathers each column in C and expands the runs; the metadata that is the same for
a whole flush (the source database and table and the schema version nearly always are, the
operation in a flush of one kind) is repeated by Arrow. ``rows`` gives the rows as dicts, as
``pa.Table.from_pylist`` takes them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tidemark.contracts.changelog import MetadataColumn

Values = tuple[Any, ...]
#: what a run of rows shares: (value columns' names, event time in epoch milliseconds,
#: position, source database, source table, schema version, operation)
Run = tuple[tuple[str, ...], int, str, str, str, int, str]

#: the metadata columns a ``Run`` holds after its value columns' names, in its order
_RUN_COLUMNS = (
    MetadataColumn.EVENT_TIME.value,
    MetadataColumn.POSITION.value,
    MetadataColumn.SOURCE_DATABASE.value,
    MetadataColumn.SOURCE_TABLE.value,
    MetadataColumn.SCHEMA_VERSION.value,
    MetadataColumn.OPERATION.value,
)
_EVENT_TIME = MetadataColumn.EVENT_TIME.value
#: the metadata columns that nearly always hold one value in a flush
_OFTEN_THE_SAME = frozenset(
    {
        MetadataColumn.SOURCE_DATABASE.value,
        MetadataColumn.SOURCE_TABLE.value,
        MetadataColumn.SCHEMA_VERSION.value,
        MetadataColumn.OPERATION.value,
    }
)
_ORDER_KEY = MetadataColumn.ORDER_KEY.value
_EVENT_TIME_TYPE = pa.timestamp("us", tz="UTC")


class ChangeRows:
    """Rows of one table, in order, with the order key of the first (``first_order``)."""

    __slots__ = ("counts", "first_order", "runs", "values")

    def __init__(self, first_order: int = 1) -> None:
        self.values: list[Values] = []
        #: rows in each run, parallel to ``runs``
        self.counts: list[int] = []
        self.runs: list[Run] = []
        self.first_order = first_order

    def __len__(self) -> int:
        return len(self.values)

    @property
    def row_events(self) -> int:
        """How many binlog row events the rows came from: each has a position of its own (an
        update that moves a row to another key makes two runs of one event)."""
        return len({run[2] for run in self.runs})

    def append(self, values: Values, run: Run) -> None:
        """One row; the run continues if ``run`` is the last one's (the same object)."""
        self.values.append(values)
        runs = self.runs
        if runs and runs[-1] is run:
            self.counts[-1] += 1
        else:
            runs.append(run)
            self.counts.append(1)

    def add_run(self, values: list[Values], run: Run) -> None:
        """Rows that share ``run``."""
        if not values:
            return
        self.values += values
        self.runs.append(run)
        self.counts.append(len(values))

    def extend(self, other: ChangeRows) -> None:
        """``other``'s rows after these (their order keys follow these)."""
        self.values += other.values
        self.counts += other.counts
        self.runs += other.runs

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row as a dict: its value columns, then the metadata columns."""
        rows: list[dict[str, Any]] = []
        values = iter(self.values)
        order = self.first_order
        for count, run in zip(self.counts, self.runs, strict=True):
            names, metadata = run[0], dict(zip(_RUN_COLUMNS, run[1:], strict=True))
            metadata[_EVENT_TIME] = datetime.fromtimestamp(run[1] / 1000, UTC)
            for _ in range(count):
                row = dict(zip(names, next(values), strict=True))
                row.update(metadata)
                row[_ORDER_KEY] = order
                order += 1
                rows.append(row)
        return rows

    def to_arrow(self, schema: pa.Schema) -> pa.Table:
        """The rows as an Arrow table of ``schema`` (the changelog's): a column of the schema
        the rows lack (rows of an older structure) is NULL in them, and one the schema lacks
        is left out."""
        count, runs = len(self.values), self.runs
        if not runs:
            return schema.empty_table()
        names = runs[0][0]
        if list(map(itemgetter(0), runs)).count(names) != len(runs):
            # rows of several structures (a schema change, a truncate marker) in one flush: rare
            return arrow_rows(self.rows, schema)
        # column by column, each gathered by a C loop (``zip(*rows)`` takes three times as long)
        metadata = [list(map(itemgetter(index), runs)) for index in range(1, len(_RUN_COLUMNS) + 1)]
        if len(runs) != count:  # runs of several rows: bulk events
            metadata = [
                list(chain.from_iterable(map(repeat, column, self.counts))) for column in metadata
            ]
        columns: dict[str, Any] = dict(zip(_RUN_COLUMNS, metadata, strict=True))
        columns.update(
            (name, list(map(itemgetter(index), self.values))) for index, name in enumerate(names)
        )
        arrays = []
        for field in schema:
            name, values = field.name, columns.get(field.name)
            if name == _EVENT_TIME:
                # from epoch milliseconds: ten times as fast as from datetimes
                milliseconds = pa.array(values, pa.int64())
                arrays.append(pc.multiply(milliseconds, 1000).cast(_EVENT_TIME_TYPE))
            elif name in _OFTEN_THE_SAME:
                arrays.append(_same_or_each(columns[name], field.type))
            elif name == _ORDER_KEY:
                ones = pa.repeat(pa.scalar(1, field.type), count)
                arrays.append(pc.cumulative_sum(ones, start=self.first_order - 1))
            elif values is None:
                arrays.append(pa.nulls(count, field.type))  # rows of an older structure
            else:
                arrays.append(pa.array(values, type=field.type))
        return pa.Table.from_arrays(arrays, schema=schema)


def _same_or_each(values: list[Any], type_: pa.DataType) -> pa.Array:
    """A metadata column: repeated by Arrow when it holds one value (a flush's source
    database, table and schema version nearly always do), else converted value by value.
    Not for data columns, where values equal in Python can differ in the lake (0.0 and -0.0,
    decimals of different scales)."""
    if values.count(values[0]) == len(values):  # a C loop, that compares identical objects first
        return pa.repeat(pa.scalar(values[0], type_), len(values))
    return pa.array(values, type=type_)


def arrow_rows(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """``rows`` as an Arrow table of ``schema``, as ``pa.Table.from_pylist`` makes it, a third
    faster: each column is gathered by one C loop (``itemgetter``). A column some rows lack
    (rows of an older structure) is NULL in them."""
    columns = []
    for field in schema:
        try:
            values = list(map(itemgetter(field.name), rows))
        except KeyError:
            values = [row.get(field.name) for row in rows]
        columns.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)
