"""A Paimon pipeline's window job (``WindowJobs.run_job``): its SQL, unchanged, reads each input
Paimon table pinned at one snapshot for the whole job and writes an Iceberg table of the
pipeline's ``tidemark.iceberg-catalog``; a re-run reads the snapshots the scheduler pinned."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog
from pyspark.sql import SparkSession

from spark_jobs.paimon_inputs import changes_view_name, view_name
from spark_jobs.window_jobs import JobOutcome, WindowJobs
from tests.paimon_tables import PaimonTables
from tests.spark_jobs.test_paimon_read import (
    CUSTOMERS,
    ORDERS,
    expected_revenue,
    order,
    write_customers,
    write_orders,
)
from tidemark.config import load_pipeline
from tidemark.config.plan import Plan, SinkTable
from tidemark.errors import ConfigError
from tidemark.lake.paimon import SnapshotNotFoundError
from tidemark.stack.endpoints import LakeEndpoint
from tidemark.windows import Window, from_epoch_ms

#: the regions of the customers ``write_customers`` commits: 0 a, 1 b, 2 c then a (at 2500)
REGIONS_AT_2500 = {0: "a", 1: "b", 2: "a"}
REGIONS_AT_1500 = {0: "a", 1: "b", 2: "c"}

#: a GROUP BY over a JOIN of the two inputs, by their sink table names; idempotent per window
REVENUE_SQL = """\
CREATE TABLE IF NOT EXISTS {namespace}.revenue (
    window_end TIMESTAMP, region STRING, revenue DOUBLE) USING iceberg;
DELETE FROM {namespace}.revenue WHERE window_end = TIMESTAMP '${{window_end}}';
INSERT INTO {namespace}.revenue
SELECT TIMESTAMP '${{window_end}}', c.region, SUM(o.amount)
FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id
GROUP BY c.region;
"""

#: per window, how many changes of each kind the window brought to shop.orders
ORDER_CHANGES_SQL = """\
CREATE TABLE IF NOT EXISTS {namespace}.order_changes (
    window_end TIMESTAMP, op STRING, changes BIGINT) USING iceberg;
