"""What the end-to-end tests of ``tidemark run`` share."""

from __future__ import annotations

from tidemark.stack.endpoints import StackEndpoints


def one_minute_windows(endpoints: StackEndpoints, reports_topic: str) -> str:
    """The ``tidemark:`` block's start: one-minute windows, reports on the test's topic, and
    commits every second or two, so that windows close quickly."""
    return (
        "tidemark:\n"
        "  window: 1 min\n"
        "  reports:\n"
        f"    topic: {reports_topic}\n"
        f"    kafka.bootstrap.servers: {endpoints.kafka.bootstrap_servers}\n"
        "  ingest:\n"
        "    flush-interval: 1 s\n"
        "    watermark-report-interval: 2 s\n"
    )
