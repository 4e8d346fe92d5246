"""Log lines while a live display is up: above it when they go to its terminal, untouched
when they go anywhere else."""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Iterator

import pytest
from rich.file_proxy import FileProxy

from tests.output.screen import FakeTerminal
from tidemark.app.output.console import console_for
from tidemark.app.output.live_logs import LogsAboveLive


@pytest.fixture
def root_handler() -> Iterator[logging.StreamHandler[io.StringIO]]:
    handler = logging.StreamHandler(io.StringIO())
    logging.getLogger().addHandler(handler)
    yield handler
    logging.getLogger().removeHandler(handler)


def test_a_handler_writing_elsewhere_is_left_alone(
    root_handler: logging.StreamHandler[io.StringIO],
) -> None:
    log = root_handler.stream
    logs = LogsAboveLive(console_for(FakeTerminal(), terminal=True))

    logs.start()

    assert root_handler.stream is log
    logs.stop()


def test_stderr_on_the_terminal_of_a_display_on_stdout_goes_through_the_display() -> None:
    """Two files on one terminal, as a shell gives a program its stdout and stderr."""
    controller, terminal = os.openpty()
    with open(terminal, "w", closefd=False) as stdout, open(terminal, "w") as stderr:
        handler = logging.StreamHandler(stderr)
        logging.getLogger().addHandler(handler)
        try:
            logs = LogsAboveLive(console_for(stdout, terminal=True))

            logs.start()
            moved = handler.stream
            logs.stop()
        finally:
            logging.getLogger().removeHandler(handler)
    os.close(controller)

    assert isinstance(moved, FileProxy) and moved.rich_proxied_file is stderr
    assert handler.stream is stderr
