"""Progress bars on a terminal (``rich.progress``), for the bootstrap's, the backfill's and
maintenance's displays.

No thread redraws them: they move when the work reports, at most every ``every`` seconds of an
injected clock, so a test's fake clock decides what is drawn and when. While they are up, log
lines to the same terminal go above them (``tidemark.app.output.live_logs``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rich.console import Console, JustifyMethod, RenderableType
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TaskID
from rich.table import Column
from rich.text import Text

from tidemark.app.output.live_logs import LogsAboveLive


class TextOf(ProgressColumn):
    """A column of text that ``text_of`` makes from a bar's task. On a terminal too narrow for
    every column, rich takes the room from the bar and from the columns that ``wraps`` (their
    text goes on over more lines); the others stay whole as long as they fit."""

    def __init__(
        self,
        text_of: Callable[[Task], str],
        style: str = "",
        justify: JustifyMethod = "left",
        wraps: bool = False,
    ) -> None:
        super().__init__(Column(justify=justify, no_wrap=not wraps, overflow="fold"))
        self._text_of, self._style = text_of, style

    def render(self, task: Task) -> Text:
        return Text(self._text_of(task), style=self._style)


def name_bar_count(unit: str) -> list[ProgressColumn]:
    """The task's name, its bar, and ``3/10 <unit>`` done of the total."""
    return [
        TextOf(lambda task: task.description),
        BarColumn(),
        TextOf(lambda task: f"{task.completed:.0f}/{task.total:.0f} {unit}", justify="right"),
    ]


def elapsed() -> TextOf:
    """``0:00:42 elapsed`` since the bar came up."""
    return TextOf(
        lambda task: f"{timedelta(seconds=round(task.elapsed or 0))} elapsed", justify="right"
    )


class ProgressBars:
    """Bars that come up with the first one added and go at ``close``: cleared from the
    terminal, or with ``keep`` left there as the last picture of the run."""

    def __init__(
        self,
        console: Console,
        columns: list[ProgressColumn],
        clock: Callable[[], float],
        *,
        every: float = 0.0,
        keep: bool = False,
    ) -> None:
        self._bars = Progress(
            *columns,
            console=console,
            auto_refresh=False,
            get_time=clock,
            transient=not keep,
            # the callers' own writes to stdout and stderr stay theirs (the demo moves fd 2)
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._logs = LogsAboveLive(console)
        self._clock, self._every = clock, every
        self._drawn_at: float | None = None
        self._up = False

    def add(
        self, description: str, total: float | None, completed: int = 0, **fields: Any
    ) -> TaskID:
        if not self._up:
            self._logs.start()
            self._bars.start()
            self._up = True
        task = self._bars.add_task(description, total=total, completed=completed, **fields)
        self.draw(force=True)
        return task

    def update(self, task: TaskID, completed: float, **fields: Any) -> None:
        self._bars.update(task, completed=completed, **fields)

    def remove(self, task: TaskID) -> None:
        self._bars.remove_task(task)
        self.draw(force=True)

    def print(self, renderable: RenderableType, *, soft_wrap: bool = False) -> None:
        """``renderable`` above the bars while they are up (else where the console is)."""
        self._bars.console.print(renderable, soft_wrap=soft_wrap)

    @property
    def empty(self) -> bool:
        return not self._bars.tasks

    def draw(self, force: bool = False) -> None:
        """Redraw, if ``every`` seconds have passed since the last time (or ``force``)."""
        now = self._clock()
        if force or self._drawn_at is None or now - self._drawn_at >= self._every:
            self._bars.refresh()
            self._drawn_at = now

    def close(self) -> None:
        """Down, with the terminal's cursor shown again and log handlers given back; the bars
        left are dropped (the next ``add`` comes up alone)."""
        if self._up:
            self._bars.stop()
            self._logs.stop()
            self._up = False
        for task in self._bars.task_ids:
            self._bars.remove_task(task)
