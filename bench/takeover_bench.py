"""Takeover benchmark: from SIGKILL of the active process to its standby's first work, over
``--trials`` kills each (issue 28's target: p95 < 15 s).

Against the local stack. **Ingest**: a one-table pipeline while a workload writes (a few small
transactions a second), two ``tidemark ingest`` processes, one active and one waiting. Each
trial kills the active one and times until a commit of the standby lands in the changelog table
(its ``tidemark.writer``). **Scheduler**: two scheduler processes of one pipeline
(``bench.workloads.standby_scheduler``: windows of 0.3 s of work, recording who ran them) with
a day of windows due. Each trial kills the active one once it runs windows and times until the
standby has finished a window; ``--scheduler-members per-process`` gives each process its own
Kafka group member, as without static membership, for comparison. After each trial a new
standby is started, and the next trial waits until it waits. Figures, not assertions.

    python -m bench.takeover_bench --trials 10
"""

from __future__ import annotations

import argparse
import functools
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg2
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog import Catalog

from bench.polling import wait_until
from bench.report import Figure, Target, write_figures
from bench.workloads.recording_executor import dumps_state
from bench.workloads.shop_schedule import ORDERS, USERS, at, publish, report
from bench.workloads.standby_scheduler import TimedExecutor
from bench.workloads.stock import Workload, active_ingest, create_stock, ingest
from ingest.lease import lease_holders
from scheduler.state import StateSettings, StateStore
from tidemark.app.pipeline import Pipeline
from tidemark.catalog import load_catalog, purge_namespace
from tidemark.contracts.instance import WRITER_KEY, Instance
from tidemark.contracts.reports import CommitReport
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

SERVER_ID = 4970
T = TypeVar("T")
POLL_SECONDS = 0.05
WAIT_SECONDS = 300


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--scheduler-members", choices=["static", "per-process"], default="static")
    parser.add_argument("--only", choices=["ingest", "scheduler"])
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    results: list[Figure] = []
    if args.only in (None, "ingest"):
        seconds = measure(args.trials)
        sys.stdout.write(table("ingest: kill -9 → the standby's first commit", seconds))
        results += figures("ingest", "standby's first commit", seconds)
    if args.only in (None, "scheduler"):
        per_process = args.scheduler_members == "per-process"
        windows, reports = measure_scheduler(args.trials, per_process)
        what = f"scheduler ({args.scheduler_members} members)"
        sys.stdout.write(table(f"{what}: kill -9 → the standby's first window done", windows))
        sys.stdout.write(table(f"{what}: kill -9 → a new report recorded", reports))
        results += figures(what, "standby's first window done", windows)
        results += figures(what, "a new report recorded", reports)
    if args.figures:
        write_figures(args.figures, results)
    return 0


def measure(trials: int) -> list[float]:
    endpoints = Stack(StackSettings.from_env()).endpoints()
    name = f"bench_takeover_{uuid.uuid4().hex[:6]}"
    admin = endpoints.mariadb.admin_source()
    catalog = load_catalog(endpoints.catalog.name, endpoints.catalog.properties())
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    catalog.create_namespace(name)
    create_stock(endpoints.mariadb, name)
    workload = Workload(admin, name, 28, (1, 5), 0.1)
    processes: list[subprocess.Popen[str]] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = _pipeline(Path(folder), endpoints, name)
            lease = Pipeline.open(path).ingest_lease
            source = endpoints.mariadb.cdc_source(SERVER_ID)
            changelog = f"{name}.stock_changelog"
            processes = [ingest(path), ingest(path)]
            _wait("the changelog table", lambda: catalog.table_exists(changelog))
            workload.start()
            seconds = []
            for _ in range(trials):
                _wait("one standby waiting", lambda: _standbys(source, lease) == 1)
                active = _wait("an active ingest", lambda: active_ingest(source, lease, processes))
                assert active is not None
                standby = next(p for p in processes if p is not active)
                active.send_signal(signal.SIGKILL)
                killed = time.monotonic()
                active.wait()
                committed = functools.partial(_committed_by, catalog, changelog, standby.pid)
                _wait("a commit by the standby", committed)
                seconds.append(time.monotonic() - killed)
                processes[processes.index(active)] = ingest(path)
            return seconds
    finally:
        workload.stop()
        for process in processes:
            process.kill()
            process.wait()
        purge_namespace(catalog, name, drop=True)
        with admin.connect() as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE {name}")


def _pipeline(folder: Path, endpoints: StackEndpoints, name: str) -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(
        local_pipeline(
            endpoints.mariadb,
            endpoints.catalog,
            database=name,
            tables="stock",
            namespace=name,
            server_id=SERVER_ID,
        )
    )
    return path


def _wait(what: str, check: Callable[[], T]) -> T:
    return wait_until(what, check, WAIT_SECONDS, interval=POLL_SECONDS)


def _standbys(source: SourceConnection, lease: str) -> int:
    return len(lease_holders(source, lease).standbys)


