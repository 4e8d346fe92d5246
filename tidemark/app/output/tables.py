"""The look of every table Tidemark prints: borderless columns of text, spaced as the
hand-formatted columns they replaced were, so plain output keeps its layout; on a terminal the
headers are bold, and on one too narrow for the table its cells wrap."""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table

from tidemark.app.output.console import PLAIN_WIDTH

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult


class ColumnTable(Table):
    """A table whose columns keep their ``min_width`` where the table fits, which lines them up
    from one redraw to the next; where it does not, they give way and cells wrap (rich would
    rather cut the table off at the edge of the terminal).

    A row may span: one cell in the first column, then one across all the others
    (``add_spanning_row``)."""

    def __init__(self, *columns: Column | str, **options: Any) -> None:
        super().__init__(*columns, **options)
        #: the spanning rows' second cells, by row index
        self._spanning: dict[int, RenderableType] = {}

    def add_spanning_row(self, first: RenderableType, rest: RenderableType) -> None:
        """A row of ``first`` in the first column, then ``rest`` from where the second column
        starts on, as far as it needs: the other columns are as wide as the other rows make them,
        and ``rest`` wraps only where the table's room ends."""
        self._spanning[len(self.rows)] = rest
        self.add_row(first)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # the least the table needs with every column at its min_width and the rest wrapped
        least = Measurement.get(console, options.update_width(PLAIN_WIDTH), self).minimum
        table: ColumnTable = self
        if least > options.max_width:
            table = copy.copy(self)
            table.columns = [
                dataclasses.replace(column, min_width=None, overflow="fold")
                for column in self.columns
            ]
        if not self._spanning:
            yield from Table.__rich_console__(table, console, options)
        else:
            yield from table._in_parts(console, options)

    def _in_parts(self, console: Console, options: ConsoleOptions) -> Iterator[ColumnTable]:
        """The table as tables one under the other: runs of ordinary rows, with the widths the
        whole table has, and each spanning row as a table of two columns, the first as wide."""
        widths = self._calculate_column_widths(
            console, options.update_width(options.max_width - self._extra_width)
        )
        fixed = [
            dataclasses.replace(
                column,
                width=width - self._get_padding_width(index),
                min_width=None,
                max_width=None,
                ratio=None,
            )
            for index, (column, width) in enumerate(zip(self.columns, widths, strict=True))
        ]
        header = self.show_header
        for spanning, run in itertools.groupby(range(len(self.rows)), self._spanning.__contains__):
            rows = list(run)
            if not spanning:
                yield self._part(_cells_of(fixed, rows), rows, header)
                header = False
                continue
            if header:
                yield self._part(_cells_of(fixed, []), [], header=True)
                header = False
            for row in rows:
                rest = Column(overflow="fold", _index=1, _cells=[self._spanning[row]])
                yield self._part([*_cells_of(fixed[:1], [row]), rest], [row], header=False)
        if header:  # no rows
            yield self._part(_cells_of(fixed, []), [], header=True)

    def _part(self, columns: list[Column], rows: list[int], header: bool) -> ColumnTable:
        """This table's look, with ``columns`` (holding the cells of ``rows``)."""
        part = copy.copy(self)
        part._spanning = {}
        part.show_header = header
        part.columns = columns
        part.rows = [self.rows[row] for row in rows]
        return part


def _cells_of(columns: list[Column], rows: list[int]) -> list[Column]:
    return [
        dataclasses.replace(column, _cells=[column._cells[row] for row in rows])
        for column in columns
    ]


def column_table(
    *columns: Column, gap: int = 1, indent: int = 0, header: bool = True
) -> ColumnTable:
    """Columns ``gap`` spaces apart, the first ``indent`` spaces in (at most ``gap``: rich pads
    the first column as it pads the others, or not at all)."""
    if indent not in (0, gap):
        raise ValueError(f"indent {indent} must be 0 or the gap ({gap})")
    return ColumnTable(
        *columns,
        box=None,
        show_header=header,
        show_edge=False,
        padding=(0, 0, 0, gap),
        pad_edge=indent > 0,
    )


def indented(renderable: RenderableType, spaces: int) -> Padding:
    """``renderable`` moved ``spaces`` to the right (a table under a heading, or a column set a
    little further off than the table's gap)."""
    return Padding(renderable, (0, 0, 0, spaces), expand=False)
