"""Takeover benchmark: from SIGKILL of the active ``tidemark ingest`` to its standby's first
commit, over ``--trials`` kills (issue 28's target: p95 < 15 s).

Against the local stack: a one-table pipeline while a workload writes (a few small
transactions a second), two ingest processes, one active and one waiting. Each trial kills
the active one, times until a commit of the standby lands in the changelog table (its
``tidemark.writer``), then starts a new standby and waits until it waits. Figures, not
assertions.

    python -m bench.takeover_bench --trials 10
"""

from __future__ import annotations

import argparse
import functools
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from pyiceberg.catalog import Catalog

from bench.report import Figure, Target, write_figures
from ingest.lease import lease_holders
from tests.ingest.stock_workload import Workload, create_stock, ingest
from tidemark.catalog import load_catalog, purge_namespace
from tidemark.contracts.instance import WRITER_KEY, Instance
from tidemark.pipeline import Pipeline
from tidemark.source import SourceConnection
from tidemark.stack.endpoints import StackEndpoints
from tidemark.stack.pipeline_file import local_pipeline
from tidemark.stack.settings import StackSettings
from tidemark.stack.stack import Stack

SERVER_ID = 4970
T = TypeVar("T")
POLL_SECONDS = 0.05


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--figures", type=Path, help="also write the figures here (JSON)")
    args = parser.parse_args()
    seconds = measure(args.trials)
    sys.stdout.write(table(seconds))
    if args.figures:
        write_figures(args.figures, figures(seconds))
    return 0


def measure(trials: int) -> list[float]:
    endpoints = Stack(StackSettings.from_env()).endpoints()
    name = f"bench_takeover_{uuid.uuid4().hex[:6]}"
    admin = endpoints.mariadb.admin_source()
    catalog = load_catalog(endpoints.catalog.name, endpoints.catalog.properties())
    with admin.connect() as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {name}")
    catalog.create_namespace(name)
    create_stock(endpoints, name)
    workload = Workload(admin, name, 28, (1, 5), 0.1)
    writer = threading.Thread(target=workload.run)
    processes: list[subprocess.Popen[str]] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = _pipeline(Path(folder), endpoints, name)
            lease = Pipeline.open(path).ingest_lease
            source = endpoints.mariadb.cdc_source(SERVER_ID)
            changelog = f"{name}.stock_changelog"
            processes = [ingest(path), ingest(path)]
            _until(lambda: catalog.table_exists(changelog), "the changelog table")
            writer.start()
            seconds = []
            for _ in range(trials):
                _until(lambda: _standbys(source, lease) == 1, "one standby waiting")
                active = _until(lambda: _active(source, lease, processes), "an active ingest")
                assert active is not None
                standby = next(p for p in processes if p is not active)
                active.send_signal(signal.SIGKILL)
                killed = time.monotonic()
                active.wait()
                committed = functools.partial(_committed_by, catalog, changelog, standby.pid)
                _until(committed, "a commit by the standby")
                seconds.append(time.monotonic() - killed)
                processes[processes.index(active)] = ingest(path)
            return seconds
    finally:
        workload.stop()
        if writer.is_alive():
            writer.join()
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
            endpoints, database=name, tables="stock", namespace=name, server_id=SERVER_ID
        )
    )
    return path


def _until(check: Callable[[], T], what: str, seconds: float = 300) -> T:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(POLL_SECONDS)  # between two polls of the condition
    raise TimeoutError(f"no {what} within {seconds} s")


def _standbys(source: SourceConnection, lease: str) -> int:
    return len(lease_holders(source, lease).standbys)


def _active(
    source: SourceConnection, lease: str, processes: list[subprocess.Popen[str]]
) -> subprocess.Popen[str] | None:
    active = lease_holders(source, lease).active
    if not isinstance(active, Instance):
        return None
    return next((p for p in processes if p.pid == active.pid), None)


def _committed_by(catalog: Catalog, changelog: str, pid: int) -> bool:
    table = catalog.load_table(changelog)
    snapshot = table.current_snapshot()
    summary = snapshot.summary if snapshot else None
    writer = summary.additional_properties.get(WRITER_KEY, "") if summary else ""
    return bool(writer.endswith(f" pid {pid}"))


def _p(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def figures(seconds: list[float]) -> list[Figure]:
    return [
        Figure("takeover", "ingest: trials", len(seconds), ""),
        Figure("takeover", "ingest: kill -9 → standby's first commit, p50", _p(seconds, 50), "s"),
        Figure(
            "takeover",
            "ingest: kill -9 → standby's first commit, p95",
            _p(seconds, 95),
            "s",
            Target("<", 15, 28),
        ),
    ]


def table(seconds: list[float]) -> str:
    lines = [
        "kill -9 of the active ingest → the standby's first commit, seconds",
        "",
        "| trial | seconds |",
        "|---|---|",
        *(f"| {i} | {s:.2f} |" for i, s in enumerate(seconds, 1)),
        f"| median | {statistics.median(seconds):.2f} |",
        f"| p95 | {_p(seconds, 95):.2f} |",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
