"""How ``tidemark backfill`` shows its progress: windows done of the total, the last one, and
the time so far. On a terminal a bar, left on the screen when the run ends; elsewhere a log line
at most every ``interval`` seconds, and one for the last window."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TextIO

from rich.progress import ProgressColumn, Task

from tidemark.app.output.console import console_for, is_terminal
from tidemark.app.output.progress_bars import ProgressBars, TextOf, elapsed, name_bar_count
from tidemark.windows import Window

logger = logging.getLogger(__name__)


class BackfillProgress:
    def __init__(
        self,
        total: int,
        label: str,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 10.0,
        *,
        terminal: bool | None = None,
        width: int | None = None,
    ) -> None:
        self._total, self._label = total, label
        self._clock, self._interval = clock, interval
        self._started = self._last_log = clock()
        terminal = is_terminal(stream) if terminal is None else terminal
        self._bars: ProgressBars | None = None
        if terminal:  # up at once: the first window may take a while (Spark starts)
            self._bars = ProgressBars(
                console_for(stream, True, width), _columns(), clock, keep=True
            )
            self._bar = self._bars.add(label, total=total, window=None)

    def update(self, done: int, window: Window) -> None:
        if self._bars is not None:
            self._bars.update(self._bar, completed=done, window=window)
            self._bars.draw()
            return
        now = self._clock()
        if done == self._total or now - self._last_log >= self._interval:
            logger.info(
                "Backfill [%d/%d] %s %s done, %.0f s elapsed",
                done,
                self._total,
                self._label,
                window,
                now - self._started,
            )
            self._last_log = now

    def close(self) -> None:
        if self._bars is not None:
            self._bars.close()


def _columns() -> list[ProgressColumn]:
    """``job:gmv ━━━━━━━━━━━━━━━ 3/10 windows [12:10, 12:15) done 0:00:42 elapsed`` (the
    window in full, with its dates)."""

    def last_done(task: Task) -> str:
        window = task.fields["window"]
        return "" if window is None else f"{window} done"

    return [*name_bar_count("windows"), TextOf(last_done), elapsed()]
