"""The whole pipeline on the real services, as ``tidemark run`` runs it: ingest bootstraps and
streams, publishing commit reports to Kafka; the scheduler fires one-minute windows from them;
Spark merges the mirror; a table created meanwhile is onboarded and gets a mirror of its own
without a restart; ``tidemark status`` shows the windows and ``tidemark verify`` finds the
mirrors equal to MariaDB; the status page, loaded in headless Chromium, shows each table's
freshness, the windows done and the error rows. A job that asks for it runs a window again when a
change arrives late for it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from selenium.webdriver.common.by import By

from bench.polling import wait_until
from tests.browser import chromium
from tests.end_to_end import mirror_window_end, one_minute_windows
from tests.prometheus import labels, scrape
from tests.stack_helpers import free_ports
from tidemark.app.cli import main
from tidemark.stack.endpoints import LakeEndpoint, StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

if TYPE_CHECKING:
    import pymysql
    from selenium.webdriver.remote.webdriver import WebDriver

    Connection = pymysql.connections.Connection[pymysql.cursors.Cursor]


def _run(path: Path, log: Path, *options: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tidemark.app.cli",
            "run",
            str(path),
            "--max-seconds",
            "300",
            *options,
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )


def _stop(run: subprocess.Popen[bytes]) -> None:
    run.send_signal(signal.SIGTERM)
    run.wait(timeout=120)


@dataclass(frozen=True)
class _PageSeen:
    chart_points: int
    orders_lag: str
    error_row: str
    ingest: list[str | None]


def _status_page_shows(
    browser: WebDriver, url: str, namespace: str, error_table: str, kept: Path
) -> _PageSeen | None:
    """What the page shows of the pipeline, once it shows a freshness chart of orders, a
    mirror window done and the error row; None until then. The page last seen is ``kept``."""
    browser.get(url)
    kept.write_text(browser.page_source)
    [section] = browser.find_elements(By.CSS_SELECTOR, f'section[data-pipeline="{namespace}"]')
    orders = section.find_elements(By.CSS_SELECTOR, f'figure[data-table="{namespace}.orders"]')
    lines = [
        line.get_attribute("points") or ""
        for figure in orders
        for line in figure.find_elements(By.TAG_NAME, "polyline")
    ]
    done = section.find_elements(
        By.CSS_SELECTOR, f'tr[data-task="mirror:{namespace}.orders"] [data-state="done"]'
    )
    errors = section.find_elements(By.CSS_SELECTOR, f'tr[data-error-table="{error_table}"]')
    if not (lines and done and errors):
        return None
    return _PageSeen(
        chart_points=len(lines[0].split()),
        orders_lag=orders[0].find_element(By.CSS_SELECTOR, "[data-lag]").text,
        error_row=errors[0].text,
        ingest=[
            span.get_attribute("data-state")
            for span in section.find_elements(By.CSS_SELECTOR, '[data-role="ingest"]')
        ],
    )


@pytest.mark.every_storage
def test_windows_fired_from_commit_reports_keep_the_mirror_equal_to_the_source(
    endpoints: StackEndpoints,
    lake: LakeEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    admin_connection: Connection,
    reports_topic: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    server_id: int,
) -> None:
    with admin_connection.cursor() as cursor:
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, item VARCHAR(40), qty INT)")
        cursor.execute("INSERT INTO orders SELECT seq, CONCAT('item-', seq), 1 FROM seq_1_to_300")
        # a row the lake cannot hold goes to the error table, which the status page shows
        cursor.execute("CREATE TABLE orders_shipped (id INT PRIMARY KEY, day DATE NOT NULL)")
        cursor.execute("SET SESSION sql_mode = ''")
        cursor.execute("INSERT INTO orders_shipped VALUES (1, '0000-00-00'), (2, '2026-11-27')")
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            lake,
            database=source_database,
            tables="orders\\w*",
            namespace=namespace,
            server_id=server_id,
            startup="initial",
            extra=one_minute_windows(endpoints, reports_topic)
            + "  maintenance:\n    interval: 1 min\n",
        )
    )
    log = tmp_path / "run.log"
    # the scheduler's metrics; its ingest child's are on the next port
    metrics_port, ui_port = free_ports(2)
    run = _run(
        path,
        log,
        "--metrics-port",
        str(metrics_port),
        "--ui-port",
        str(ui_port),
        "--ui-refresh",
        "5",
    )
    try:
        with admin_connection.cursor() as cursor:
            cursor.execute("UPDATE orders SET qty = 2 WHERE id <= 100")
            cursor.execute("DELETE FROM orders WHERE id > 250")
            cursor.execute("INSERT INTO orders VALUES (1000, 'late', 7)")
            # a table born while running: ingest onboards it, the scheduler adopts it
            cursor.execute("CREATE TABLE orders_refunds (id INT PRIMARY KEY, amount INT)")
            cursor.execute("INSERT INTO orders_refunds VALUES (1, 5), (2, 7)")
            cursor.execute("UPDATE orders_refunds SET amount = 6 WHERE id = 1")
            cursor.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
            row = cursor.fetchone()
            assert row is not None
            changed_ms = int(row[0])

        def covered() -> bool:
            assert run.poll() is None, log.read_text()
            return all(
                mirror_window_end(catalog, f"{namespace}.{table}") > changed_ms
                for table in ("orders", "orders_refunds")
            )

        def maintained() -> bool:  # every minute, between the windows
            assert run.poll() is None, log.read_text()
            return f"Maintained the tables of {namespace}.orders" in log.read_text()

        wait_until("a window covering the changes", covered, 240, interval=0.5)
        wait_until("the scheduler maintaining the tables", maintained, 120, interval=0.5)
        scheduler, ingest = scrape(metrics_port), scrape(metrics_port + 1)
        with chromium() as browser:
            page = wait_until(
                "the status page showing freshness, windows done and the error row",
                lambda: _status_page_shows(
                    browser,
                    f"http://127.0.0.1:{ui_port}/",
                    namespace,
                    f"{namespace}.orders_shipped",
                    tmp_path / "status_page.html",
                ),
                60,
                interval=1,
            )
    finally:
        _stop(run)

    assert page is not None and page.chart_points >= 2
    assert page.orders_lag.startswith("lag ")
    assert "0000-00-00" in page.error_row
    assert page.ingest == ["active"]

    # every process serves its metrics: the scheduler's merges, ingest's bootstrap (300 rows,
    # or 251 when the changes came first)
    merges = labels(pipeline=namespace, task=f"mirror:{namespace}.orders", outcome="succeeded")
    assert scheduler.get(("tidemark_scheduler_windows_total", merges), 0) >= 1
    read = labels(pipeline=namespace, table=f"{source_database}.orders")
    assert ingest.get(("tidemark_ingest_bootstrap_rows", read), 0) >= 251
    assert ingest.get(("tidemark_ingest_active", labels(pipeline=namespace))) == 1

    assert run.returncode == 0, log.read_text()
    assert main(["status", str(path)]) == 0
    status = capsys.readouterr().out
    assert f"mirror:{namespace}.orders" in status
    assert f"mirror:{namespace}.orders_refunds" in status
    for table in ("orders", "orders_refunds"):  # orders_shipped lacks its error row
        assert main(["verify", str(path), "--table", f"{namespace}.{table}"]) == 0


#: counts each window's orders by when they were placed, as a T+1 report would per day
PER_WINDOW_SQL = """\
CREATE TABLE IF NOT EXISTS tidemark.{namespace}.orders_per_window (
    window_start TIMESTAMP, orders BIGINT) USING iceberg;