def _committed_by(catalog: Catalog, changelog: str, pid: int) -> bool:
    table = catalog.load_table(changelog)
    snapshot = table.current_snapshot()
    summary = snapshot.summary if snapshot else None
    writer = summary.additional_properties.get(WRITER_KEY, "") if summary else ""
    return bool(writer.endswith(f" pid {pid}"))


def _p(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def figures(what: str, until: str, seconds: list[float]) -> list[Figure]:
    return [
        Figure("takeover", f"{what}: trials", len(seconds), ""),
        Figure("takeover", f"{what}: kill -9 → {until}, p50", _p(seconds, 50), "s"),
        Figure(
            "takeover",
            f"{what}: kill -9 → {until}, p95",
            _p(seconds, 95),
            "s",
            Target("<", 15, 28),
        ),
    ]


def table(title: str, seconds: list[float]) -> str:
    lines = [
        f"{title}, seconds",
        "",
        "| trial | seconds |",
        "|---|---|",
        *(f"| {i} | {s:.2f} |" for i, s in enumerate(seconds, 1)),
        f"| median | {statistics.median(seconds):.2f} |",
        f"| p95 | {_p(seconds, 95):.2f} |",
    ]
    return "\n".join(lines) + "\n"


def measure_scheduler(trials: int, member_per_process: bool) -> tuple[list[float], list[float]]:
    """Per trial, seconds from the kill to the standby's first window done, and to its
    recording a report published after the kill (which needs the Kafka partitions)."""
    endpoints = Stack(StackSettings.from_env()).endpoints()
    name = f"bench_takeover_{uuid.uuid4().hex[:6]}"
    state = StateSettings.from_catalog(endpoints.catalog.properties(), schema=name)
    store = StateStore(state)
    store.create()
    servers = endpoints.kafka.bootstrap_servers
    kafka = AdminClient({"bootstrap.servers": servers})
    kafka.create_topics([NewTopic(name, num_partitions=3)])[name].result(timeout=30)
    publish(servers, name, _a_day_of_reports())
    TimedExecutor(state)  # its tables, before two processes race to create them
    args: dict[str, object] = {
        "state": dumps_state(state),
        "servers": servers,
        "topic": name,
        "pipeline": name,
        "member_per_process": member_per_process,
    }
    processes = [_scheduler(args), _scheduler(args)]
    windows: list[float] = []
    reports: list[float] = []
    try:
        for _ in range(trials):
            _wait("one standby waiting", lambda: len(store.holders(name).standbys) == 1)
            active = _wait("an active one", lambda: _active_scheduler(store, name, processes))
            assert active is not None
            _wait("a window done", functools.partial(_windows_done_by, state, active.pid))
            standby = next(p for p in processes if p is not active)
            active.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            active.wait()
            snapshot = 100_000 + len(windows)  # a report published after the kill
            publish(servers, name, [report(ORDERS, snapshot, "23:59:50", 10**9)])
            recorded = functools.partial(_report_recorded, state, snapshot)
            _wait("a window done", functools.partial(_windows_done_by, state, standby.pid))
            windows.append(time.monotonic() - killed)
            _wait("the new report recorded", recorded)
            reports.append(time.monotonic() - killed)
            processes[processes.index(active)] = _scheduler(args)
        return windows, reports
    finally:
        for process in processes:
            process.kill()
            process.wait()
        store.drop()
        store.close()
        kafka.delete_topics([name])[name].result(timeout=30)


def _a_day_of_reports() -> list[CommitReport]:
    """Both tables complete to 30 s past each window end of the day."""
    reports: list[CommitReport] = []
    for n in range(1, 24 * 12):
        clock = (at("00:00") + timedelta(minutes=5 * (n - 1), seconds=30)).strftime("%H:%M:%S")
        reports += [report(ORDERS, n, clock, 10 * n), report(USERS, n, clock, 5 * n)]
    return reports


def _scheduler(args: dict[str, object]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.workloads.standby_scheduler", json.dumps(args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _active_scheduler(
    store: StateStore, pipeline: str, processes: list[subprocess.Popen[bytes]]
) -> subprocess.Popen[bytes] | None:
    active = store.holders(pipeline).active
    if not isinstance(active, Instance):
        return None
    return next((p for p in processes if p.pid == active.pid), None)


def _report_recorded(state: StateSettings, snapshot: int) -> bool:
    return _count(state, f"{state.schema}.reports WHERE snapshot_id = %s", snapshot) > 0


def _windows_done_by(state: StateSettings, pid: int) -> bool:
    return _count(state, f"{state.schema}.timed_calls WHERE pid = %s AND finished", pid) > 0


def _count(state: StateSettings, rows: str, value: int) -> int:
    """``SELECT count(*) FROM <rows>`` with ``value`` for its one parameter."""
    params: dict[str, Any] = dict(state.connection)
    connection = psycopg2.connect(**params)
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {rows}", (value,))
            (count,) = cursor.fetchone() or (0,)
    finally:
        connection.close()
    return int(count)


if __name__ == "__main__":
    sys.exit(main())
