"""Ingest rides out the services around it: killed and started again under a workload, the
process stays up, says so in a few lines, and every change lands once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog

from bench.workloads.stock import Workload, create_stock
from tests.ingest.pipelines import write_pipeline
from tests.ingest.stock_workload import (
    assert_every_change_once_in_order,
    has_snapshot,
    ingest_to_end,
)
from tidemark.stack.endpoints import CatalogEndpoint, SourceEndpoint
from tidemark.stack.postgres import Postgres
from tidemark.stack.process import wait_for

OUTAGES = 2


class _Ingest:
    """``tidemark ingest`` as a process of its own, its log in a file."""

    def __init__(self, pipeline: Path, log: Path) -> None:
        self.log = log
        self._output = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tidemark.app.cli", "ingest", str(pipeline)],
            stdout=self._output,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def said(self, text: str) -> int:
        return self.log.read_text().count(text)

    def wait_until_said(self, text: str, times: int, timeout: float = 120) -> None:
        """Wait until the log holds ``text`` ``times`` times (fails if more, or not in time)."""
        assert wait_for(lambda: self.said(text) >= times, timeout=timeout), self.log.read_text()
        assert self.said(text) == times, self.log.read_text()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=120)
        self._output.close()
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._output.close()


def _kill(postgres: Postgres) -> None:
    pid = postgres.running_pid()
    assert pid is not None, "the test's PostgreSQL is not running"
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not postgres.is_healthy(), timeout=30)


def _written(workload: Workload, transactions: int) -> None:
    """Wait until ``workload`` has committed ``transactions`` more."""
    target = workload.transactions + transactions
    assert wait_for(lambda: workload.transactions >= target, timeout=60)


@pytest.mark.timeout(600)
def test_ingest_waits_out_its_catalog_killed_and_started_again(
    source: SourceEndpoint,
    own_lake: CatalogEndpoint,
    own_catalog: Catalog,
    own_postgres: Postgres,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    create_stock(source, source_database)
    pipeline = write_pipeline(
        tmp_path / "stock.yaml",
        source,
        own_lake,
        database=source_database,
        tables="stock",
        namespace="outages",
        server_id=server_id,
    )
    changelog = "outages.stock_changelog"
    ingest = _Ingest(pipeline, tmp_path / "ingest.log")
    workload = Workload(source.admin_source(), source_database, 20261129, (1, 20), 0.005)
    try:
        assert wait_for(lambda: has_snapshot(own_catalog, changelog), timeout=120), ingest.log
        workload.start()
        for outage in range(1, OUTAGES + 1):
            _written(workload, 200)  # between outages, ingest commits as usual
            _kill(own_postgres)
            ingest.wait_until_said("The catalog is unavailable", outage)
            _written(workload, 300)  # the source goes on being written while the catalog is down
            own_postgres.up()
            ingest.wait_until_said("The catalog is back", outage)
            assert ingest.process.poll() is None, ingest.log.read_text()
        workload.stop()
        assert ingest.stop() in (0, -signal.SIGTERM), ingest.log.read_text()
    finally:
        workload.stop()
        ingest.kill()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    assert_every_change_once_in_order(own_catalog.load_table(changelog), workload)
    log = ingest.log.read_text()
    assert "Traceback" not in log, log
    said = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert len(said) <= 3 * OUTAGES, "\n".join(said)
