"""The bootstrap's progress, with time injected: bars on a terminal, log lines elsewhere."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

import pytest

from tests.output.screen import FakeTerminal, screen
from tidemark.app.output.bootstrap_progress import BootstrapProgress

#: a bar of any length and fill, between a table's rows and its share
BAR = "[━╸╺ ]+"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_on_a_terminal_each_table_has_a_bar_with_rows_share_rows_per_second_and_eta(
    clock: Clock,
) -> None:
    terminal = FakeTerminal()
    progress = BootstrapProgress(terminal, width=100, clock=clock)

    progress.start("shop.orders", rows_done=0, estimated_rows=10_000)
    progress.start("shop.users", rows_done=0, estimated_rows=None)
    clock.now = 1.5
    progress.advance("shop.users", 300)
    clock.now = 2.0
    progress.advance("shop.orders", 2_000)

    [orders, users] = screen(terminal.getvalue())
    assert re.fullmatch(f"shop.orders: 2,000 rows {BAR} 20% 1,000 rows/s ETA 0:00:08", orders)
    # no estimate: a bar that pulses, and no share or ETA
    assert re.fullmatch(f"shop.users: 300 rows +{BAR} +150 rows/s", users)


def test_rows_read_before_a_restart_count_in_the_total_but_not_in_the_rate(
    clock: Clock,
) -> None:
    terminal = FakeTerminal()
    progress = BootstrapProgress(terminal, width=100, clock=clock)

    progress.start("shop.orders", rows_done=5_000, estimated_rows=10_000)
    clock.now = 2.0
    progress.advance("shop.orders", 1_000)

    [orders] = screen(terminal.getvalue())
    assert re.fullmatch(f"shop.orders: 6,000 rows {BAR} 60% 500 rows/s ETA 0:00:08", orders)


def test_on_a_terminal_the_bars_are_redrawn_at_most_every_fifth_of_a_second(
    clock: Clock,
) -> None:
    terminal = FakeTerminal()
    progress = BootstrapProgress(terminal, width=100, clock=clock)
    progress.start("shop.orders", rows_done=0, estimated_rows=10_000)

    shown = []
    for now in (1.0, 1.1, 1.3):
        clock.now = now
        progress.advance("shop.orders", 100)
        [line] = screen(terminal.getvalue())
        shown.append(line.split(" rows ")[0])

    assert shown == ["shop.orders: 100", "shop.orders: 100", "shop.orders: 300"]


def test_a_finished_table_s_bar_goes_and_with_the_last_the_display_is_cleared(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    terminal = FakeTerminal()
    progress = BootstrapProgress(terminal, width=100, clock=clock)
    caplog.set_level(logging.INFO, logger="ingest.bootstrap.display")
    progress.start("shop.orders", rows_done=0, estimated_rows=1_000)
    progress.start("shop.users", rows_done=0, estimated_rows=1_000)
    clock.now = 2.0
    progress.advance("shop.orders", 1_000)

    progress.finish("shop.orders")
    left = screen(terminal.getvalue())
    progress.finish("shop.users")

    assert [line.split(":")[0] for line in left] == ["shop.users"]
    assert screen(terminal.getvalue()) == []
    assert "Bootstrapped shop.orders: 1,000 rows in 2.0 s (500 rows/s)" in caplog.messages


def test_elsewhere_each_table_is_a_log_line_at_most_every_interval(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    log = io.StringIO()
    progress = BootstrapProgress(log, log_every=10, clock=clock)
    caplog.set_level(logging.INFO, logger="ingest.bootstrap.display")

    progress.start("shop.orders", rows_done=0, estimated_rows=10_000)
    for now in (2.0, 9.0, 10.0, 15.0, 20.0):
        clock.now = now
        progress.advance("shop.orders", 1_000)
    progress.finish("shop.orders")

    assert caplog.messages == [
        "Bootstrapping shop.orders (about 10,000 rows)",
        "Bootstrap shop.orders: 3,000 rows (30%), 300 rows/s, ETA 23 s",
        "Bootstrap shop.orders: 5,000 rows (50%), 250 rows/s, ETA 20 s",
        "Bootstrapped shop.orders: 5,000 rows in 20.0 s (250 rows/s)",
    ]
    assert log.getvalue() == ""  # no bars, no control codes


@pytest.fixture
def logs_to(caplog: pytest.LogCaptureFixture) -> Iterator[FakeTerminal]:
    """A terminal the root logger writes to, as ``tidemark``'s does to stderr."""
    terminal = FakeTerminal()
    handler = logging.StreamHandler(terminal)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    caplog.set_level(logging.INFO)
    logging.getLogger().addHandler(handler)
    yield terminal
    logging.getLogger().removeHandler(handler)
    assert handler.stream is terminal  # given back when the bars went


def test_log_lines_written_while_the_bars_are_up_appear_above_them(
    clock: Clock, logs_to: FakeTerminal
) -> None:
    progress = BootstrapProgress(logs_to, width=100, clock=clock)

    progress.start("shop.orders", rows_done=0, estimated_rows=10_000)
    clock.now = 2.0
    logging.getLogger("ingest").info("Created changelog table shop.orders_changelog")
    progress.advance("shop.orders", 2_000)
    on_screen = screen(logs_to.getvalue())
    progress.finish("shop.orders")

    assert on_screen[:2] == [
        "INFO Bootstrapping shop.orders (about 10,000 rows)",
        "INFO Created changelog table shop.orders_changelog",
    ]
    assert on_screen[2].startswith("shop.orders: 2,000 rows ━") and len(on_screen) == 3
    assert screen(logs_to.getvalue())[-1].startswith("INFO Bootstrapped shop.orders: 2,000 rows")


def test_closed_before_its_tables_finished_the_display_clears_the_bars_and_gives_all_back(
    clock: Clock, logs_to: FakeTerminal
) -> None:
    """A bootstrap that fails or is stopped finishes no table; closing puts the terminal back as
    it was: no bars left, the cursor shown, log lines written straight to it again."""
    [handler] = [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and h.stream is logs_to
    ]
    progress = BootstrapProgress(logs_to, width=100, clock=clock)
    progress.start("shop.orders", rows_done=0, estimated_rows=10_000)
    progress.start("shop.users", rows_done=0, estimated_rows=None)
    clock.now = 2.0
    progress.advance("shop.orders", 2_000)

    progress.close()

    shown = logs_to.getvalue()
    assert screen(shown) == [
        "INFO Bootstrapping shop.orders (about 10,000 rows)",
        "INFO Bootstrapping shop.users (about ? rows)",
    ]
    assert shown.rindex("\x1b[?25h") > shown.rindex("\x1b[?25l")  # the cursor is shown again
    assert handler.stream is logs_to
