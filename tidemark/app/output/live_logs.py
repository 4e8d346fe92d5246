"""Log lines written while a live display is up on the same terminal go above the display.

A live display redraws itself by moving the cursor up over its last picture and erasing it; a
log line the logging module writes straight to the terminal in between would be erased with it
(or leave pieces of the old picture behind). While the display is up, the root logger's
handlers that write to its terminal write through its console instead, which prints them above
the display, as ``rich`` does for ``print``. Handlers writing anywhere else are left alone.
"""

from __future__ import annotations

import logging
import os
from typing import IO, Any

from rich.console import Console
from rich.file_proxy import FileProxy


class LogsAboveLive:
    def __init__(self, console: Console) -> None:
        self._console = console
        self._moved: list[tuple[logging.StreamHandler[Any], IO[str]]] = []

    def start(self) -> None:
        if self._moved or not self._console.is_terminal:
            return
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and not isinstance(
                handler, logging.FileHandler
            ):
                stream = handler.stream
                if _same_terminal(stream, self._console.file):
                    handler.setStream(FileProxy(self._console, stream))
                    self._moved.append((handler, stream))

    def stop(self) -> None:
        for handler, stream in self._moved:
            handler.setStream(stream)  # flushes the proxy first: a line without its newline
        self._moved.clear()


def _same_terminal(stream: IO[str], other: IO[str]) -> bool:
    """Whether two streams write to one place: the same object, or the same terminal device
    (stdout and stderr of a shell are two files on one terminal)."""
    if stream is other:
        return True
    try:
        if not (stream.isatty() and other.isatty()):
            return False
        mine, theirs = os.fstat(stream.fileno()), os.fstat(other.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (mine.st_dev, mine.st_ino, mine.st_rdev) == (
        theirs.st_dev,
        theirs.st_ino,
        theirs.st_rdev,
    )
