"""Progress of a run of many windows (``tidemark backfill``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TextIO

from tidemark.windows import Window

logger = logging.getLogger(__name__)


class Progress:
    """``[done/total] task window, elapsed`` as one updating line on a terminal, else as log
    lines at most every ``interval`` seconds (and for the last window)."""

    def __init__(
        self,
        total: int,
        label: str,
        stream: TextIO,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 10.0,
    ) -> None:
        self._total, self._label, self._stream = total, label, stream
        self._clock, self._interval = clock, interval
        self._started = self._last_log = clock()
        self._tty = stream.isatty()
        self._drawn = False

    def update(self, done: int, window: Window) -> None:
        now = self._clock()
        line = (
            f"[{done}/{self._total}] {self._label} {window} done, "
            f"{now - self._started:.0f} s elapsed"
        )
        if self._tty:
            self._stream.write("\r" + line + "\x1b[K")
            self._stream.flush()
            self._drawn = True
        elif done == self._total or now - self._last_log >= self._interval:
            logger.info("Backfill %s", line)
            self._last_log = now

    def close(self) -> None:
        if self._drawn:
            self._stream.write("\n")
            self._drawn = False
