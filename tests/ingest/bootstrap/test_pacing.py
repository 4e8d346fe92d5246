"""The bootstrap's rate cap, its gate on the source's load and its log-line progress, with time
injected (bars on a terminal: ``tests/output/test_bootstrap_progress.py``)."""

from __future__ import annotations

import logging
import threading

import pytest

from ingest.bootstrap.bootstrapper import Pacer
from ingest.bootstrap.display import LogDisplay
from ingest.bootstrap.load_gate import LoadGate


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


class FakeLoad:
    """``Threads_running`` readings, the sampling statement included, one per call."""

    def __init__(self, *readings: int) -> None:
        self.readings = list(readings)
        self.calls = 0
        self.closed = False

    def __call__(self) -> int:
        self.calls += 1
        return self.readings.pop(0)

    def close(self) -> None:
        self.closed = True


def _gate(limit: int | None, load: FakeLoad, stop: threading.Event | None = None) -> LoadGate:
    """A gate that reads the load afresh each time it asks: no reading reused, no waiting."""
    return LoadGate(limit, load, stop or threading.Event(), every=0.0)


def test_without_a_limit_the_source_is_never_asked_for_its_load() -> None:
    load = FakeLoad()

    _gate(None, load).wait()

    assert load.calls == 0


def test_a_source_at_its_limit_besides_the_sampling_statement_lets_the_chunk_through() -> None:
    load = FakeLoad(3)  # 2 of the source's own, and the sample

    assert _gate(2, load).wait()
    assert load.calls == 1


def test_a_busy_source_holds_the_chunk_until_its_load_falls_to_the_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    load = FakeLoad(6, 5, 4, 3)
    gate = _gate(2, load)

    with caplog.at_level(logging.INFO, logger="ingest.bootstrap.load_gate"):
        went_on = gate.wait()

    assert went_on
    assert load.calls == 4
    assert load.readings == []
    assert caplog.messages[0] == (
        "Bootstrap held: the source runs 5 statements (Threads_running), more than "
        "tidemark.ingest.snapshot-max-threads-running 2"
    )
    assert caplog.messages[-1].startswith("Bootstrap goes on after")


def test_a_stop_asked_while_held_ends_the_wait_without_going_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = threading.Event()
    stop.set()
    load = FakeLoad(9)

    with caplog.at_level(logging.INFO, logger="ingest.bootstrap.load_gate"):
        went_on = _gate(2, load, stop).wait()

    assert not went_on
    assert load.calls == 1
    assert not any("goes on" in message for message in caplog.messages)


def test_a_reading_is_used_for_a_second_however_many_chunks_ask() -> None:
    time = FakeTime()
    load = FakeLoad(1, 1)
    gate = LoadGate(2, load, threading.Event(), time.clock, every=1.0)

    for _ in range(10):
        gate.wait()
        time.now += 0.05
    time.now += 0.5  # a second after the first reading
    gate.wait()

    assert load.calls == 2
