"""The Console made for a stream: styled on a terminal, plain lines anywhere else."""

from __future__ import annotations

import io

import pytest
from rich.table import Column
from rich.text import Text

from tests.output.screen import FakeTerminal
from tidemark.app.output.console import plain_text, write
from tidemark.app.output.tables import column_table


def test_elsewhere_than_a_terminal_the_output_is_plain_even_when_colour_is_forced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    log = io.StringIO()

    write(log, Text("Iceberg tables:", style="bold red"))

    assert log.getvalue() == "Iceberg tables:\n"


def test_on_a_terminal_the_output_is_styled() -> None:
    terminal = FakeTerminal()

    write(terminal, Text("Iceberg tables:", style="bold"))

    assert terminal.getvalue().startswith("\x1b[1mIceberg tables:")


def test_plain_lines_are_never_wrapped_and_a_table_leaves_no_trailing_spaces() -> None:
    table = column_table(Column("task", min_width=40), Column("state"))
    table.add_row("mirror:shop.orders", "waiting: " + "for shop.orders watermark " * 10)
    table.add_row("job:gmv", "due")

    lines = plain_text(table).splitlines()

    assert len(lines) == 3
    assert lines[2] == "job:gmv" + " " * 34 + "due"


def test_brackets_and_colons_are_text_not_markup_or_emoji() -> None:
    text = "[2026-03-01T12:00:00+00:00, 2026-03-01T12:05:00+00:00) [bold]done[/bold] :smile:"
    log = io.StringIO()

    write(log, text)

    assert log.getvalue() == text + "\n"
