"""``tidemark run`` rides out the services around it: under a workload its catalog and state
database (one PostgreSQL), Kafka, both at once, the source and its own Spark driver are killed
and come back; no process exits, the log says each outage in a few lines, every change is in
the changelog once and the mirror equals the source."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from bench.polling import wait_until
from bench.scale_bench import descendants
from bench.workloads.stock import Workload, create_stock
from tests.end_to_end import mirror_window_end
from tests.ingest.stock_workload import assert_every_change_once_in_order, has_snapshot
from tests.outages.services import OwnSource, kill
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import CatalogEndpoint
from tidemark.stack.kafka import Kafka
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.postgres import Postgres
from tidemark.stack.service import Service

#: transactions the workload commits while a service is down
DURING_OUTAGE = 300


#: a Spark SQL job per window (the mirror merges run without Spark): what the driver's death
#: interrupts, and what shows that a new driver took over
STOCK_PER_WINDOW_SQL = """\
CREATE TABLE IF NOT EXISTS tidemark.outages.stock_per_window (
    window_start TIMESTAMP, items BIGINT) USING iceberg;
MERGE INTO tidemark.outages.stock_per_window AS t
USING (
    SELECT TIMESTAMP '${window_start}' AS window_start, count(*) AS items
    FROM tidemark.outages.stock
) AS s
ON t.window_start = s.window_start
WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
"""


def _windows_block(kafka: Kafka) -> str:
    return (
        "tidemark:\n"
        "  window: 1 min\n"
        "  reports:\n"
        "    topic: reports.outages\n"
        f"    kafka.bootstrap.servers: {kafka.bootstrap_servers}\n"
        "  ingest:\n"
        "    flush-interval: 1 s\n"
        "    watermark-report-interval: 2 s\n"
        "  jobs:\n"
        "    stock_per_window:\n"
        "      inputs: [outages.stock]\n"
        "      sql: stock_per_window.sql\n"
    )


def _job_windows(catalog: Catalog) -> int:
    try:
        return len(catalog.load_table("outages.stock_per_window").scan().to_arrow())
    except NoSuchTableError:
        return 0


def _server_now_ms(source: SourceConnection) -> int:
    with source.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
        row = cursor.fetchone()
    assert row is not None
    return int(row[0])


def _spark_driver(run: subprocess.Popen[bytes]) -> int:
    """The pid of the JVM the run's scheduler started for Spark."""
    for pid in descendants(run.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"org.apache.spark.deploy.SparkSubmit" in command:
            return pid
    raise AssertionError(f"no Spark driver JVM under the run (pid {run.pid})")


class _Outages:
    """Faults while the workload writes, each lasting ``DURING_OUTAGE`` of its transactions."""

    def __init__(self, run: subprocess.Popen[bytes], log: Path, workload: Workload) -> None:
        self._run = run
        self._log = log
        self._workload = workload

    def written(self, transactions: int) -> None:
        target = self._workload.transactions + transactions
        wait_until(
            f"{transactions} more transactions",
            lambda: self.alive() and self._workload.transactions >= target,
            120,
        )

    def down(self, *services: Service) -> None:
        for service in services:
            kill(service)
        self.written(DURING_OUTAGE)
        for service in services:
            service.up()
        self.written(DURING_OUTAGE)  # back to normal before the next fault

    def alive(self) -> bool:
        assert self._run.poll() is None, self._log.read_text()
        return True


@pytest.mark.timeout(900)
def test_tidemark_run_rides_out_its_catalog_kafka_both_the_source_and_its_spark_driver(
    own_source: OwnSource,
    own_lake: CatalogEndpoint,
    own_catalog: Catalog,
    own_postgres: Postgres,
    own_kafka: Kafka,
    tmp_path: Path,
    server_id: int,
) -> None:
    source, source_database = own_source.endpoint, own_source.database
    create_stock(source, source_database)
    (tmp_path / "stock_per_window.sql").write_text(STOCK_PER_WINDOW_SQL)
    pipeline = tmp_path / "stock.yaml"
    pipeline.write_text(
        local_pipeline(
            source,
            own_lake,
            database=source_database,
            tables="stock",
            namespace="outages",
            server_id=server_id,
            extra=_windows_block(own_kafka),
        )
    )
    mirror, changelog = "outages.stock", "outages.stock_changelog"
    log = tmp_path / "run.log"
    command = [sys.executable, "-m", "tidemark.app.cli", "run", str(pipeline)]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    workload = Workload(source.admin_source(), source_database, 20261129, (1, 5), 0.01)
    outages = _Outages(run, log, workload)
    try:
        # ingest's first commit holds its start: every change after it is streamed
        wait_until("ingest's first commit", lambda: has_snapshot(own_catalog, changelog), 120)
        workload.start()
        wait_until("a first window of the job", lambda: _job_windows(own_catalog), 240)
        outages.down(own_postgres)
        outages.down(own_kafka)
        outages.down(own_postgres, own_kafka)
        # the source: its writes stop with it (a transaction cut short has no known outcome)
        workload.stop()
        kill(own_source.server)
        own_source.server.up()
        workload.start()
        outages.written(DURING_OUTAGE)
        done = _job_windows(own_catalog)
        os.kill(_spark_driver(run), signal.SIGKILL)
        wait_until(
            "the job's next windows, on a new Spark driver",
            lambda: outages.alive() and _job_windows(own_catalog) >= done + 2,
            240,
        )
        workload.stop()
        last_change_ms = _server_now_ms(source.admin_source())
        wait_until(
            "a window after the last change merged",
            lambda: outages.alive() and mirror_window_end(own_catalog, mirror) > last_change_ms,
            300,
        )
    finally:
        workload.stop()
        if run.poll() is None:
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=180)
    verified = subprocess.run(
        [sys.executable, "-m", "tidemark.app.cli", "verify", str(pipeline)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert verified.returncode == 0, verified
    assert_every_change_once_in_order(own_catalog.load_table(changelog), workload)
    said = [
        line
        for line in log.read_text().splitlines()
        if " WARNING " in line or " ERROR " in line or "Traceback" in line
    ]
    # each of the four faults in a few lines, whichever process saw it
    assert len(said) <= 24, "\n".join(said)
