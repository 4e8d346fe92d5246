"""The look of every table Tidemark prints: borderless columns of text, spaced as the
hand-formatted columns they replaced were, so plain output keeps its layout; on a terminal the
headers are bold, and on one too narrow for the table its cells wrap."""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING

from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table

from tidemark.output.console import PLAIN_WIDTH

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult


class ColumnTable(Table):
    """A table whose columns keep their ``min_width`` where the table fits, which lines them up
    from one redraw to the next; where it does not, they give way and cells wrap (rich would
    rather cut the table off at the edge of the terminal)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # the least the table needs with every column at its min_width and the rest wrapped
        least = Measurement.get(console, options.update_width(PLAIN_WIDTH), self).minimum
        table: Table = self
        if least > options.max_width:
            table = copy.copy(self)
            table.columns = [
                dataclasses.replace(column, min_width=None, overflow="fold")
                for column in self.columns
            ]
        yield from Table.__rich_console__(table, console, options)


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
