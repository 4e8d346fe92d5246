"""A hot standby (issue 28): two ``tidemark ingest`` processes on one pipeline, one active and
one waiting; the active one killed with SIGKILL at random moments while a workload writes, the
standby taking over each time and a new standby started. Every change ends in the changelog
once, in order, and only the active process ever commits."""

from __future__ import annotations

import random
import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from bench.polling import wait_until
from bench.workloads.stock import Workload, active_ingest, create_stock, ingest
from ingest.lease import lease_holders
from tests.ingest.pipelines import write_pipeline
from tests.ingest.stock_workload import (
    assert_every_change_once_in_order,
    has_snapshot,
    ingest_to_end,
)
from tidemark.app.output.console import plain_text
from tidemark.app.output.status import status_view
from tidemark.app.pipeline import Pipeline
from tidemark.contracts.instance import WRITER_KEY, Instance, LeaseHolders
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import SourceEndpoint, StackEndpoints

KILLS = 10
#: starting a process and onboarding the table takes a few seconds on a busy machine
DEADLINE_SECONDS = 120

pytestmark = pytest.mark.every_source


@pytest.fixture
def stock_pipeline(
    source: SourceEndpoint,
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    tmp_path: Path,
    server_id: int,
) -> Path:
    create_stock(source, source_database)
    return write_pipeline(
        tmp_path / "stock.yaml",
        source,
        endpoints.catalog,
        database=source_database,
        tables="stock",
        namespace=namespace,
        server_id=server_id,
    )


def _active(source: SourceConnection, lease: str, among: list[subprocess.Popen[str]]) -> int:
    """The index in ``among`` of the process holding the lease, once one of them does."""

    def holder() -> list[int]:
        active = active_ingest(source, lease, among)
        return [] if active is None else [among.index(active)]

    return wait_until("one ingest is active", holder, DEADLINE_SECONDS)[0]


def _still_running(process: subprocess.Popen[str], seconds: float) -> None:
    """Fails, with what the process printed, if ``process`` ends within ``seconds``."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return
    output = process.stdout.read() if process.stdout else ""
    pytest.fail(f"the active ingest exited by itself ({process.returncode}):\n{output}")


def _status_shows_one_active_and_one_standby(
    pipeline: Path, processes: list[subprocess.Popen[str]]
) -> None:
    def both() -> LeaseHolders | None:
        holders = Pipeline.open(pipeline).status(datetime.now(UTC)).ingest
        assert holders is not None
        return holders if isinstance(holders.active, Instance) and holders.standbys else None

    holders = wait_until("status shows the active ingest and its standby", both, 30)
    assert holders is not None and isinstance(holders.active, Instance)
    assert {holders.active.pid, *(s.pid for s in holders.standbys)} == {p.pid for p in processes}
    status = Pipeline.open(pipeline).status(datetime.now(UTC))
    lines = plain_text(status_view(status, datetime.now(UTC))).splitlines()
    assert any(line.split()[:2] == ["ingest", "active"] for line in lines), lines
    assert any(line.split()[:2] == ["ingest", "standby"] for line in lines), lines


def _writers(table: Table) -> list[str]:
    """The writer of each Tidemark commit, oldest first."""
    return [
        snapshot.summary.additional_properties[WRITER_KEY]
        for snapshot in table.snapshots()
        if snapshot.summary is not None and WRITER_KEY in snapshot.summary.additional_properties
    ]


@pytest.mark.timeout(900)
def test_killing_the_active_ingest_hands_over_to_the_standby_exactly_once(
    stock_pipeline: Path,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    server_id: int,
) -> None:
    cdc_source = source.cdc_source(server_id)
    lease = Pipeline.open(stock_pipeline).ingest_lease
    changelog = f"{namespace}.stock_changelog"
    # started at the same moment: one becomes active, the other waits
    processes = [ingest(stock_pipeline), ingest(stock_pipeline)]
    workload = Workload(source.admin_source(), source_database, 20261127, (1, 20), 0.0)
    chance = random.Random(28)
    try:
        wait_until("the first commit", lambda: has_snapshot(catalog, changelog), DEADLINE_SECONDS)
        _status_shows_one_active_and_one_standby(stock_pipeline, processes)
        workload.start()
        for _ in range(KILLS):
            active = _active(cdc_source, lease, processes)
            _still_running(processes[active], seconds=chance.uniform(0.5, 4.0))
            processes[active].send_signal(signal.SIGKILL)
            processes[active].wait()
            processes[active] = ingest(stock_pipeline)  # the next standby
    finally:
        workload.stop()
        for process in processes:
            process.kill()
            process.wait()
    ingest_to_end(stock_pipeline, cdc_source)

    table = catalog.load_table(changelog)
    assert_every_change_once_in_order(table, workload)
    writers = _writers(table)
    # each process committed in one stretch: never two of them in turns
    stretches = [w for i, w in enumerate(writers) if i == 0 or writers[i - 1] != w]
    assert len(stretches) == len(set(stretches))
    assert len(stretches) > KILLS / 2  # standbys took over (not only the final run)


@pytest.mark.timeout(600)
def test_an_ingest_that_loses_the_lease_stops_waits_and_resumes_exactly_once(
    stock_pipeline: Path,
    source: SourceEndpoint,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    server_id: int,
) -> None:
    cdc_source = source.cdc_source(server_id)
    lease = Pipeline.open(stock_pipeline).ingest_lease
    changelog = f"{namespace}.stock_changelog"
    process = ingest(stock_pipeline)
    workload = Workload(source.admin_source(), source_database, 20261128, (1, 20), 0.0)
    try:
        wait_until("the first commit", lambda: has_snapshot(catalog, changelog), DEADLINE_SECONDS)
        workload.start()
        first_term = wait_until(
            "it is active", lambda: _active_since(cdc_source, lease, process.pid), DEADLINE_SECONDS
        )
        assert first_term is not None
        # as a network cut or a source failover does to the lease's connection
        with source.admin_source().connect() as admin, admin.cursor() as cursor:
            cursor.execute("SELECT IS_USED_LOCK(%s)", (lease,))
            (holder,) = cursor.fetchone() or (None,)
            assert holder is not None
            cursor.execute(f"KILL CONNECTION {int(holder)}")

        def next_term() -> bool:
            since = _active_since(cdc_source, lease, process.pid)
            return since is not None and since > first_term

        wait_until("the same process active again", next_term, DEADLINE_SECONDS)
        snapshots = len(catalog.load_table(changelog).history())
        wait_until(
            "it commits again",
            lambda: len(catalog.load_table(changelog).history()) > snapshots,
            DEADLINE_SECONDS,
        )
    finally:
        workload.stop()
        process.kill()
        output, _ = process.communicate()
    assert "Lost pipeline" in output, output[-3000:]
    ingest_to_end(stock_pipeline, cdc_source)
    assert_every_change_once_in_order(catalog.load_table(changelog), workload)


def _active_since(source: SourceConnection, lease: str, pid: int) -> datetime | None:
    """When ``pid`` last became active, while it holds the lease."""
    active = lease_holders(source, lease).active
    return active.since if isinstance(active, Instance) and active.pid == pid else None
