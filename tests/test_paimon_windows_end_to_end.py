"""A Paimon pipeline end to end, as ``tidemark run`` runs it: ingest writes the Paimon tables and
publishes commit reports to Kafka, the scheduler fires one-minute windows on their watermarks, and
a job's SQL (``FROM db.t`` names, a JOIN and a GROUP BY, unchanged from an Iceberg pipeline's)
reads both Paimon tables at each window's end and writes an Iceberg table: each window's rows are
what the source held at that window's end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from bench.polling import wait_until
from tests.end_to_end import one_minute_windows
from tidemark.lake.paimon import open_paimon_catalog
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.windows import from_epoch_ms

if TYPE_CHECKING:
    import pymysql

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]

MINUTE_MS = 60_000

#: revenue and orders per region, written per window; unchanged, it would run on Iceberg mirrors
REVENUE_SQL = """\
CREATE TABLE IF NOT EXISTS {namespace}.revenue (
    window_end TIMESTAMP, region STRING, revenue BIGINT, orders BIGINT) USING iceberg;
DELETE FROM {namespace}.revenue WHERE window_end = TIMESTAMP '${{window_end}}';
INSERT INTO {namespace}.revenue
SELECT TIMESTAMP '${{window_end}}', c.region, SUM(o.amount), COUNT(*)
FROM {namespace}.orders o JOIN {namespace}.customers c ON o.customer_id = c.id
GROUP BY c.region;
"""

#: the same, asked of the source
SOURCE_REVENUE = (
    "SELECT c.region, SUM(o.amount), COUNT(*) FROM orders o "
    "JOIN customers c ON o.customer_id = c.id GROUP BY c.region"
)

Revenue = dict[str, tuple[int, int]]


def _source_revenue(connection: Connection) -> Revenue:
    with connection.cursor() as cursor:
        cursor.execute(SOURCE_REVENUE)
        return {region: (int(total), int(count)) for region, total, count in cursor.fetchall()}


def _server_ms(connection: Connection) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
        row = cursor.fetchone()
        assert row is not None
        return int(row[0])


def _next_boundary(instant_ms: int) -> int:
    return (instant_ms // MINUTE_MS + 1) * MINUTE_MS


def _paimon_watermark(warehouse: Path, table: str) -> int:
    """The newest Paimon watermark of ``table``; 0 before it has one."""
    paimon = open_paimon_catalog({"warehouse": str(warehouse)}).load_table(table)
    if paimon is None or not paimon.has_snapshots():
        return 0
    return next(paimon.snapshots()).watermark or 0


def _written(catalog: Catalog, namespace: str, end_ms: int) -> Revenue | None:
    """The job's rows for the window ending at ``end_ms``; None before it wrote them."""
    try:
        table = catalog.load_table(f"{namespace}.revenue")
    except NoSuchTableError:
        return None
    end = from_epoch_ms(end_ms)
    rows = [r for r in table.scan().to_arrow().to_pylist() if r["window_end"] == end]
    return {r["region"]: (r["revenue"], r["orders"]) for r in rows} or None


def test_a_job_reads_the_paimon_tables_at_each_window_end_and_writes_iceberg(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    reports_topic: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE customers (id INT PRIMARY KEY, region VARCHAR(10))")
        cursor.execute("INSERT INTO customers VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
        cursor.execute(
            "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, amount BIGINT NOT NULL)"
        )
        cursor.execute("INSERT INTO orders SELECT seq, 1 + seq % 3, seq FROM seq_1_to_60")
    (tmp_path / "revenue.sql").write_text(REVENUE_SQL.format(namespace=namespace))
    iceberg = "".join(
        f"    catalog.properties.{key}: {value}\n"
        for key, value in endpoints.catalog.properties().items()
    )
    warehouse = tmp_path / "paimon"
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=source_database,
            tables="orders|customers",
            namespace=namespace,
            server_id=server_id,
            startup="initial",
            paimon_warehouse=str(warehouse),
            extra=one_minute_windows(endpoints, reports_topic)
            # the Paimon snapshots' own watermarks move every second too, not only the reports'
            + "    idle-commit-interval: 1 s\n"
            + f"  iceberg-catalog:\n{iceberg}"
            + "  jobs:\n    revenue:\n"
            + f"      inputs: [{namespace}.orders, {namespace}.customers]\n"
            + "      sql: revenue.sql\n",
        )
    )
    log = tmp_path / "run.log"
    run = subprocess.Popen(
        [sys.executable, "-m", "tidemark.app.cli", "run", str(path), "--max-seconds", "400"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )

    def reached(end_ms: int) -> bool:
        assert run.poll() is None, log.read_text()
        return all(
            _paimon_watermark(warehouse, f"{namespace}.{table}") >= end_ms
            for table in ("orders", "customers")
        )

    started = _server_ms(admin_connection)
    try:
        # bootstrapped and streaming: the job's first window ends before the next boundary
        wait_until("both tables bootstrapped", lambda: reached(started), 240, 0.5)
        with admin_connection.cursor() as cursor:
            cursor.execute("UPDATE orders SET amount = amount * 10 WHERE id <= 20")
            cursor.execute("DELETE FROM orders WHERE id > 50")
        first_state = _source_revenue(admin_connection)
        # no change until both tables are complete past the next window end: the source holds
        # ``first_state`` at that end
        first_end = _next_boundary(_server_ms(admin_connection))
        wait_until("both tables past the first window end", lambda: reached(first_end), 180, 0.5)
        with admin_connection.cursor() as cursor:
            cursor.execute("UPDATE customers SET region = 'us' WHERE id = 3")
            cursor.execute("INSERT INTO orders VALUES (100, 3, 1000), (101, 2, 7)")
            cursor.execute("DELETE FROM orders WHERE id = 1")
        second_state = _source_revenue(admin_connection)
        second_end = _next_boundary(_server_ms(admin_connection))
        wait_until("both tables past the second window end", lambda: reached(second_end), 180, 0.5)

        def written(end_ms: int) -> Revenue | None:
            assert run.poll() is None, log.read_text()
            return _written(catalog, namespace, end_ms)

        at_first = wait_until("the first window's rows", lambda: written(first_end), 180, 0.5)
        at_second = wait_until("the second window's rows", lambda: written(second_end), 180, 0.5)
    finally:
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=120)

    assert first_state != second_state
    assert at_first == first_state
    assert at_second == second_state
    assert run.returncode == 0, log.read_text()
    text = log.read_text()
    window = f"[{_iso(first_end - MINUTE_MS)}, {_iso(first_end)})"
    assert f"Job revenue ran 3 statements for {window}" in text
    assert f"read {namespace}.orders at snapshot" in text
    assert "Merged" not in text, "a Paimon table is its own mirror: nothing is merged"


def _iso(instant_ms: int) -> str:
    return from_epoch_ms(instant_ms).isoformat()
