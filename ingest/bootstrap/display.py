"""How a bootstrap shows its progress: a bar per table on a terminal, throttled log lines
otherwise (rows, rows/s, ETA), drawn by ``tidemark.output.bootstrap_progress``."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol, TextIO

from tidemark.output.bootstrap_progress import BootstrapProgress

logger = logging.getLogger(__name__)


class BootstrapDisplay(Protocol):
    def start(self, table: str, rows_done: int, estimated_rows: int | None) -> None: ...

    def advance(self, table: str, rows: int) -> None: ...

    def finish(self, table: str) -> None: ...


class ProgressDisplay(BootstrapProgress):
    """The display ingest uses unless told otherwise: on ``stream`` (stderr), a terminal or not
    as ``interactive`` says (None: as the stream says), its log lines from this module."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interactive: bool | None = None,
        log_every_seconds: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            stream, terminal=interactive, log_every=log_every_seconds, clock=clock, log=logger
        )