DELETE FROM {namespace}.order_changes WHERE window_end = TIMESTAMP '${{window_end}}';
INSERT INTO {namespace}.order_changes
SELECT TIMESTAMP '${{window_end}}', _tm_op, COUNT(*) FROM shop.`orders$changes` GROUP BY _tm_op;
"""


@pytest.fixture
def paimon(tmp_path: Path) -> PaimonTables:
    return PaimonTables(str(tmp_path / "warehouse"))


@pytest.fixture
def jobs(
    paimon: PaimonTables, lake: LakeEndpoint, namespace: str, spark: SparkSession, tmp_path: Path
) -> WindowJobs:
    """The window jobs of a Paimon pipeline over ``paimon``'s ``shop`` tables, whose job
    ``revenue`` writes to the test's namespace of the test's Iceberg lake."""
    (tmp_path / "revenue.sql").write_text(REVENUE_SQL.format(namespace=namespace))
    (tmp_path / "changes.sql").write_text(ORDER_CHANGES_SQL.format(namespace=namespace))
    catalog = "".join(
        f"    catalog.properties.{key}: {value}\n" for key, value in lake.properties().items()
    )
    (tmp_path / "p.yaml").write_text(
        "source: {type: mysql, hostname: db, username: cdc, password: pw, tables: shop.\\.*}\n"
        "sink:\n  type: paimon\n  catalog.properties.metastore: filesystem\n"
        f"  catalog.properties.warehouse: {paimon.warehouse}\n"
        f"tidemark:\n  catalog-name: {lake.name}\n  iceberg-catalog:\n{catalog}"
        "  jobs:\n    revenue:\n      inputs: [shop.orders, shop.customers]\n"
        "      sql: revenue.sql\n"
        "    order_changes:\n      inputs: [shop.orders]\n      sql: changes.sql\n"
        "    late_order_changes:\n      inputs: [shop.orders]\n      sql: changes.sql\n"
        "      rerun-late-windows: true\n"
    )
    config = load_pipeline(tmp_path / "p.yaml", {})
    sinks = tuple(
        SinkTable(name, ("id",), "primary key", (name,), None, timedelta(minutes=5), name)
        for name in (ORDERS, CUSTOMERS)
    )
    return WindowJobs(config, Plan((), sinks, (), (), (), ()), spark)


def revenue(catalog: Catalog, namespace: str, end_ms: int) -> dict[str, float]:
    rows = catalog.load_table(f"{namespace}.revenue").scan().to_arrow().to_pylist()
    # Spark's TIMESTAMP is Iceberg's timestamptz
    end = from_epoch_ms(end_ms)
    return {row["region"]: row["revenue"] for row in rows if row["window_end"] == end}


def order_changes(catalog: Catalog, namespace: str, end_ms: int) -> dict[str, int]:
    rows = catalog.load_table(f"{namespace}.order_changes").scan().to_arrow().to_pylist()
    end = from_epoch_ms(end_ms)
    return {row["op"]: row["changes"] for row in rows if row["window_end"] == end}


def window(end_ms: int) -> Window:
    return Window.ending_at(from_epoch_ms(end_ms), timedelta(seconds=1))


def test_a_job_reads_its_paimon_inputs_at_the_window_end_and_writes_iceberg(
    jobs: WindowJobs, paimon: PaimonTables, catalog: Catalog, namespace: str, spark: SparkSession
) -> None:
    write_orders(paimon, bucket=2)  # watermarks 1000, 2000, 3000
    write_customers(paimon)  # watermarks 1500, 2500

    outcome = jobs.run_job("revenue", window(2000))

    # orders at 2000 is its commit 2; customers' first snapshot reaching 2000 is its second
    assert outcome.snapshots == {ORDERS: 2, CUSTOMERS: 2}
    assert (outcome.mirrors, outcome.statements) == ((), 3)
    assert revenue(catalog, namespace, 2000) == pytest.approx(expected_revenue(2, REGIONS_AT_2500))
    assert not spark.catalog.tableExists(view_name(ORDERS)), "the pins are released"


def test_a_job_reads_the_snapshots_the_scheduler_pinned_then_and_on_every_rerun(
    jobs: WindowJobs, paimon: PaimonTables, catalog: Catalog, namespace: str
) -> None:
    write_orders(paimon)
    write_customers(paimon)
    # the scheduler's pins: a watermark report can take a snapshot past its own watermark, so
    # they may be earlier than the first snapshots whose Paimon watermark reaches 2000 (2, 2)
    pinned = {ORDERS: 1, CUSTOMERS: 1}

    first = jobs.run_job("revenue", window(2000), pinned)
    paimon.commit(ORDERS, [order("c", 60, 1, 600.0)], 4000, order=1000)
    again = jobs.run_job("revenue", window(2000), pinned)

    assert first.snapshots == again.snapshots == pinned
    assert revenue(catalog, namespace, 2000) == pytest.approx(expected_revenue(1, REGIONS_AT_1500))


def test_a_pinned_snapshot_expired_since_is_read_at_the_oldest_one_kept(
    jobs: WindowJobs, paimon: PaimonTables, caplog: pytest.LogCaptureFixture
) -> None:
    write_orders(paimon)
    write_customers(paimon)
    # what snapshot expiry does to the snapshot's own file
    (Path(paimon.warehouse) / "shop.db" / "orders" / "snapshot" / "snapshot-1").unlink()

    outcome: JobOutcome = jobs.run_job("revenue", window(1000), {ORDERS: 1, CUSTOMERS: 1})

    assert outcome.snapshots == {ORDERS: 2, CUSTOMERS: 1}
    assert "Reading the oldest snapshots kept instead (shop.orders at 2" in caplog.text


def test_a_job_reads_a_windows_changes_after_the_snapshot_the_window_before_read(
    jobs: WindowJobs, paimon: PaimonTables, catalog: Catalog, namespace: str, spark: SparkSession
) -> None:
    write_orders(paimon)  # commits at watermarks 1000, 2000, 3000

    # by hand: after the first snapshot reaching the start (1000), snapshot 1
    jobs.run_job("order_changes", window(2000))
    # the scheduler's: after the snapshot the window before read
    jobs.run_job("order_changes", window(3000), {ORDERS: 3}, since={ORDERS: 2})

    assert order_changes(catalog, namespace, 2000) == {"u": 2, "d": 1, "c": 1}  # commit 2
    assert order_changes(catalog, namespace, 3000) == {"d": 2, "u": 1, "c": 1}  # commit 3
    assert not spark.catalog.tableExists(changes_view_name(ORDERS)), "the views are released"

    # a window whose window before read snapshot 1 gets commits 2 and 3
    jobs.run_job("order_changes", window(3000), {ORDERS: 3}, since={ORDERS: 1})
    assert order_changes(catalog, namespace, 3000) == {"u": 3, "d": 3, "c": 2}


def test_changes_whose_start_cannot_be_told_after_an_expiry_are_refused(
    jobs: WindowJobs, paimon: PaimonTables
) -> None:
    write_orders(paimon)
    (Path(paimon.warehouse) / "shop.db" / "orders" / "snapshot" / "snapshot-1").unlink()

    # the first snapshot reaching 2000 is 2; had snapshot 1 reached it too, the changes would
    # start there, and snapshot 1 is gone
    with pytest.raises(SnapshotNotFoundError, match="snapshot 1, which would tell, has expired"):
        jobs.run_job("order_changes", window(3000))


def test_a_job_that_reruns_late_windows_may_not_read_changes(
    jobs: WindowJobs, paimon: PaimonTables
) -> None:
    """A late window runs again at a later window's snapshots: its own changes are lost."""
    write_orders(paimon)

    with pytest.raises(ConfigError, match=r"reads shop.`orders\$changes` and has rerun-late"):
        jobs.run_job("late_order_changes", window(3000))
