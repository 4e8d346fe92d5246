"""Ingest rides out the services around it: killed and started again under a workload, the
process stays up, says so in a few lines, and every change lands once."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.polling import wait_until
from bench.workloads.stock import Workload, create_stock
from tests.ingest.pipelines import write_pipeline
from tests.ingest.stock_workload import (
    assert_every_change_once_in_order,
    has_snapshot,
    ingest_to_end,
)
from tests.outages.services import OwnS3Lake, kill
from tidemark.catalog import load_catalog
from tidemark.stack.endpoints import CatalogEndpoint, LakeEndpoint, SourceEndpoint
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

    def assert_running(self) -> None:
        assert self.process.poll() is None, self.log.read_text()

    def warnings(self) -> list[str]:
        """The lines logged at WARNING or ERROR."""
        lines = self.log.read_text().splitlines()
        return [line for line in lines if "WARNING" in line or "ERROR" in line]

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


@dataclass(frozen=True)
class _Scenario:
    """Ingest of a pipeline's one table under a workload, running."""

    ingest: _Ingest
    workload: Workload
    pipeline: Path


@contextmanager
def _under_workload(
    source: SourceEndpoint,
    lake: LakeEndpoint,
    database: str,
    tmp_path: Path,
    server_id: int,
) -> Iterator[_Scenario]:
    """``tidemark ingest`` of ``database``'s stock table into ``lake``, with the workload
    writing from its first commit on, for the block; then ingest stopped, run to the source's
    end, and every change found in the changelog once, in order, with no traceback logged."""
    catalog = load_catalog(lake.name, lake.properties())
    create_stock(source, database)
    pipeline = write_pipeline(
        tmp_path / "stock.yaml",
        source,
        lake,
        database=database,
        tables="stock",
        namespace="outages",
        server_id=server_id,
    )
    changelog = "outages.stock_changelog"
    ingest = _Ingest(pipeline, tmp_path / "ingest.log")
    workload = Workload(source.admin_source(), database, 20261129, (1, 20), 0.005)
    try:
        assert wait_for(lambda: has_snapshot(catalog, changelog), timeout=120), ingest.log
        workload.start()
        _written(workload, 200)  # ingest commits as usual before the first outage
        yield _Scenario(ingest, workload, pipeline)
        workload.stop()
        assert ingest.stop() in (0, -signal.SIGTERM), ingest.log.read_text()
    finally:
        workload.stop()
        ingest.kill()
    ingest_to_end(pipeline, source.cdc_source(server_id))
    assert_every_change_once_in_order(catalog.load_table(changelog), workload)
    assert "Traceback" not in ingest.log.read_text(), ingest.log.read_text()


@pytest.mark.timeout(600)
def test_ingest_waits_out_its_catalog_killed_and_started_again(
    source: SourceEndpoint,
    own_lake: CatalogEndpoint,
    own_postgres: Postgres,
    source_database: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    with _under_workload(source, own_lake, source_database, tmp_path, server_id) as run:
        for outage in range(1, OUTAGES + 1):
            if outage > 1:
                _written(run.workload, 200)  # between outages, ingest commits as usual
            kill(own_postgres)
            run.ingest.wait_until_said("The catalog is unavailable", outage)
            _written(run.workload, 300)  # the source goes on being written meanwhile
            status = _status(run.pipeline, "waiting for the catalog since")
            assert status["unreadable"] == [
                "the changelog tables: the catalog (connection to server at "
                f'"127.0.0.1", port {own_postgres.port} failed: Connection refused)'
            ]
            own_postgres.up()
            run.ingest.wait_until_said("The catalog is back", outage)
            run.ingest.assert_running()

    said = run.ingest.warnings()
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
    with _under_workload(source, lake, source_database, tmp_path, server_id) as run:
        filler = _fill(small_disk)
        run.ingest.wait_until_said(f"(no space left under {small_disk})", 1)
        _written(run.workload, 300)
        run.ingest.assert_running()
        status = _status(run.pipeline, "waiting for the warehouse's disk since")
        assert [table["rows"] > 0 for table in status["tables"]] == [True]
        filler.unlink()
        run.ingest.wait_until_said("The warehouse's disk is back", 1)
        _written(run.workload, 100)

    said = run.ingest.warnings()
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
    with _under_workload(source, lake, source_database, tmp_path, server_id) as run:
        kill(service)
        assert wait_for(lambda: run.ingest.said(" is unavailable (") >= 1, timeout=60), (
            run.ingest.log.read_text()
        )
        _written(run.workload, 300)
        run.ingest.assert_running()
        service.up()
        assert wait_for(
            lambda: run.ingest.said(" is back after ") == run.ingest.said(" is unavailable ("),
            timeout=120,
        ), run.ingest.log.read_text()
        _written(run.workload, 100)

    said = run.ingest.warnings()
    assert len(said) <= 4, "\n".join(said)
