"""Ingest rides out the services around it: killed and started again under a workload, the
process stays up, says so in a few lines, and every change lands once."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from bench.workloads.stock import Workload, create_stock
from tests.ingest.pipelines import write_pipeline
from tests.ingest.stock_workload import (
    assert_every_change_once_in_order,
    has_snapshot,
    ingest_to_end,
)
from tests.outages.conftest import OwnS3Lake
from tidemark.catalog import load_catalog
from tidemark.stack.endpoints import CatalogEndpoint, SourceEndpoint
from tidemark.stack.postgres import Postgres
from tidemark.stack.process import wait_for
from tidemark.stack.service import Service

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


def _kill(service: Service) -> None:
    pid = service.running_pid()
    assert pid is not None, f"the test's {service.name} is not running"
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not service.is_healthy(), timeout=30)


def _status(pipeline: Path, waiting_for: str) -> dict[str, Any]:
    """``tidemark status --json`` once it shows the active ingest ``waiting_for`` a service
    (the lease's query says so from its next round, within a second or so); it exits 1
    meanwhile."""

    def shown() -> dict[str, Any]:
        status = subprocess.run(
            [sys.executable, "-m", "tidemark.app.cli", "status", "--json", str(pipeline)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert status.returncode == 1, status
        document: dict[str, Any] = json.loads(status.stdout)
        active = (document["ingest"] or {}).get("active") or {}
        return document if waiting_for in (active.get("waiting_for") or "") else {}

    return wait_until(f"status showing ingest {waiting_for}", shown, 60, interval=0.5)


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
            status = _status(pipeline, "waiting for the catalog since")
            assert status["unreadable"] == [
                "the changelog tables: the catalog (connection to server at "
                f'"127.0.0.1", port {own_postgres.port} failed: Connection refused)'
            ]
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


def _fill(folder: Path) -> Path:
    """Fill ``folder``'s filesystem up with one file; returns it."""
    filler = folder / "filler"
    chunk = bytes(1 << 16)
    with filler.open("wb", buffering=0) as stream:
        try:
            while True:
                stream.write(chunk)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    return filler


@pytest.mark.timeout(600)
def test_ingest_pauses_on_a_full_warehouse_disk_and_goes_on_once_space_is_freed(
    source: SourceEndpoint,
    own_lake: CatalogEndpoint,
    small_disk: Path,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    lake = own_lake.model_copy(update={"warehouse": small_disk.as_uri()})
    catalog = load_catalog(lake.name, lake.properties())
    create_stock(source, source_database)
    pipeline = write_pipeline(
        tmp_path / "stock.yaml",
        source,
        lake,
        database=source_database,
        tables="stock",
        namespace="outages",
        server_id=server_id,
    )
    changelog = "outages.stock_changelog"
    ingest = _Ingest(pipeline, tmp_path / "ingest.log")
    workload = Workload(source.admin_source(), source_database, 20261129, (1, 20), 0.005)
    try:
        assert wait_for(lambda: has_snapshot(catalog, changelog), timeout=120), ingest.log
        workload.start()
        _written(workload, 200)
        filler = _fill(small_disk)
        ingest.wait_until_said(f"(no space left under {small_disk})", 1)
        _written(workload, 300)
        assert ingest.process.poll() is None, ingest.log.read_text()
        status = _status(pipeline, "waiting for the warehouse's disk since")
        assert [table["rows"] > 0 for table in status["tables"]] == [True]
        filler.unlink()
        ingest.wait_until_said("The warehouse's disk is back", 1)
        _written(workload, 100)
        workload.stop()
        assert ingest.stop() in (0, -signal.SIGTERM), ingest.log.read_text()
    finally:
        workload.stop()
        ingest.kill()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    assert_every_change_once_in_order(catalog.load_table(changelog), workload)
    log = ingest.log.read_text()
    assert "Traceback" not in log, log
    said = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert len(said) <= 3, "\n".join(said)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("killed", ["store", "rest"])
def test_ingest_waits_out_its_object_store_or_rest_catalog_killed_and_started_again(
    killed: str,
    source: SourceEndpoint,
    own_s3_lake: OwnS3Lake,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    service: Service = own_s3_lake.store if killed == "store" else own_s3_lake.rest
    lake = own_s3_lake.endpoint
    catalog = load_catalog(lake.name, lake.properties())
    create_stock(source, source_database)
    pipeline = write_pipeline(
        tmp_path / "stock.yaml",
        source,
        lake,
        database=source_database,
        tables="stock",
        namespace="outages",
        server_id=server_id,
    )
    changelog = "outages.stock_changelog"
    ingest = _Ingest(pipeline, tmp_path / "ingest.log")
    workload = Workload(source.admin_source(), source_database, 20261129, (1, 20), 0.005)
    try:
        assert wait_for(lambda: has_snapshot(catalog, changelog), timeout=120), ingest.log
        workload.start()
        _written(workload, 200)
        _kill(service)
        assert wait_for(lambda: ingest.said(" is unavailable (") >= 1, timeout=60), (
            ingest.log.read_text()
        )
        _written(workload, 300)
        assert ingest.process.poll() is None, ingest.log.read_text()
        service.up()
        assert wait_for(
            lambda: ingest.said(" is back after ") == ingest.said(" is unavailable ("),
            timeout=120,
        ), ingest.log.read_text()
        _written(workload, 100)
        workload.stop()
        assert ingest.stop() in (0, -signal.SIGTERM), ingest.log.read_text()
    finally:
        workload.stop()
        ingest.kill()
    ingest_to_end(pipeline, source.cdc_source(server_id))

    assert_every_change_once_in_order(catalog.load_table(changelog), workload)
    log = ingest.log.read_text()
    assert "Traceback" not in log, log
    said = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert len(said) <= 4, "\n".join(said)
