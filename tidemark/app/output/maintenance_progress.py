"""How ``tidemark maintain`` shows its progress: each table's result (``maintenance.render``)
as soon as that table is done, not all at the end. On a terminal the results go above a bar of
tables done of the total, with the table at work and the time so far, left on the screen when
the run ends; elsewhere they are the only output, the same text as without progress."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from rich.progress import ProgressColumn
from rich.text import Text

from tidemark.app.output.console import console_for, is_terminal
from tidemark.app.output.maintenance import render
from tidemark.app.output.progress_bars import ProgressBars, TextOf, elapsed, name_bar_count

if TYPE_CHECKING:
    from spark_jobs.maintenance import TableResult


class MaintenanceProgress:
    """``tables``: the tables to maintain, in the order they are done (the bar names the one
    at work); the results are written to ``stream``."""

    def __init__(
        self,
        tables: Sequence[str],
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        *,
        terminal: bool | None = None,
        width: int | None = None,
    ) -> None:
        self._tables, self._stream = list(tables), stream
        self._done = 0
        terminal = is_terminal(stream) if terminal is None else terminal
        self._bars: ProgressBars | None = None
        if terminal:  # up at once: Spark starts before the first table
            self._bars = ProgressBars(
                console_for(stream, True, width), _columns(), clock, keep=True
            )
            self._bar = self._bars.add("maintain", total=len(tables), at_work=self._at_work())

    def finished(self, result: TableResult) -> None:
        """``result``'s table is done: its lines now, and the bar moves on to the next."""
        self._done += 1
        if self._bars is None:
            self._stream.write(render(result))
            self._stream.flush()
            return
        # above the bar, as it is; the terminal wraps a long line, rich adds no line breaks
        self._bars.print(Text(render(result).removesuffix("\n")), soft_wrap=True)
        self._bars.update(self._bar, completed=self._done, at_work=self._at_work())
        self._bars.draw(force=True)

    def close(self) -> None:
        if self._bars is not None:
            self._bars.close()

    def _at_work(self) -> str:
        return self._tables[self._done] if self._done < len(self._tables) else ""


def _columns() -> list[ProgressColumn]:
    """``maintain ━━━━━━━━━━━━━━━ 1/4 tables shop.orders 0:00:42 elapsed``."""

    return [
        *name_bar_count("tables"),
        TextOf(lambda task: task.fields["at_work"], wraps=True),
        elapsed(),
    ]