MERGE INTO tidemark.{namespace}.orders_per_window AS t
USING (
    SELECT TIMESTAMP '${{window_start}}' AS window_start, count(*) AS orders
    FROM tidemark.{namespace}.orders
    WHERE placed_at >= TIMESTAMP '${{window_start}}' AND placed_at < TIMESTAMP '${{window_end}}'
) AS s
ON t.window_start = s.window_start
WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
"""


def test_a_change_arriving_late_for_a_window_makes_a_job_that_asks_run_that_window_again(
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
        cursor.execute("CREATE TABLE orders (id INT PRIMARY KEY, placed_at DATETIME(3))")
        cursor.execute("INSERT INTO orders VALUES (1, UTC_TIMESTAMP(3))")
    (tmp_path / "per_window.sql").write_text(PER_WINDOW_SQL.format(namespace=namespace))
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=source_database,
            tables="orders",
            namespace=namespace,
            server_id=server_id,
            startup="initial",
            extra=one_minute_windows(endpoints, reports_topic)
            + (
                "  jobs:\n"
                "    per_window:\n"
                f"      inputs: [{namespace}.orders]\n"
                "      sql: per_window.sql\n"
                "      rerun-late-windows: true\n"
            ),
        )
    )

    def counts() -> dict[datetime, int]:
        assert run.poll() is None, log.read_text()
        try:
            table = catalog.load_table(f"{namespace}.orders_per_window")
        except NoSuchTableError:
            return {}
        rows = table.scan().to_arrow().to_pylist()
        return {row["window_start"]: row["orders"] for row in rows}

    log = tmp_path / "run.log"
    run = _run(path, log)
    try:
        first = min(wait_until("the job's first window", counts, 240, interval=0.5))
        counted = counts()[first]
        # the source's clock steps back into that window for one commit: the order is late
        placed = first + timedelta(seconds=5)
        with admin_connection.cursor() as cursor:
            cursor.execute("SET timestamp = %s", (placed.timestamp(),))
            cursor.execute("INSERT INTO orders VALUES (2, %s)", (placed.replace(tzinfo=None),))
            cursor.execute("SET timestamp = DEFAULT")
        wait_until(
            "the window run again with the late order",
            lambda: counts()[first] == counted + 1,
            240,
            interval=0.5,
        )
    finally:
        _stop(run)

    assert run.returncode == 0, log.read_text()
    text = log.read_text()
    assert (
        f"window [{first.isoformat()}, {(first + timedelta(minutes=1)).isoformat()}) again" in text
    )
