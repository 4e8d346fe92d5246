"""What the end-to-end tests of ``tidemark run`` share."""

from __future__ import annotations

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from tidemark.contracts.mirror import MirrorKey
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


def mirror_window_end(catalog: Catalog, identifier: str) -> int:
    """The end (Unix ms) of the newest window merged into the mirror ``identifier``; 0 before
    its first, or before it exists."""
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError:
        return 0
    ends = [
        int(snapshot.summary.additional_properties.get(MirrorKey.WINDOW_END, 0))
        for snapshot in table.snapshots()
        if snapshot.summary is not None
    ]
    return max(ends, default=0)
