"""What the tests of a Kafka outage share: a clock they move, Kafka's outage log on it, and the
lines an operator reads."""

from __future__ import annotations

import logging

import pytest

from tidemark.outages import Dependency, OutageLog

#: reconnect soon after a broker comes back (librdkafka's default backs off to 10 s)
FAST_RECONNECT = {"reconnect.backoff.max.ms": "500"}
#: the most lines one outage may cost: gone, two reminders, back, and what followed it
HANDFUL = 6


class ManualClock:
    """``time.monotonic`` (and ``time.time``) as the test moves it."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def kafka_outages(pipeline: str, logger: str, clock: ManualClock) -> OutageLog:
    """Kafka's outage log of ``pipeline`` on ``clock``, saying it through ``logger``."""
    return OutageLog(
        Dependency.KAFKA, pipeline, logging.getLogger(logger), clock=clock, wall_clock=clock
    )


def said(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    """The lines ``logger`` said at INFO or above: what an operator reads by default."""
    return [
        f"{record.levelname} {record.getMessage()}"
        for record in caplog.records
        if record.name == logger and record.levelno >= logging.INFO
    ]
