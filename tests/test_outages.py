"""How a process says that a service it needs is down: once, once a minute, once when back."""

from __future__ import annotations

import logging

import pytest

from tidemark.metrics import sample
from tidemark.outages import Backoff, Dependency, OutageLog


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
def outages(clock: _Clock, unique_name: str) -> OutageLog:
    return OutageLog(
        Dependency.CATALOG,
        unique_name,
        logging.getLogger("tests.outages"),
        clock=clock,
        wall_clock=clock,
    )


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "tests.outages"]


def test_an_outage_is_said_once_then_once_a_minute_then_once_when_over(
    outages: OutageLog, clock: _Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "tests.outages")
    for _ in range(150):  # an attempt every second for two and a half minutes
        outages.down("connection refused")
        clock.now += 1
    outages.up()
    outages.up()

    assert _lines(caplog) == [
        "The catalog is unavailable (connection refused): retrying until it answers",
        "Still waiting for the catalog, unavailable for 60 s (connection refused)",
        "Still waiting for the catalog, unavailable for 120 s (connection refused)",
        "The catalog is back after 150 s",
    ]


def test_metrics_say_whether_the_service_is_up_and_since_when_it_is_not(
    outages: OutageLog, clock: _Clock, unique_name: str
) -> None:
    labels = {"pipeline": unique_name, "dependency": "catalog"}
    assert sample("tidemark_dependency_up", **labels) == 1

    outages.down("connection refused")
    clock.now += 5

    assert sample("tidemark_dependency_up", **labels) == 0
    assert sample("tidemark_dependency_down_since_timestamp_seconds", **labels) == 1_000.0
    assert outages.waiting() == "waiting for the catalog since 1970-01-01 00:16:40 UTC"
    outages.up()
    assert sample("tidemark_dependency_up", **labels) == 1
    assert sample("tidemark_dependency_outages_total", **labels) == 1
    assert outages.waiting() is None


def test_backoff_doubles_up_to_its_cap() -> None:
    backoff = Backoff(first=1.0, most=30.0)
    assert [backoff.delay(attempt) for attempt in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
