"""Hot standbys end to end (issue 28): two ``tidemark run`` of one pipeline, each an ingest and
a scheduler, while a workload writes. The process holding the active ingest or the active
scheduler is killed with SIGKILL, ten times at random moments, and a new run started each
time; the standbys take over. In the end every change is in the changelog once, in order,
every mirror window was merged once, and the mirror equals the source."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from bench.workloads.stock import Workload, create_stock
from ingest.lease import lease_holders
from scheduler.state import StateStore
from tests.end_to_end import one_minute_windows
from tests.ingest.stock_workload import assert_every_change_once_in_order
from tidemark.app.cli import main
from tidemark.app.pipeline import Pipeline
from tidemark.contracts.instance import Instance, LeaseHolders
from tidemark.contracts.mirror import MirrorKey
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

KILLS = 10
#: a run starts a Spark session and worker processes: tens of seconds on a busy 2-core machine
DEADLINE_SECONDS = 240


class Runs:
    """``tidemark run`` processes of the test, each logging to a file of its own."""

    def __init__(self, pipeline: Path, folder: Path) -> None:
        self._pipeline = pipeline
        self._folder = folder
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        log = self._folder / f"run-{len(self.started)}.log"
        with log.open("wb") as stderr:
            run = subprocess.Popen(
                [sys.executable, "-m", "tidemark.app.cli", "run", str(self._pipeline)],
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        self.started.append(run)
        return run

    def stop_all(self) -> None:
        for run in self.started:
            if run.poll() is None:
                run.send_signal(signal.SIGTERM)
        for run in self.started:
            try:
                run.wait(timeout=120)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()


def _children(pid: int) -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children.update(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:
            pass  # the thread ended
    return children


def _run_of(holders: LeaseHolders, runs: list[subprocess.Popen[bytes]], *, child: bool) -> int:
    """The index of the run that holds ``holders``' lease: the run itself (the scheduler) or
    its ingest child; -1 if none of them does (yet)."""
    active = holders.active
    if not isinstance(active, Instance):
        return -1
    for index, run in enumerate(runs):
        if (active.pid in _children(run.pid)) if child else active.pid == run.pid:
            return index
    return -1


@pytest.mark.timeout(1500)
def test_killing_the_active_processes_of_two_runs_keeps_every_mirror_equal_to_its_source(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    reports_topic: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    create_stock(endpoints.mariadb, source_database)
    path = tmp_path / "stock.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=source_database,
            tables="stock",
            namespace=namespace,
            server_id=server_id,
            extra=one_minute_windows(endpoints, reports_topic),
        )
    )
    pipeline = Pipeline.open(path)
    source = endpoints.mariadb.cdc_source(server_id)
    runs = Runs(path, tmp_path)
    running = [runs.start(), runs.start()]
    workload = Workload(endpoints.mariadb.admin_source(), source_database, 20261129, (1, 5), 0.05)
    chance = random.Random(29)

    def standing(*, child: bool) -> tuple[int, int]:
        """(active run, standby run) for ingest (``child``) or the scheduler, once both are."""
        if child:
            holders = lease_holders(source, pipeline.ingest_lease)
        else:
            with closing(StateStore(pipeline.state_settings())) as store:
                holders = store.holders(pipeline.name)
        if len(holders.standbys) != 1:
            return (-1, -1)
        active = _run_of(holders, running, child=child)
        standby = _run_of(LeaseHolders(holders.standbys[0]), running, child=child)
        return (active, standby) if -1 not in (active, standby) and active != standby else (-1, -1)

    try:
        for kill in range(KILLS):
            child = kill % 2 == 0  # the run of the active ingest, then of the active scheduler
            roles = wait_until(
                "an active process and a standby for each role",
                lambda: standing(child=True)[0] >= 0 and standing(child=False)[0] >= 0,
                DEADLINE_SECONDS,
            )
            assert roles
            if kill == 0:
                workload.start()
            active, _ = standing(child=child)
            with pytest.raises(subprocess.TimeoutExpired):
                running[active].wait(timeout=chance.uniform(1.0, 15.0))
            running[active].send_signal(signal.SIGKILL)
            running[active].wait()
            running[active] = runs.start()
    finally:
        workload.stop()

    try:
        with endpoints.mariadb.admin_source().connect() as admin, admin.cursor() as cursor:
            cursor.execute("SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
            (last_change_ms,) = cursor.fetchone() or (0,)
        wait_until(
            "a mirror window past the last change",
            lambda: _mirror_window_ends(catalog, f"{namespace}.stock")[-1:] > [last_change_ms],
            DEADLINE_SECONDS,
            interval=1.0,
        )
    finally:
        runs.stop_all()

    assert_every_change_once_in_order(catalog.load_table(f"{namespace}.stock_changelog"), workload)
    ends = _mirror_window_ends(catalog, f"{namespace}.stock")
    assert ends == sorted(set(ends)), "a window was merged twice"
    assert main(["verify", str(path)]) == 0


def _mirror_window_ends(catalog: Catalog, identifier: str) -> list[int]:
    """The window end of each merge commit of the mirror, oldest first."""
    if not catalog.table_exists(identifier):
        return []
    return [
        int(snapshot.summary.additional_properties[MirrorKey.WINDOW_END])
        for snapshot in catalog.load_table(identifier).snapshots()
        if snapshot.summary is not None
        and MirrorKey.WINDOW_END in snapshot.summary.additional_properties
    ]
