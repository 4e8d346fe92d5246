"""The README's first command: `tidemark demo`, shortened to a few one-minute windows, ends
with every mirror equal to the shop it copies."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.compute as pc
from pyiceberg.catalog import Catalog

from tidemark.app.demo.report_rows import latest_report
from tidemark.app.demo.workload import ADDED_COLUMN
from tidemark.stack.endpoints import StackEndpoints


def test_a_short_demo_mirrors_the_shop_and_reports_every_window(
    endpoints: StackEndpoints, catalog: Catalog
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tidemark.app.cli", "demo", "--duration", "1.5"],
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-3000:]
    for mirror in ("demo.orders", "demo.payments", "demo.users"):
        assert f"{mirror}: OK" in result.stdout
    assert "0 missing, 0 extra, 0 different, 0 in flight" in result.stdout
    assert "tidemark demo: every mirror equals its source table" in result.stdout
    report = latest_report(catalog)
    assert report is not None and report.windows >= 2
    assert sum(row.orders for row in report.rows) > 0


def test_the_column_added_midway_reaches_the_orders_mirror(catalog: Catalog) -> None:
    """Runs after the demo above (same module, file order): its ALTER TABLE is in the mirror."""
    orders = catalog.load_table("demo.orders").scan().to_arrow()

    assert ADDED_COLUMN in orders.column_names
    coupons = orders[ADDED_COLUMN]
    assert 0 < pc.count(coupons).as_py() < orders.num_rows  # filled only after the ALTER
