"""``tidemark run`` supervises its ingest child (issue 45), on the real services, with one run.

Its ingest child is killed with SIGKILL while a workload writes: the run goes on, its scheduler
still active, starts ingest again, and the changelog holds every change once, in order. Then a
schema change the pipeline refuses (``schema.change.behavior: exception``) stops ingest with a
terminal error while a window job runs (one that sleeps ten minutes in Spark): the run ends at
once with an error, its scheduler's lease free, the window left ``running`` for the next
scheduler to run again, and none of its processes left behind."""

from __future__ import annotations

import os
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
from scheduler.gate import RunState, job_task
from scheduler.state import StateStore
from tests.end_to_end import one_minute_windows
from tests.ingest.stock_workload import assert_every_change_once_in_order
from tidemark.app.pipeline import Pipeline
from tidemark.contracts.instance import Instance
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline

#: a run starts a Spark session and worker processes: tens of seconds on a busy 2-core machine
DEADLINE_SECONDS = 240
#: from the terminal error to the run's end: a Python start for ingest, and its exit
PROMPT_SECONDS = 30

#: a window job that runs ten minutes (Spark's ``reflect`` calls ``Thread.sleep``)
SLOW_SQL = """\
CREATE TABLE IF NOT EXISTS tidemark.{namespace}.slow (slept STRING) USING iceberg;
INSERT OVERWRITE tidemark.{namespace}.slow
SELECT reflect('java.lang.Thread', 'sleep', CAST(600000 AS BIGINT));
"""


def _children(pid: int) -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children.update(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:
            pass  # the thread ended
    return children


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _changelog_rows(catalog: Catalog, identifier: str) -> int:
    if not catalog.table_exists(identifier):
        return 0
    return catalog.load_table(identifier).scan().to_arrow().num_rows


@pytest.mark.timeout(900)
def test_run_starts_its_killed_ingest_again_and_ends_at_once_on_a_terminal_error(
    endpoints: StackEndpoints,
    source_database: str,
    namespace: str,
    catalog: Catalog,
    reports_topic: str,
    tmp_path: Path,
    server_id: int,
) -> None:
    create_stock(endpoints.mariadb, source_database)
    (tmp_path / "slow.sql").write_text(SLOW_SQL.format(namespace=namespace))
    path = tmp_path / "stock.yaml"
    text = local_pipeline(
        endpoints.mariadb,
        endpoints.catalog,
        database=source_database,
        tables="stock",
        namespace=namespace,
        server_id=server_id,
        extra=one_minute_windows(endpoints, reports_topic)
        + f"  jobs:\n    slow:\n      inputs: [{namespace}.stock]\n      sql: slow.sql\n",
    )
    name = f"  name: {namespace}\n"
    path.write_text(text.replace(name, f"{name}  schema.change.behavior: exception\n"))
    pipeline = Pipeline.open(path)
    source = endpoints.mariadb.cdc_source(server_id)
    changelog = f"{namespace}.stock_changelog"
    log = tmp_path / "run.log"
    with log.open("wb") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "tidemark.app.cli", "run", str(path)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    store = StateStore(pipeline.state_settings())
    workload = Workload(endpoints.mariadb.admin_source(), source_database, 20261130, (1, 5), 0.05)

    def active_ingest() -> int | None:
        """The pid of the run's ingest child once it holds the lease."""
        assert run.poll() is None, log.read_text()
        active = lease_holders(source, pipeline.ingest_lease).active
        if isinstance(active, Instance) and active.pid in _children(run.pid):
            return active.pid
        return None

    def restarted() -> int | None:
        pid = active_ingest()
        return pid if pid != killed else None

    def scheduling() -> bool:
        active = store.holders(pipeline.name).active
        return isinstance(active, Instance) and active.pid == run.pid

    with closing(store):
        try:
            killed = wait_until("the run's ingest active", active_ingest, DEADLINE_SECONDS)
            assert killed is not None
            wait_until("the run's scheduler active", scheduling, DEADLINE_SECONDS)
            workload.start()
            wait_until("rows committed", lambda: _changelog_rows(catalog, changelog), 60)

            os.kill(killed, signal.SIGKILL)
            started = wait_until("ingest started again", restarted, DEADLINE_SECONDS)
            committed = _changelog_rows(catalog, changelog)
            wait_until(
                "rows committed by the new ingest",
                lambda: _changelog_rows(catalog, changelog) > committed,
                60,
            )
            workload.stop()
            changes = sum(len(changes) for changes in workload.truth.values())
            wait_until(
                "every change in the changelog",
                lambda: _changelog_rows(catalog, changelog) >= changes,
                60,
                interval=1.0,
            )
            assert_every_change_once_in_order(catalog.load_table(changelog), workload)
            assert scheduling(), "the scheduler stayed active"
            assert active_ingest() == started
            restarts = [line for line in log.read_text().splitlines() if "again in" in line]
            assert len(restarts) == 1, restarts
            assert "Ingest stopped (killed by SIGKILL): starting it again in 1 s" in restarts[0]

            task = job_task("slow")
            running = wait_until(
                "the slow job's first window running",
                lambda: [r for r in store.runs(pipeline.name, task) if r.state is RunState.RUNNING],
                DEADLINE_SECONDS,
                interval=1.0,
            )
            helpers = _children(run.pid)  # the ingest child, the Spark JVM, merge processes
            with endpoints.mariadb.admin_source().connect() as admin, admin.cursor() as cursor:
                cursor.execute(f"ALTER TABLE `{source_database}`.stock ADD COLUMN note INT")
                cursor.execute(f"INSERT INTO `{source_database}`.stock VALUES (0, 1, 1)")
            run.wait(timeout=PROMPT_SECONDS)
        finally:
            workload.stop()
            if run.poll() is None:
                run.send_signal(signal.SIGKILL)
                run.wait()

        output = log.read_text()
        assert run.returncode == 1, output
        assert "tidemark ingest: error:" in output and "schema.change.behavior" in output
        assert "tidemark run: error: ingest stopped on an error that would repeat" in output
        assert store.holders(pipeline.name).active is None, "the scheduler's lease is free"
        [abandoned] = [r for r in store.runs(pipeline.name, task) if r.state is RunState.RUNNING]
        assert (abandoned.window, abandoned.attempts) == (running[0].window, 1)
        wait_until(
            "the run's processes ended with it",
            lambda: not [pid for pid in helpers if _alive(pid)],
            PROMPT_SECONDS,
        )
