"""A picture that changes: on a terminal each new one replaces the last in place
(``rich.live.Live``); anywhere else each is written as a block of plain text and a blank line,
so a log keeps every picture it was given (the caller decides how many that is)."""

from __future__ import annotations

from typing import TextIO

from rich.console import RenderableType
from rich.live import Live

from tidemark.app.output.console import console_for, is_terminal, plain_text
from tidemark.app.output.live_logs import LogsAboveLive


class LiveScreen:
    def __init__(
        self, stream: TextIO, terminal: bool | None = None, width: int | None = None
    ) -> None:
        self._stream = stream
        self._terminal = is_terminal(stream) if terminal is None else terminal
        self._live: Live | None = None
        self._logs: LogsAboveLive | None = None
        if self._terminal:
            console = console_for(stream, True, width)
            # redrawn when shown, by no thread; the last picture stays when the screen closes
            self._live = Live(
                console=console,
                auto_refresh=False,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._logs = LogsAboveLive(console)

    @property
    def terminal(self) -> bool:
        return self._terminal

    def show(self, picture: RenderableType) -> None:
        if self._live is None or self._logs is None:
            self._stream.write(plain_text(picture) + "\n")
            self._stream.flush()
            return
        if not self._live.is_started:
            self._logs.start()
            self._live.start()
        self._live.update(picture, refresh=True)

    def close(self) -> None:
        """Stop redrawing; the terminal keeps the last picture, and what is written next goes
        below it. Safe to call more than once."""
        if self._live is not None and self._logs is not None and self._live.is_started:
            self._live.stop()
            self._logs.stop()
