"""The bootstrap's rate cap and its log-line progress, with time injected (bars on a terminal:
``tests/output/test_bootstrap_progress.py``)."""

from __future__ import annotations

import logging

import pytest

from ingest.bootstrap.bootstrapper import Pacer
from ingest.bootstrap.display import LogDisplay


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_reader_ahead_of_its_cap_sleeps_until_it_is_back_on_rate() -> None:
    time = FakeTime()
    pacer = Pacer(1000.0, time.clock, time.sleep)

    pacer.took(500)  # 500 rows in no time: half a second early
    time.now += 2.0
    pacer.took(500)  # 1000 rows in 2.5 s: slower than the cap

    assert time.slept == [0.5]


def test_a_stall_buys_at_most_a_second_of_rows_above_the_cap() -> None:
    time = FakeTime()
    pacer = Pacer(1000.0, time.clock, time.sleep)

    pacer.took(1000)  # a second early: sleeps it
    time.now += 60.0  # a minute of slow commits
    pacer.took(1000)  # the second of catching up it may have
    pacer.took(1000)  # and no more: back on the cap

    assert time.slept == [1.0, 1.0]


def test_without_a_cap_a_reader_never_sleeps() -> None:
    time = FakeTime()
    pacer = Pacer(None, time.clock, time.sleep)

    pacer.took(1_000_000)

    assert time.slept == []


def test_without_a_display_of_its_own_the_progress_is_a_log_line_of_ingest_s_bootstrap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    time = FakeTime()
    display = LogDisplay(clock=time.clock)
    caplog.set_level(logging.INFO, logger="ingest.bootstrap.display")

    display.start("shop.orders", rows_done=0, estimated_rows=10_000)
    time.now = 20.0
    display.advance("shop.orders", 2_000)

    assert caplog.messages[-1] == "Bootstrap shop.orders: 2,000 rows (20%), 100 rows/s, ETA 80 s"
