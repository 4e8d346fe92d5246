"""A picture that changes: replaced in place on a terminal, written as blocks elsewhere."""

from __future__ import annotations

import io

from rich.text import Text

from tests.output.screen import FakeTerminal, screen
from tidemark.app.output.live import LiveScreen


def test_on_a_terminal_each_picture_replaces_the_last_in_place() -> None:
    terminal = FakeTerminal()
    live = LiveScreen(terminal, width=60)

    live.show(Text("watermark 15:47:01\nlag 1.0 s\nrows 10"))
    live.show(Text("watermark 15:47:03\nlag 0.5 s"))

    assert screen(terminal.getvalue()) == ["watermark 15:47:03", "lag 0.5 s"]


def test_once_closed_the_last_picture_stays_and_what_is_written_next_goes_below() -> None:
    terminal = FakeTerminal()
    live = LiveScreen(terminal, width=60)
    live.show(Text("watermark 15:47:01"))
    live.show(Text("watermark 15:47:03"))

    live.close()
    live.close()  # twice is once
    terminal.write("every mirror equals its source table\n")

    assert screen(terminal.getvalue()) == [
        "watermark 15:47:03",
        "every mirror equals its source table",
    ]


def test_elsewhere_each_picture_is_a_plain_block_and_a_blank_line() -> None:
    log = io.StringIO()
    live = LiveScreen(log)

    live.show(Text("watermark 15:47:01", style="bold"))
    live.show(Text("watermark 15:47:03\nlag 0.5 s"))
    live.close()

    assert log.getvalue() == "watermark 15:47:01\n\nwatermark 15:47:03\nlag 0.5 s\n\n"
