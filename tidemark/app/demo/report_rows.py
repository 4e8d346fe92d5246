"""The demo report's newest window, read from its Iceberg table for the live view."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

#: the table `configs/sql/demo_shop_per_window.sql` writes
REPORT_TABLE = "demo_report.shop_per_window"


@dataclass(frozen=True)
class ReportRow:
    country: str
    orders: int
    revenue: Decimal


@dataclass(frozen=True)
class LatestReport:
    window_start: datetime
    window_end: datetime
    rows: tuple[ReportRow, ...]
    #: windows the report table holds
    windows: int


def latest_report(catalog: Catalog, identifier: str = REPORT_TABLE) -> LatestReport | None:
    """The rows of the newest window in the report, or None before its first window ran."""
    try:
        table = catalog.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    rows = table.scan().to_arrow().to_pylist()
    if not rows:
        return None
    newest = max(row["window_start"] for row in rows)
    latest = sorted(
        (row for row in rows if row["window_start"] == newest), key=lambda row: row["country"]
    )
    return LatestReport(
        window_start=newest,
        window_end=latest[0]["window_end"],
        rows=tuple(ReportRow(r["country"], r["orders"], r["revenue"]) for r in latest),
        windows=len({row["window_start"] for row in rows}),
    )
